// Webhook messages: one JSON POST per new alert and per resolution, Slack-compatible (a `text` field) with the
// structured fields beside it. The URL is a secret: it never appears in an error, a log or the status.
import type { PodAlertStatus } from './schema.ts';

export type Notification = NonNullable<PodAlertStatus['pendingNotifications']>[number];

export function payload(notification: Notification, podAlert: { namespace: string; name: string }): object {
  const { attempts: _attempts, notBefore: _notBefore, ...fields } = notification;
  return { ...fields, podAlert, namespace: podAlert.namespace };
}

/** Posts `body`; rejects with a reason that never includes the URL. */
export async function post(url: string, body: object, timeoutMs = 10_000): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    throw new Error(`the webhook could not be reached (${cause?.code ?? (error as Error).name})`);
  }
  await response.arrayBuffer();
  if (!response.ok) throw new Error(`the webhook answered HTTP ${response.status}`);
}

/** After `attempts` failures: 2 s, doubling, at most 5 minutes. */
export function retryDelayMs(attempts: number): number {
  return Math.min(2_000 * 2 ** Math.max(attempts - 1, 0), 5 * 60_000);
}
