// A list-then-watch cache of one resource type in one scope that never stops on its own: every watch error restarts
// it with bounded backoff, a 410 Gone relists (emitting deletes for what vanished, and nothing for what did not
// change), and a watch silent for too long (no event, not even a bookmark) is cut and reopened.
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { detached } from './abort.ts';
import type { Client } from './client.ts';
import { deepFreeze } from './freeze.ts';
import { jittered } from './jitter.ts';
import type { Metrics } from './metrics.ts';
import { ApiError } from './rest.ts';
import { keyOf, type KubeObject, type ResourceType } from './resources.ts';

export interface InformerHandler<T> {
  added?(object: T): void;
  updated?(old: T, object: T): void;
  deleted?(object: T): void;
}

export interface InformerOptions {
  /**
   * A watch that delivers nothing, not even a bookmark, for this long is restarted. The apiserver sends a bookmark
   * at least once a minute (its cacher's bookmark frequency), so 70 s, as kopf uses, finds a dead connection that
   * TCP would hold for many minutes.
   */
  silenceTimeoutMs: number;
  /** How long the apiserver keeps one watch open; by default 5 to 10 minutes at random, as client-go asks. */
  watchTimeoutSeconds: (() => number);
  initialBackoffMs: number;
  maxBackoffMs: number;
}

export const defaultInformerOptions: InformerOptions = {
  silenceTimeoutMs: Number(process.env.KEELSON_WATCH_SILENCE_TIMEOUT_MS ?? 70_000),
  watchTimeoutSeconds: process.env.KEELSON_WATCH_TIMEOUT_SECONDS
    ? () => Number(process.env.KEELSON_WATCH_TIMEOUT_SECONDS)
    : () => 300 + Math.floor(Math.random() * 300),
  initialBackoffMs: 200,
  maxBackoffMs: 30_000,
};

/** A watch that ends this soon with nothing delivered is a failure, not a normal end (as client-go's reflector). */
const shortestHealthyWatchMs = 1_000;

type WatchEnd = 'closed' | 'short' | 'gone' | 'silent';

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject & { code?: number; reason?: string; message?: string };
}

