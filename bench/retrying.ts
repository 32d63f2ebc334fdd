import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '../controller/runtime/rest.ts';

/** Retries what the apiserver refuses for now (429, 5xx: a watch cache still initializing, say), up to a minute. */
export async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      const transient = error instanceof ApiError && (error.status === 429 || error.status >= 500);
      if (!transient || attempt >= 60) throw error;
      await sleep(1000);
    }
  }
}
