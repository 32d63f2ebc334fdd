// Webhook messages: one JSON POST per new alert and per resolution, Slack-compatible (a `text` field) with the
// structured fields beside it. The URL is a secret: it never appears in an error, a log or the status.
import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { nameRefusal, refusal, refusedByPolicy, type DestinationPolicy } from './destination.ts';
import type { PodAlertStatus } from './schema.ts';

/** The destination was refused before any connection was made; `detail`, for the log only, says why. */
export class DestinationRefused extends Error {
  constructor(message: string, readonly detail?: string) {
    super(message);
  }
}

export type Notification = NonNullable<PodAlertStatus['pendingNotifications']>[number];

/** Messages waiting at most; beyond, the oldest are dropped and counted. */
export const outboxLimit = 100;

/** What dropping `dropped` messages is called, in Events and conditions. */
export function droppedText(dropped: number): string {
  return `${dropped} webhook message${dropped === 1 ? '' : 's'} dropped: ${outboxLimit} were already waiting`;
}

/** `incoming` queued behind `waiting`, the oldest dropped past the limit (and how many were). */
export function queueNotifications(waiting: Notification[], incoming: Notification[]):
{ outbox: Notification[]; dropped: number } {
  const all = [...waiting, ...incoming];
  const dropped = Math.max(0, all.length - outboxLimit);
  return { outbox: all.slice(dropped), dropped };
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void;

/** A lookup that refuses a name resolving to any refused address, and hands the connection the address it checked. */
function checkedLookup(policy: DestinationPolicy) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.map((a) => refusal(policy, hostname, a.address)).find(Boolean);
      if (refused) return callback(new DestinationRefused(refusedByPolicy, `${hostname} resolves to ${refused}`), []);
      if (options.all) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

export interface PostOptions {
  /** What is posted to, in errors: "the webhook", "Alertmanager". */
  what?: string;
  /** Authorization and the like; never logged. */
  headers?: Record<string, string>;
  /** PEM certificates to trust instead of the system's, for https. */
  ca?: string;
  timeoutMs?: number;
}

/** Posts `body` if `policy` lets the URL's destination through; rejects with a reason that never includes the URL. */
export async function post(url: string, body: object, policy: DestinationPolicy,
  { what = 'the webhook', headers = {}, ca, timeoutMs = 10_000 }: PostOptions = {}): Promise<void> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new DestinationRefused(`${what}'s URL is not a valid URL`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') {
    throw new DestinationRefused(`${what}'s URL must be http or https, not ${target.protocol.replace(/:$/, '')}`);
  }
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const refused = isIP(host) ? refusal(policy, host, host) : nameRefusal(policy, host);
  if (refused) throw new DestinationRefused(refusedByPolicy, `${host}: ${refused}`);
  const text = JSON.stringify(body);
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    send(target, { method: 'POST', lookup: checkedLookup(policy), signal: AbortSignal.timeout(timeoutMs),
      ...(ca && target.protocol === 'https:' ? { ca } : {}),
      headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } }, resolve)
      // Whether a port refused, reset or never answered is left unsaid: the message must not make a port scanner.
      .on('error', (error: Error & { code?: string }) => reject(error instanceof DestinationRefused ? error
        : new Error(['ENOTFOUND', 'EAI_AGAIN'].includes(error.code ?? '') ? `${what}'s host name did not resolve`
          : `${what} could not be reached (no connection, or no answer in time)`)))
      .end(text);
  });
  response.resume();
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) throw new Error(`${what} answered HTTP ${status}`);
}

/** A repeatInterval (4h, 30m, 1h30m) in milliseconds. */
export function durationMs(text: string): number {
  const [, hours = '0', minutes = '0'] = /^(?:(\d+)h)?(?:(\d+)m)?$/.exec(text) ?? [];
  return (Number(hours) * 60 + Number(minutes)) * 60_000;
}

/** After `attempts` failures: 2 s, doubling, at most 5 minutes. */
export function retryDelayMs(attempts: number): number {
  return Math.min(2_000 * 2 ** Math.max(attempts - 1, 0), 5 * 60_000);
}
