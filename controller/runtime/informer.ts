// A list-then-watch cache of one resource type in one scope that never stops on its own: every watch error restarts
// it with bounded backoff, a 410 Gone relists (emitting deletes for what vanished, and nothing for what did not
// change), and a watch still open, silent, well past the end the server was asked for is cut and reopened.
import type { IncomingMessage } from 'node:http';
import { createInterface } from 'node:readline';
import { isDeepStrictEqual } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { detached } from './abort.ts';
import type { Client } from './client.ts';
import { deepFreeze } from './freeze.ts';
import { jittered } from './jitter.ts';
import type { Metrics } from './metrics.ts';
import { project, projectionOf, type Projection } from './projection.ts';
import { ApiError } from './rest.ts';
import { keyOf, type KubeObject, type ResourceType } from './resources.ts';

export interface InformerHandler<T> {
  added?(object: T): void;
  updated?(old: T, object: T): void;
  deleted?(object: T): void;
}

export interface InformerOptions {
  /**
   * How long a silent watch may outlive the end the server was asked for (timeoutSeconds) before it is cut. The
   * apiserver sends bookmarks only for types its watch cache serves, and only when the type's version moved, so a
   * quiet watch is healthy: no silence before its end is a failure. A peer that is gone is found sooner, by TCP
   * keepalive (rest.ts); what this finds is a connection something between holds open with nothing coming through.
   */
  silenceTimeoutMs: number;
  /** How long the apiserver keeps one watch open; by default 5 to 10 minutes at random, as client-go asks. */
  watchTimeoutSeconds: (() => number);
  initialBackoffMs: number;
  maxBackoffMs: number;
  /**
   * How the informer learns what exists: 'stream' asks the watch itself for it (sendInitialEvents, WatchList, on by
   * default since Kubernetes 1.32), so nothing holds a whole list response and no page waits for the one before;
   * 'list' pages through a LIST first. 'stream' falls back to 'list' on an apiserver that refuses it.
   */
  initialState: 'stream' | 'list';
}

export const defaultInformerOptions: InformerOptions = {
  silenceTimeoutMs: 70_000,
  watchTimeoutSeconds: () => 300 + Math.floor(Math.random() * 300),
  initialBackoffMs: 200,
  maxBackoffMs: 30_000,
  initialState: 'stream',
};

/** The bookmark annotation that ends a watch's initial events. */
const initialEventsEnd = 'k8s.io/initial-events-end';

/** A watch that ends this soon with nothing delivered is a failure, not a normal end (as client-go's reflector). */
const shortestHealthyWatchMs = 1_000;

/** A delay setTimeout keeps: it fires at once for one below 1 ms and, beyond 2^31 - 1 ms, after 1 ms with a warning. */
const timerDelay = (ms: number): number => Math.min(Math.max(ms, 1), 2 ** 31 - 1);

type WatchEnd = 'closed' | 'short' | 'gone' | 'silent' | 'unstreamed';

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

/** Which objects of a type a reader needs, and how much of each. */
export interface CacheView {
  /** Only the objects these labels select, in `kubectl get -l` syntax: the cache holds nothing else of the type. */
  labelSelector?: string;
  /**
   * The fields the reader uses, as dotted paths ('status.phase'; 'spec.containers.name' keeps each container's name);
   * kind and metadata are always kept. An informer keeps the union over its readers; one reader without `keep` keeps
   * whole objects for all; when every reader keeps nothing more, the apiserver sends metadata only. Readers must
   * declare before the cache starts.
   */
  keep?: readonly string[];
}

