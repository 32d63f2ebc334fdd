// A controller: events on its primary kind, on objects it owns and on objects mapped to it become keys in its
// queue; workers reconcile one key at a time each, level-triggered from the cache.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { withSignal } from './abort.ts';
import type { Cache } from './cache.ts';
import type { CacheView } from './informer.ts';
import type { Client } from './client.ts';
import { requestOf } from './mappers.ts';
import type { Metrics } from './metrics.ts';
import { WorkQueue, type BackoffOptions } from './queue.ts';
import { ApiError } from './rest.ts';
import { apiVersionOf, keyOf, parseKey, type KubeObject, type ResourceType } from './resources.ts';

export interface Request {
  namespace?: string;
  name: string;
}

export interface ReconcileContext {
  log: Logger;
  reconcileId: string;
  /**
   * Aborts when the reconcile passes its deadline or the controller stops (shutdown, lost leadership). The client's
   * calls made during the reconcile honour it on their own; pass it to anything else that waits.
   */
  signal: AbortSignal;
}

/** Done, or come back after a delay (level-triggered: the key is reconciled from the cache again). */
export type ReconcileResult = void | { requeueAfterMs: number };

export interface Watch {
  type: ResourceType;
  /** The objects and fields the mapping (and the reconcile, through the same informer) reads. */
  view?: CacheView;
  /** The primary objects an event on `object` concerns. */
  map(object: KubeObject): Request[];
  /**
   * Whether an update concerns anyone (all do when unset): objects that change often in what no one reads (a Node's
   * heartbeats) need not reconcile their primaries each time.
   */
  updateMatters?(old: KubeObject, updated: KubeObject): boolean;
}

export interface ControllerSpec {
  name: string;
  for: ResourceType;
  /** Objects whose controller owner reference points at a primary object, with the view the reconcile reads. */
  owns?: (ResourceType | { type: ResourceType; view: CacheView })[];
  watches?: Watch[];
  reconcile(request: Request, context: ReconcileContext): Promise<ReconcileResult>;
  workers?: number;
  backoff?: BackoffOptions;
  /** How long one reconcile may run before its signal aborts and it is retried with backoff. Default 2 minutes. */
  reconcileTimeoutMs?: number;
}

const defaultReconcileTimeoutMs = 120_000;

export class Controller {
  readonly queue: WorkQueue;
  private workers: Promise<void>[] = [];
  private readonly stopping = new AbortController();

  constructor(
    readonly spec: ControllerSpec,
    private readonly cache: Cache,
    private readonly client: Client,
    private readonly namespace: string | undefined,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    const labels = { name: spec.name, controller: spec.name };
    this.queue = new WorkQueue({
      depth: (n) => metrics.queueDepth.set(labels, n),
      added: () => metrics.queueAdds.inc(labels),
      retried: () => metrics.queueRetries.inc(labels),
      waited: (s) => metrics.queueDuration.observe(labels, s),
      worked: (s) => metrics.workDuration.observe(labels, s),
    }, spec.backoff);
    metrics.workInProgressSources.set(spec.name, this.queue);
  }

  /** Subscribes to the informers it needs; events queue keys from now on, even before workers start. */
  watch(): void {
    const enqueue = (requests: Request[]) => requests.forEach((r) => this.queue.add(keyOf(r)));
    const on = (type: ResourceType, map: (object: KubeObject) => Request[], view?: CacheView,
      updateMatters: (old: KubeObject, updated: KubeObject) => boolean = () => true) => {
      // A cluster-scoped type is read whole, whichever namespace the controller watches.
      this.cache.informer(type, type.namespaced ? this.namespace : undefined, this.client, view).addHandler({
        added: (o) => enqueue(map(o)),
        updated: (old, o) => { if (updateMatters(old, o)) enqueue([...map(old), ...map(o)]); },
        deleted: (o) => enqueue(map(o)),
      });
    };
    on(this.spec.for, (o) => [requestOf(o)]);
    const ownerApiVersion = apiVersionOf(this.spec.for);
    for (const owned of this.spec.owns ?? []) {
      const { type, view } = 'type' in owned ? owned : { type: owned, view: undefined };
      on(type, (o) => (o.metadata.ownerReferences ?? [])
        .filter((r) => r.controller && r.kind === this.spec.for.kind && r.apiVersion === ownerApiVersion)
        .map((r) => ({ namespace: o.metadata.namespace, name: r.name })), view);
    }
    for (const watch of this.spec.watches ?? []) {
      on(watch.type, (o) => watch.map(o), watch.view, watch.updateMatters && ((old, o) => watch.updateMatters!(old, o)));
    }
  }

  start(): void {
    const workers = this.spec.workers ?? 1;
    this.metrics.maxWorkers.set({ controller: this.spec.name }, workers);
    this.metrics.activeWorkers.set({ controller: this.spec.name }, 0);
    for (let i = 0; i < workers; i++) this.workers.push(this.work());
  }

  /** Starts no new reconcile, aborts those in flight, and resolves once they have returned. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    this.stopping.abort(new Error(`controller ${this.spec.name} is stopping`));
    await Promise.all(this.workers);
  }

  private async work(): Promise<void> {
    const controller = this.spec.name;
    const timeoutMs = this.spec.reconcileTimeoutMs ?? defaultReconcileTimeoutMs;
    for (let key = await this.queue.get(); key !== undefined; key = await this.queue.get()) {
      const request = parseKey(key);
      const reconcileId = randomUUID();
      const log = this.log.child({ controller, kind: this.spec.for.kind, ...request, reconcileId });
      const started = performance.now();
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new Error(`the reconcile passed its ${timeoutMs} ms deadline`)),
        timeoutMs);
      const signal = AbortSignal.any([this.stopping.signal, deadline.signal]);
      this.metrics.activeWorkers.inc({ controller });
      try {
        const result = await withSignal(signal, () => this.spec.reconcile(request, { log, reconcileId, signal }));
        this.queue.forget(key);
        if (result && result.requeueAfterMs > 0) {
          this.queue.addAfter(key, result.requeueAfterMs);
          this.metrics.reconcileTotal.inc({ controller, result: 'requeue_after' });
        } else {
          this.metrics.reconcileTotal.inc({ controller, result: 'success' });
        }
      } catch (error) {
        this.metrics.reconcileTotal.inc({ controller, result: 'error' });
        this.metrics.reconcileErrors.inc({ controller });
        this.queue.addRateLimited(key);
        if (this.stopping.signal.aborted) log.info({ err: (error as Error).message }, 'reconcile aborted: stopping');
        else if (deadline.signal.aborted) log.error({ timeoutMs }, 'reconcile passed its deadline; retrying with backoff');
        else if (error instanceof ApiError && error.conflict) log.info({ err: error.message }, 'conflict; retrying from the cache');
        else log.error({ err: error }, 'reconcile failed; retrying with backoff');
      } finally {
        clearTimeout(timer);
        this.metrics.reconcileTime.observe({ controller }, (performance.now() - started) / 1000);
        this.metrics.activeWorkers.dec({ controller });
        this.queue.done(key);
      }
    }
  }
}
