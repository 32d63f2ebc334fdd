import { setTimeout as sleep } from 'node:timers/promises';

/** Thrown by a probe when waiting longer cannot help (the process it waits on has died): ends the wait at once. */
export class GiveUp extends Error {}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
}

/**
 * Polls `probe` until it returns a value other than undefined, null or false, and returns that value.
 * Errors thrown by the probe count as "not yet" (the last one is reported if time runs out), except GiveUp.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 30_000, intervalMs = 200 }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (error) {
      if (error instanceof GiveUp) throw error;
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const detail = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs / 1000}s waiting for ${what}${detail}`);
    }
    await sleep(intervalMs);
  }
}