export class Informer<T extends KubeObject> {
  private readonly store = new Map<string, T>();
  /** The fields kept, or 'whole'; undefined until a reader declares. */
  private kept: Set<string> | 'whole' | undefined;
  private projection: Projection | undefined;
  private readonly byNamespace = new Map<string, Map<string, T>>();
  private readonly handlers: InformerHandler<T>[] = [];
  private resourceVersion: string | undefined;
  private streamInitialState: boolean;
  /** A stream was cut before its initial events ended: the next attempt lists, as client-go's reflector falls back. */
  private listNext = false;
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
    private readonly labelSelector?: string,
  ) {
    this.label = `${type.resource}${type.group ? `.${type.group}` : ''}${namespace ? ` in ${namespace}` : ''}` +
      (labelSelector ? ` (${labelSelector})` : '');
    this.streamInitialState = options.initialState === 'stream';
    metrics.informerSources.set(this.label, { silenceSeconds: () => (Date.now() - this.lastHeard) / 1000,
      objects: () => this.store.size });
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

  /** Declares the fields one more reader uses (all of them when `keep` is undefined). */
  read(keep: readonly string[] | undefined): void {
    const kept = !keep || this.kept === 'whole' ? 'whole' : new Set([...(this.kept ?? []), ...keep]);
    const projection = kept === 'whole' ? undefined : projectionOf(kept);
    if (this.running && !isDeepStrictEqual(projection, this.projection)) {
      throw new Error(`${this.label}: a reader asked for more fields than the started cache keeps; ` +
        'declare what a reader uses when the operator is set up');
    }
    [this.kept, this.projection] = [kept, projection];
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
    this.metrics.informerSources.delete(this.label);
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
        if (this.resourceVersion === undefined && (!this.streamInitialState || this.listNext)) await this.relist();
        const end = await this.watch();
        if (end === 'unstreamed') continue;
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

  /** Lists everything anew and brings the store (and handlers) to it, page by page. */
  private async relist(): Promise<void> {
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let page;
    do {
      page = await this.client.list<T>(this.type, this.namespace,
        { limit: 500, continue: continueToken, labelSelector: this.labelSelector }, this.metadataOnly);
      for (const object of page.items) this.upsert(object, seen);
      continueToken = page.metadata.continue;
    } while (continueToken);
    this.lastHeard = Date.now();
    this.listNext = false;
    this.synced(seen, page.metadata.resourceVersion);
  }

  private get metadataOnly(): boolean {
    return this.kept !== 'whole' && this.kept?.size === 0;
  }

  /** What the cache keeps of an object read from the API. */
  private slim(object: T): T {
    const trimmed = trim(object);
    return this.projection ? project(trimmed, this.projection) : trimmed;
  }

  /** Caches a listed or watched object and tells the handlers: added, updated, or nothing if its version is cached. */
  private upsert(object: T, seen?: Set<string>): void {
    const key = keyOf(object.metadata);
    seen?.add(key);
    const old = this.store.get(key);
    const fresh = this.slim(object);
    this.put(key, fresh);
    if (!old) this.emit('added', fresh);
    else if (old.metadata.resourceVersion !== fresh.metadata.resourceVersion) this.emit('updated', old, fresh);
  }

  /** The whole state has arrived (a list, or a watch's initial events): what was cached but not `seen` is gone. */
  private synced(seen: Set<string>, resourceVersion: string): void {
    for (const [key, old] of this.store) {
      if (!seen.has(key)) {
        this.remove(key, old);
        this.emit('deleted', old);
      }
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
    // A stop that came while the list was still being read is heard here, or the watch would run till it fell silent.
    if (this.stopping.signal.aborted) cut.abort();
    let silent = false;
    let watchdog: NodeJS.Timeout | undefined;
    let stream: IncomingMessage | undefined;
    const opened = performance.now();
    let heard = false;
    // Keys seen in the initial events, until the bookmark that ends them.
    let initial = this.resourceVersion === undefined ? new Set<string>() : undefined;
    try {
      // The server ends each watch after a while; we then resume from resourceVersion.
      const timeoutSeconds = this.options.watchTimeoutSeconds();
      // 0 would leave the end to the apiserver (30 to 60 minutes), past which no silence could be judged.
      if (!Number.isSafeInteger(timeoutSeconds) || timeoutSeconds === 0) {
        throw new Error(`watchTimeoutSeconds gave ${timeoutSeconds}: expected whole seconds other than 0`);
      }
      const answer = await this.client.watch(this.type, this.namespace, initial
        ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', timeoutSeconds, labelSelector: this.labelSelector }
        : { resourceVersion: this.resourceVersion, timeoutSeconds, labelSelector: this.labelSelector }, cut.signal,
        this.metadataOnly)
        .catch((error: unknown) => this.unstreamed(error, initial));
      if (answer === 'unstreamed') return answer;
      stream = answer;
      // Monotonic time: a step of the wall clock neither cuts a watch nor spares one.
      let heardAt = performance.now();
      this.lastHeard = Date.now();
      stream.on('data', () => {
        heardAt = performance.now();
        this.lastHeard = Date.now();
      });
      const serverEnds = heardAt + timeoutSeconds * 1000;
      const { silenceTimeoutMs } = this.options;
      const dueBy = () => Math.max(heardAt, serverEnds) + silenceTimeoutMs;
      // One timer, re-armed as it fires: a quiet watch wakes the process about once per watch.
      const checkSilence = () => {
        const leftMs = dueBy() - performance.now();
        if (leftMs > 0) {
          watchdog = setTimeout(checkSilence, timerDelay(leftMs));
          return;
        }
        silent = true;
        cut.abort();
      };
      watchdog = setTimeout(checkSilence, timerDelay(dueBy() - performance.now()));
      for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
        if (!line.trim()) continue;
        heard = true;
        const event = JSON.parse(line) as WatchEvent;
        const outcome = this.apply(event, initial);
        if (outcome === 'gone') {
          stream.destroy();
          return 'gone';
        }
        if (outcome === 'synced') initial = undefined;
      }
      // Cut before its initial events ended, the stream told only part of the state: list it, after a backoff.
      if (initial) {
        this.log.warn({ informer: this.label, events: initial.size }, 'watch ended before its initial events did; listing');
        this.listNext = true;
        return 'short';
      }
      if (heard || performance.now() - opened >= shortestHealthyWatchMs) return 'closed';
      this.log.warn({ informer: this.label }, 'watch closed at once with nothing delivered; retrying with backoff');
      return 'short';
    } catch (error) {
      // An error event or a line that is not JSON: the connection is not left open until the server ends it.
      stream?.destroy();
      if (silent) {
        this.log.warn({ informer: this.label, silentForMs: Date.now() - this.lastHeard },
          'watch outlived its own end in silence; restarting');
        return 'silent';
      }
      throw error;
    } finally {
      clearTimeout(watchdog);
      this.stopping.signal.removeEventListener('abort', onStop);
    }
  }

  /**
   * An apiserver that refuses to stream initial events (older than 1.32, or with WatchList off) answers 400 or 422:
   * this informer lists from then on. Any other failure is the watch's own.
   */
  private unstreamed(error: unknown, initial: Set<string> | undefined): 'unstreamed' {
    if (!initial || !(error instanceof ApiError) || (error.status !== 400 && error.status !== 422)) throw error;
    this.streamInitialState = false;
    this.log.info({ informer: this.label, err: error.message }, 'the apiserver does not stream initial events; listing');
    return 'unstreamed';
  }

  /** `initial`: the keys seen so far while the watch is still sending its initial events. */
  private apply(event: WatchEvent, initial: Set<string> | undefined): 'gone' | 'synced' | undefined {
    const object = event.object;
    if (event.type === 'ERROR') {
      if (object.code === 410) return 'gone';
      throw new ApiError(object.code ?? 500, object.reason ?? 'Unknown', object.message ?? 'watch error', 'WATCH',
        this.label);
    }
    if (event.type === 'BOOKMARK') {
      if (!initial) this.resourceVersion = object.metadata.resourceVersion;
      else if (object.metadata.annotations?.[initialEventsEnd] === 'true') {
        this.synced(initial, object.metadata.resourceVersion!);
        return 'synced';
      }
      return undefined;
    }
    // Until the initial events end, a cut stream must start over: no version to resume from is kept.
    if (!initial) this.resourceVersion = object.metadata.resourceVersion;
    const key = keyOf(object.metadata);
    if (event.type !== 'DELETED') {
      this.upsert(object as T, initial);
      return undefined;
    }
    initial?.delete(key);
    const old = this.store.get(key);
    const gone = old ?? this.slim(object as T);
    this.remove(key, gone);
    this.emit('deleted', gone);
    return undefined;
  }
}
