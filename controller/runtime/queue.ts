// A work queue as client-go's: a key waits at most once however often it is added, is never handed to two workers at
// once (added while in process, it runs again when done), backs off exponentially per key on failure, and can be
// added after a delay.
import { jittered } from './jitter.ts';

export interface QueueObserver {
  depth(n: number): void;
  added(): void;
  retried(): void;
  waited(seconds: number): void;
  worked(seconds: number): void;
}

export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultBackoff: BackoffOptions = { baseDelayMs: 5, maxDelayMs: 1_000_000 };

/** setTimeout fires at once, with a warning, for any delay above 2^31 - 1 ms (24.8 days). */
const longestTimerMs = 2 ** 31 - 1;

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Map<string, number>();
  private readonly addedAt = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private closed = false;

  constructor(private readonly observer: QueueObserver, private readonly backoff: BackoffOptions = defaultBackoff) {}

  get length(): number {
    return this.queue.length;
  }

  get shuttingDown(): boolean {
    return this.closed;
  }

  add(key: string): void {
    if (this.closed || this.dirty.has(key)) return;
    this.observer.added();
    this.dirty.add(key);
    if (!this.addedAt.has(key)) this.addedAt.set(key, performance.now());
    if (this.processing.has(key)) return;
    this.push(key);
  }

  /** Adds the key once `delayMs` has passed; an earlier pending time for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.closed) return;
    if (delayMs <= 0) return this.add(key);
    const at = Date.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    this.delayed.set(key, { at, timer: this.timerUntil(key, at) });
  }

  /** A timer that adds the key at `at`, in steps setTimeout can take. */
  private timerUntil(key: string, at: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (at - Date.now() > 0) {
        this.delayed.set(key, { at, timer: this.timerUntil(key, at) });
        return;
      }
      this.delayed.delete(key);
      this.add(key);
    }, Math.min(at - Date.now(), longestTimerMs));
    timer.unref();
    return timer;
  }

  /** Adds the key after its backoff: base * 2^failures, capped, and jittered. */
  addRateLimited(key: string): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.observer.retried();
    this.addAfter(key, jittered(Math.min(this.backoff.baseDelayMs * 2 ** failures, this.backoff.maxDelayMs)));
  }

  /** Ends the key's backoff: its next failure starts from the base delay again. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Seconds of work in progress, summed over the keys in process (how stuck the workers are). */
  unfinishedWorkSeconds(): number {
    const now = performance.now();
    return [...this.processing.values()].reduce((sum, started) => sum + (now - started) / 1000, 0);
  }

  /** Seconds the longest-running key in process has been at it. */
  longestRunningSeconds(): number {
    const now = performance.now();
    return Math.max(0, ...[...this.processing.values()].map((started) => (now - started) / 1000));
  }

  failuresOf(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** The next key to process, or undefined once the queue is shut down (queued keys are then dropped). */
  get(): Promise<string | undefined> {
    if (this.closed) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) return Promise.resolve(this.take(key));
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    const started = this.processing.get(key);
    if (started !== undefined) this.observer.worked((performance.now() - started) / 1000);
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.closed) this.push(key);
  }

  /**
   * Stops handing out keys, queued ones included: a controller that lost leadership or is stopping must start no
   * reconcile. Waiting workers get undefined; keys in process may still call done.
   */
  shutDown(): void {
    this.closed = true;
    this.queue.splice(0);
    this.observer.depth(0);
    for (const { timer } of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.waiters.splice(0).forEach((resolve) => resolve(undefined));
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(this.take(key));
    else {
      this.queue.push(key);
      this.observer.depth(this.queue.length);
    }
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.set(key, performance.now());
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.observer.waited((performance.now() - added) / 1000);
    this.observer.depth(this.queue.length);
    return key;
  }
}
