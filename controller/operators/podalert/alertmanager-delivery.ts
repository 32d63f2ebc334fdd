// Posting a PodAlert's alerts to Alertmanager: the firing ones whenever they change and again every resendIntervalMs,
// with the resolutions status keeps until they are posted. What was last posted is remembered in memory only: after
// a restart everything is posted again at once, which Alertmanager takes as the same alerts.
import type { OperatorContext } from '../../runtime/manager.ts';
import { types, type KubeObject } from '../../runtime/resources.ts';
import { maxPendingResolutions, resendIntervalMs, type PostableAlert } from './alertmanager.ts';
import type { DeliveryCondition } from './delivery.ts';
import type { DestinationPolicy } from './destination.ts';
import type { PodAlertSpec } from './schema.ts';
import { DestinationRefused, post, retryDelayMs } from './webhook.ts';

type Settings = NonNullable<PodAlertSpec['alertmanager']>;
const type = 'AlertmanagerDelivered';

/** An alert's identity to Alertmanager: its label set, whatever order the keys came in. */
export const labelKey = (labels: Record<string, string>) => JSON.stringify(Object.entries(labels).sort(([a], [b]) =>
  a.localeCompare(b)));

export interface Posted {
  /** The resolutions done with: posted, or stale (their alert fires again). */
  delivered: PostableAlert[];
  condition: DeliveryCondition;
  /** When to post next. */
  nextMs: number;
}

/** Credentials and CA a failure to read is told as: [reason, message]. */
class NotReadable extends Error {
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** A replica of an Alertmanager cluster that missed posts while others took them. */
interface Lagging {
  failures: number;
  at: number;
  message: string;
  /** The resolutions it missed, posted to it with the next post: until then it holds those alerts firing. */
  missed: PostableAlert[];
}

/** After `failures` failed posts in a row: retryDelayMs's backoff, but never past a resend, so a firing alert's lease
 * (five resends) never runs out in an outage of a few minutes. */
const backoffMs = (failures: number) => Math.min(retryDelayMs(failures), resendIntervalMs);

/**
 * How long a replica may take to answer: a lagging one gets 2 s, as one that swallows packets would hold a worker for
 * the whole of every post's timeout; every fourth try, the full 10 s, so one that is only slow catches up.
 */
const timeoutMs = (lagging: Lagging | undefined) => (lagging && lagging.failures % 4 !== 0 ? 2_000 : 10_000);

/** In how long the first lagging replica's backoff is over; Infinity with none. */
const nextDue = (lagging: Map<string, Lagging>, now: Date) =>
  Math.min(...[...lagging.values()].map((l) => l.at + backoffMs(l.failures) - now.getTime()));

export class AlertmanagerSender {
  /** By PodAlert uid: when its alerts were last posted, what they were, failures since, and lagging replicas. */
  private readonly last = new Map<string, { at: number; firing: string; failures: number; lagging: Map<string, Lagging> }>();

  constructor(private readonly ctx: OperatorContext, private readonly policy: DestinationPolicy) {}