/** Drops managedFields but the server-side appliers' entries: applyIfChanged reads what its manager owns. */
function trim<T extends KubeObject>(object: T): T {
  const applied = object.metadata.managedFields?.filter((e) => (e as { operation?: string }).operation === 'Apply');
  if (applied?.length) object.metadata.managedFields = applied;
  else delete object.metadata.managedFields;
  return object;
}

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  private readonly byNamespace = new Map<string, Map<string, T>>();
  private readonly handlers: InformerHandler<T>[] = [];
  private resourceVersion: string | undefined;
  private readonly stopping = new AbortController();
  private running: Promise<void> | undefined;
  private lastHeard = Date.now();
  private syncedOnce = false;
  /** Why the last list or watch failed, until one succeeds again. */
  private failure: string | undefined;
  private readonly syncWaiters: (() => void)[] = [];
  readonly label: string;

  constructor(
    private readonly client: Client,
    readonly type: ResourceType,
    readonly namespace: string | undefined,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly options: InformerOptions = defaultInformerOptions,
  ) {
    this.label = `${type.resource}${type.group ? `.${type.group}` : ''}${namespace ? ` in ${namespace}` : ''}`;
    metrics.watchSilenceSources.set(this.label, () => (Date.now() - this.lastHeard) / 1000);
  }

  get hasSynced(): boolean {
    return this.syncedOnce;
  }

  /** Why this informer has not synced yet, or undefined once it has. */
  get notSyncedBecause(): string | undefined {
    if (this.syncedOnce) return undefined;
    return `${this.label}: ${this.failure ?? 'listing'}`;
  }

  waitForSync(): Promise<void> {
    return this.syncedOnce ? Promise.resolve() : new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  /** The cached objects of one namespace, without scanning the others. */
  listNamespace(namespace: string | undefined): T[] {
    return [...(this.byNamespace.get(namespace ?? '')?.values() ?? [])];
  }

  private put(key: string, object: T): void {
    deepFreeze(object);
    this.store.set(key, object);
    const namespace = object.metadata.namespace ?? '';
    let objects = this.byNamespace.get(namespace);
    if (!objects) this.byNamespace.set(namespace, (objects = new Map()));
    objects.set(key, object);
  }

  private remove(key: string, object: T): void {
    this.store.delete(key);
    const namespace = object.metadata.namespace ?? '';
    const objects = this.byNamespace.get(namespace);
    objects?.delete(key);
    if (objects?.size === 0) this.byNamespace.delete(namespace);
  }

  /** Adds a handler; objects already cached are delivered to it as added. */
  addHandler(handler: InformerHandler<T>): void {
    this.handlers.push(handler);
    for (const object of this.store.values()) handler.added?.(object);
  }

  start(): void {
    // Started from a reconcile, the loop must not inherit (and die with) that reconcile's signal.
    this.running ??= detached(() => this.run());
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running;
    this.metrics.watchSilenceSources.delete(this.label);
  }

  private emit(event: keyof InformerHandler<T>, ...args: T[]): void {
    for (const handler of this.handlers) {
      try {
        (handler[event] as ((...a: T[]) => void) | undefined)?.(...args);
      } catch (error) {
        this.log.error({ err: error, informer: this.label }, 'informer handler failed');
      }
    }
  }

  /**
   * Lists, then watches from where the list left off, for ever. Every end but a healthy watch that ran its course
   * (an error, a 410, a watch closed at once with nothing said) waits a jittered backoff before the next request, so
   * a failing endpoint sees a few requests a second at most, and a relist storm is spread out.
   */
  private async run(): Promise<void> {
    let backoff = this.options.initialBackoffMs;
    const pause = async () => {
      await sleep(jittered(backoff), undefined, { signal: this.stopping.signal }).catch(() => {});
      backoff = Math.min(backoff * 2, this.options.maxBackoffMs);
    };
    while (!this.stopping.signal.aborted) {
      try {
        if (this.resourceVersion === undefined) await this.relist();
        const end = await this.watch();
        if (end !== 'closed') this.metrics.watchRestarts.inc({ resource: this.label, reason: end });
        if (end === 'gone') this.resourceVersion = undefined;
        if (end === 'closed' || end === 'silent') backoff = this.options.initialBackoffMs;
        else await pause();
      } catch (error) {
        if (this.stopping.signal.aborted) break;
        if (error instanceof ApiError && error.gone) {
          this.resourceVersion = undefined;
          this.metrics.watchRestarts.inc({ resource: this.label, reason: 'gone' });
        } else {
          this.failure = (error as Error).message;
          this.metrics.watchRestarts.inc({ resource: this.label, reason: 'error' });
          this.log.warn({ informer: this.label, err: (error as Error).message, retryInMs: backoff }, 'watch failed; restarting');
        }
        await pause();
      }
    }
  }

  /** Lists everything anew and brings the store (and handlers) to it: deletes for what vanished, no event for what did not change. */
  private async relist(): Promise<void> {
    const fresh = new Map<string, T>();
    let resourceVersion = '';
    let continueToken: string | undefined;
    do {
      const page = await this.client.list<T>(this.type, this.namespace, { limit: 500, continue: continueToken });
      for (const object of page.items) fresh.set(keyOf(object.metadata), trim(object));
      continueToken = page.metadata.continue;
      resourceVersion = page.metadata.resourceVersion;
    } while (continueToken);
    this.lastHeard = Date.now();

    for (const [key, old] of this.store) {
      if (!fresh.has(key)) {
        this.remove(key, old);
        this.emit('deleted', old);
      }
    }
    for (const [key, object] of fresh) {
      const old = this.store.get(key);
      this.put(key, object);
      if (!old) this.emit('added', object);
      else if (old.metadata.resourceVersion !== object.metadata.resourceVersion) this.emit('updated', old, object);
    }
    this.resourceVersion = resourceVersion;
    this.failure = undefined;
    if (!this.syncedOnce) {
      this.syncedOnce = true;
      this.syncWaiters.splice(0).forEach((resolve) => resolve());
    }
  }

  private async watch(): Promise<WatchEnd> {
    const cut = new AbortController();
    const onStop = () => cut.abort();
    this.stopping.signal.addEventListener('abort', onStop);
    let silent = false;
    this.lastHeard = Date.now();
    // One timer per silence window, not a tick: a process at rest wakes about once a minute for it.
    const { silenceTimeoutMs } = this.options;
    const checkSilence = () => {
      const quietMs = Date.now() - this.lastHeard;
      if (quietMs < silenceTimeoutMs) {
        watchdog = setTimeout(checkSilence, silenceTimeoutMs - quietMs);
        return;
      }
      silent = true;
      cut.abort();
    };
    let watchdog = setTimeout(checkSilence, silenceTimeoutMs);
    const opened = performance.now();
    let heard = false;
    try {
      // The server ends each watch after a while; we then resume from resourceVersion.
      const stream = await this.client.watch(this.type, this.namespace,
        { resourceVersion: this.resourceVersion, timeoutSeconds: this.options.watchTimeoutSeconds() }, cut.signal);
      stream.on('data', () => (this.lastHeard = Date.now()));
      for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
        if (!line.trim()) continue;
        heard = true;
        const event = JSON.parse(line) as WatchEvent;
        if (this.apply(event) === 'gone') {
          stream.destroy();
          return 'gone';
        }
      }
      if (heard || performance.now() - opened >= shortestHealthyWatchMs) return 'closed';
      this.log.warn({ informer: this.label }, 'watch closed at once with nothing delivered; retrying with backoff');
      return 'short';
    } catch (error) {
      if (silent) {
        this.log.warn({ informer: this.label, silentForMs: Date.now() - this.lastHeard }, 'watch silent; restarting');
        return 'silent';
      }
      throw error;
    } finally {
      clearTimeout(watchdog);
      this.stopping.signal.removeEventListener('abort', onStop);
    }
  }

  private apply(event: WatchEvent): 'gone' | undefined {
    const object = event.object;
    if (event.type === 'ERROR') {
      if (object.code === 410) return 'gone';
      throw new ApiError(object.code ?? 500, object.reason ?? 'Unknown', object.message ?? 'watch error', 'WATCH',
        this.label);
    }
    this.resourceVersion = object.metadata.resourceVersion;
    if (event.type === 'BOOKMARK') return undefined;
    const key = keyOf(object.metadata);
    const old = this.store.get(key);
    if (event.type === 'DELETED') {
      this.remove(key, (old ?? object) as T);
      this.emit('deleted', (old ?? object) as T);
      return undefined;
    }
    const fresh = trim(object as T);
    this.put(key, fresh);
    if (!old) this.emit('added', fresh);
    else if (old.metadata.resourceVersion !== fresh.metadata.resourceVersion) this.emit('updated', old, fresh);
    return undefined;
  }
}
