// Leader election on a coordination.k8s.io Lease, as client-go does it: a lease is taken over only after it went
// unrenewed for its whole duration as observed by this process's own monotonic clock (so neither clock skew between
// replicas nor a wall clock that steps matters), every write carries resourceVersion, and a leader that cannot renew
// in time steps down.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { withSignal } from './abort.ts';
import type { Client } from './client.ts';
import { jittered } from './jitter.ts';
import { ApiError } from './rest.ts';
import { types, type KubeObject } from './resources.ts';

export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

/** A coordination.k8s.io Lease. */
export interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

/** Now as a Kubernetes MicroTime (microseconds). */
export function microTime(): string {
  return new Date().toISOString().replace(/(\.\d{3})Z$/, '$1000Z');
}

export class LeaderElector {
  private observed: { record: string; at: number } | undefined;
  private lease: Lease | undefined;
  private leading = false;

  constructor(private readonly client: Client, readonly options: LeaderElectionOptions, private readonly log: Logger,
    private readonly onStatus: (leading: boolean) => void = () => {}) {}

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Resolves once this process holds the lease; rejects if `signal` aborts first. An apiserver that errs or cannot
   * be reached is waited out, as client-go does: a follower that exited on it would only crash-loop.
   */
  async acquire(signal: AbortSignal): Promise<void> {
    for (;;) {
      try {
        if (await this.tryAcquireOrRenew()) {
          this.setLeading(true);
          this.log.info({ lease: `${this.options.namespace}/${this.options.name}` }, 'became leader');
          return;
        }
      } catch (error) {
        this.log.warn({ lease: this.options.name, err: (error as Error).message }, 'could not acquire the lease; retrying');
      }
      await sleep(jittered(this.options.retryPeriodMs), undefined, { signal });
    }
  }

  /**
   * Renews until renewal fails past the deadline (resolves: leadership lost) or `signal` aborts (resolves). An
   * attempt is aborted when the deadline comes: a request hung on a dead connection must not outlast it.
   */
  async keepRenewing(signal: AbortSignal): Promise<'lost' | 'stopped'> {
    let lastRenewed = performance.now();
    while (!signal.aborted) {
      await sleep(this.options.retryPeriodMs, undefined, { signal }).catch(() => {});
      if (signal.aborted) break;
      const left = Math.ceil(this.options.renewDeadlineMs - (performance.now() - lastRenewed));
      const attempt = AbortSignal.any([signal, AbortSignal.timeout(Math.max(left, 1))]);
      if (await withSignal(attempt, () => this.tryAcquireOrRenew()).catch(() => false)) lastRenewed = performance.now();
      else if (signal.aborted) break;
      else if (performance.now() - lastRenewed > this.options.renewDeadlineMs) {
        this.setLeading(false);
        this.log.error({ lease: this.options.name }, 'lost leadership: could not renew the lease in time');
        return 'lost';
      }
    }
    return 'stopped';
  }

  /**
   * Gives the lease up at once, so another replica takes over without waiting for it to expire. A renewal abandoned
   * at shutdown may still have landed, so a conflict means: read the lease again and release it if it is still ours.
   */
  async release(): Promise<void> {
    if (!this.leading || !this.lease) return;
    this.setLeading(false);
    try {
      await withSignal(AbortSignal.timeout(this.options.renewDeadlineMs), async () => {
        for (let lease: Lease | undefined = this.lease; lease?.spec?.holderIdentity === this.options.identity;) {
          try {
            await this.client.update(types.leases, { ...lease, spec: { ...lease.spec, holderIdentity: undefined,
              leaseDurationSeconds: 1, renewTime: microTime() } });
            this.log.info({ lease: this.options.name }, 'released the lease');
            return;
          } catch (error) {
            if (!(error instanceof ApiError && error.conflict)) throw error;
            lease = await this.client.get<Lease>(types.leases, this.options.namespace, this.options.name);
          }
        }
        this.log.info({ lease: this.options.name }, 'the lease is no longer ours; nothing to release');
      });
    } catch (error) {
      this.log.warn({ err: (error as Error).message }, 'could not release the lease; it expires on its own');
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.onStatus(leading);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const durationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    const now = microTime();
    const current = await this.client.get<Lease>(types.leases, namespace, name);
    try {
      if (!current) {
        this.lease = await this.client.create<Lease>(types.leases, { metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now,
            leaseTransitions: 0 } });
        return true;
      }
      const spec = current.spec ?? {};
      const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
      if (this.observed?.record !== record) this.observed = { record, at: performance.now() };
      const heldByOther = spec.holderIdentity && spec.holderIdentity !== identity;
      const expired = performance.now() - this.observed.at > (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (heldByOther && !expired) return false;
      const takingOver = spec.holderIdentity !== identity;
      this.lease = await this.client.update<Lease>(types.leases, { ...current, spec: {
        holderIdentity: identity,
        leaseDurationSeconds: durationSeconds,
        acquireTime: takingOver ? now : (spec.acquireTime ?? now),
        renewTime: now,
        leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && spec.holderIdentity ? 1 : 0),
      } });
      return true;
    } catch (error) {
      if (error instanceof ApiError && (error.conflict || error.status === 422)) return false;
      throw error;
    }
  }
}

