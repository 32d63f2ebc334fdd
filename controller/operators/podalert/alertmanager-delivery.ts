// Posting a PodAlert's alerts to Alertmanager: the firing ones whenever they change and again every resendIntervalMs,
// with the resolutions status keeps until they are posted. What was last posted is remembered in memory only: after
// a restart everything is posted again at once, which Alertmanager takes as the same alerts.
import type { OperatorContext } from '../../runtime/manager.ts';
import { types, type KubeObject } from '../../runtime/resources.ts';
import { resendIntervalMs, type PostableAlert } from './alertmanager.ts';
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

export class AlertmanagerSender {
  /** By PodAlert uid: when its alerts were last posted, what they were, and failures since. */
  private readonly last = new Map<string, { at: number; firing: string; failures: number }>();

  constructor(private readonly ctx: OperatorContext, private readonly policy: DestinationPolicy) {}

  /** Posts what is due; undefined when nothing is (then `wait` says for how long). */
  async send(uid: string, namespace: string | undefined, settings: Settings, firing: PostableAlert[], resolutions: PostableAlert[],
    now: Date): Promise<Posted | { wait: number }> {
    const digest = JSON.stringify([settings, firing.map((a) => [a.labels, a.annotations])]);
    const last = this.last.get(uid);
    const since = last ? now.getTime() - last.at : Infinity;
    // After a failure nothing is posted before its backoff, whatever changed: each attempt writes status, and each
    // write reconciles again at once.
    if (last?.failures && since < retryDelayMs(last.failures)) return { wait: retryDelayMs(last.failures) - since };
    // With nothing firing and nothing resolved, the first post (of none) proves the way there; later ones tell nothing.
    if (!resolutions.length && (last?.firing === digest && since < resendIntervalMs || (last && !firing.length))) {
      return { wait: Math.max(resendIntervalMs - since, 1_000) };
    }
    // A resolution of an alert firing again is stale: posted, it would end the alert Alertmanager should keep.
    const firingNow = new Set(firing.map((a) => labelKey(a.labels)));
    const stale = resolutions.filter((r) => firingNow.has(labelKey(r.labels)));
    const current = resolutions.filter((r) => !stale.includes(r));
    let failed: { url: string; error: Error }[];
    try {
      const { headers, ca } = await this.access(namespace, settings);
      const urls = settings.urls ?? [settings.url!];
      const results = await Promise.allSettled(urls.map((url) => post(`${url.replace(/\/+$/, '')}/api/v2/alerts`,
        [...current, ...firing], this.policy, { what: 'Alertmanager', headers, ...(ca ? { ca } : {}) })));
      failed = results.flatMap((r, i) => r.status === 'rejected' ? [{ url: urls[i]!, error: r.reason as Error }] : []);
      // A post counts once one replica has it, as Prometheus counts it: a replica that missed it is posted to again
      // at the next resend, not sooner (the others have it), and an ended alert it missed ends there with its lease.
      if (failed.length === urls.length) throw failed[0]!.error;
    } catch (error) {
      const failures = (last?.failures ?? 0) + 1;
      this.last.set(uid, { at: now.getTime(), firing: '', failures });
      const reason = error instanceof NotReadable ? error.reason
        : error instanceof DestinationRefused ? 'DestinationRefused' : 'DeliveryFailed';
      this.logRefusal(namespace, error);
      return { delivered: stale, nextMs: retryDelayMs(failures), condition: { type, status: 'False', reason,
        message: `${(error as Error).message}; retrying with backoff (2 s doubling to 5 minutes)` } };
    }
    for (const { error } of failed) this.logRefusal(namespace, error);
    this.last.set(uid, { at: now.getTime(), firing: digest, failures: 0 });
    if (this.last.size > 10_000) this.last.delete(this.last.keys().next().value!);
    const condition: DeliveryCondition = failed.length
      ? { type, status: 'True', reason: 'PartlyDelivered', message: `${failed.map(({ url, error }) =>
        `${new URL(url).host}: ${error.message}`).join('; ')}; the other replicas have every alert (${firing.length} ` +
        'firing now)' }
      : { type, status: 'True', reason: 'Delivered', message: `Alertmanager has every alert (${firing.length} firing now)` };
    return { delivered: resolutions, nextMs: resendIntervalMs, condition };
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