  /** Posts what is due; undefined when nothing is (then `wait` says for how long). */
  async send(uid: string, namespace: string | undefined, settings: Settings, firing: PostableAlert[], resolutions: PostableAlert[],
    now: Date): Promise<Posted | { wait: number }> {
    const digest = JSON.stringify([settings, firing.map((a) => [a.labels, a.annotations])]);
    const last = this.last.get(uid);
    const since = last ? now.getTime() - last.at : Infinity;
    // After a failure nothing is posted before its backoff, whatever changed: each attempt writes status, and each
    // write reconciles again at once.
    if (last?.failures && since < backoffMs(last.failures)) return { wait: backoffMs(last.failures) - since };
    const urls = settings.urls ?? [settings.url!];
    const lagging = new Map([...last?.lagging ?? []].filter(([url]) => urls.includes(url)));
    // A replica in its backoff is left out while another is posted to: a dead one would hold a worker for the whole
    // timeout of every post.
    const due = urls.filter((url) => !lagging.has(url) || now.getTime() - lagging.get(url)!.at >=
      backoffMs(lagging.get(url)!.failures));
    // With nothing firing and nothing resolved, the first post (of none) proves the way there; later ones tell nothing.
    const unchanged = !resolutions.length && last?.firing === digest && (since < resendIntervalMs || !firing.length);
    // Nothing new: only a lagging replica whose backoff is over is posted to, what it missed.
    const laggingDue = due.filter((url) => lagging.has(url));
    if (unchanged && !laggingDue.length) {
      return { wait: Math.max(Math.min(firing.length ? resendIntervalMs - since : Infinity, nextDue(lagging, now)), 1_000) };
    }
    const targets = unchanged ? laggingDue : due.length ? due : urls;
    // A resolution of an alert firing again is stale: posted, it would end the alert Alertmanager should keep.
    const firingNow = new Set(firing.map((a) => labelKey(a.labels)));
    const fresh = (r: PostableAlert) => !firingNow.has(labelKey(r.labels));
    const stale = resolutions.filter((r) => !fresh(r));
    const current = resolutions.filter(fresh);
    try {
      const { headers, ca } = await this.access(namespace, settings);
      const results = await Promise.allSettled(targets.map((url) => post(`${url.replace(/\/+$/, '')}/api/v2/alerts`,
        [...(lagging.get(url)?.missed ?? []).filter(fresh), ...current, ...firing], this.policy,
        { what: 'Alertmanager', headers, ...(ca ? { ca } : {}), timeoutMs: timeoutMs(lagging.get(url)) })));
      const missing = (l: Lagging | undefined) => [...l?.missed ?? [], ...current].filter(fresh).slice(-maxPendingResolutions);
      // One left out in its backoff misses these too.
      for (const [url, l] of lagging) if (!targets.includes(url)) lagging.set(url, { ...l, missed: missing(l) });
      results.forEach((result, i) => {
        const url = targets[i]!;
        if (result.status === 'fulfilled') return lagging.delete(url);
        this.logRefusal(namespace, result.reason);
        const before = lagging.get(url);
        lagging.set(url, { failures: (before?.failures ?? 0) + 1, at: now.getTime(), message: (result.reason as Error).message,
          missed: missing(before) });
      });
      // A post counts once one replica has it, as Prometheus counts it; one that missed it is posted to again after
      // its backoff, with the resolutions it missed.
      if (lagging.size === urls.length) throw results.find((r) => r.status === 'rejected')!.reason;
    } catch (error) {
      const failures = (last?.failures ?? 0) + 1;
      this.last.set(uid, { at: now.getTime(), firing: '', failures, lagging: new Map() });
      const reason = error instanceof NotReadable ? error.reason
        : error instanceof DestinationRefused ? 'DestinationRefused' : 'DeliveryFailed';
      return { delivered: stale, nextMs: backoffMs(failures), condition: { type, status: 'False', reason,
        message: `${(error as Error).message}; retrying with backoff (2 s doubling to a minute)` } };
    }
    // A post to lagging replicas alone leaves the others' resend where it was.
    this.last.set(uid, { at: unchanged ? last!.at : now.getTime(), firing: digest, failures: 0, lagging });
    if (this.last.size > 10_000) this.last.delete(this.last.keys().next().value!);
    const condition: DeliveryCondition = lagging.size
      ? { type, status: 'True', reason: 'PartlyDelivered', message: `${[...lagging].map(([url, l]) => `${url}: ${l.message}`)
        .join('; ')}; retrying it with backoff; the other replicas have every alert (${firing.length} firing now)` }
      : { type, status: 'True', reason: 'Delivered', message: `Alertmanager has every alert (${firing.length} firing now)` };
    return { delivered: resolutions, nextMs: Math.min(resendIntervalMs, Math.max(nextDue(lagging, now), 1_000)), condition };
  }

  /** Forgets what was posted for a PodAlert that no longer posts to Alertmanager: a new spec starts afresh. */
  forget(uid: string): void {
    this.last.delete(uid);
  }

  private logRefusal(namespace: string | undefined, error: unknown): void {
    if (error instanceof DestinationRefused && error.detail) {
      this.ctx.log.info({ namespace, detail: error.detail }, 'Alertmanager destination refused');
    }
  }

  /** The Authorization header and CA the spec names, read afresh each time (a rotated token is used at once). */
  private async access(namespace: string | undefined, settings: Settings): Promise<{ headers: Record<string, string>; ca?: string }> {
    const headers: Record<string, string> = {};
    const secretName = settings.credentialsSecretRef?.name;
    if (secretName) {
      const secret = await this.ctx.client.get<KubeObject & { data?: Record<string, string> }>(types.secrets,
        settings.credentialsSecretRef!.namespace ?? namespace, secretName);
      if (!secret) throw new NotReadable('SecretNotFound', `Secret ${secretName} not found`);
      const value = (key: string) => secret.data?.[key] && Buffer.from(secret.data[key], 'base64').toString('utf8').trim();
      const [token, username, password] = [value('token'), value('username'), value('password')];
      if (token) headers.Authorization = `Bearer ${token}`;
      else if (username && password) headers.Authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
      else throw new NotReadable('SecretKeyNotFound', `Secret ${secretName} has neither token nor username and password`);
    }
    const caRef = settings.ca?.configMapRef;
    if (!caRef) return { headers };
    const map = await this.ctx.client.get<KubeObject & { data?: Record<string, string> }>(types.configMaps,
      caRef.namespace ?? namespace, caRef.name);
    const ca = map?.data?.[caRef.key];
    if (!ca) throw new NotReadable('CANotFound', `ConfigMap ${caRef.name} has no key ${caRef.key}`);
    return { headers, ca };
  }
}
