import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkQueue, type QueueObserver } from './queue.ts';

function counting(): QueueObserver & { adds: number; retries: number } {
  return { adds: 0, retries: 0, depth() {}, added() { this.adds++; }, retried() { this.retries++; }, waited() {}, worked() {} };
}

describe('WorkQueue', () => {
  it('holds a key once however often it is added', async () => {
    const queue = new WorkQueue(counting());
    for (let i = 0; i < 100; i++) queue.add('ns/a');
    queue.add('ns/b');
    assert.equal(queue.length, 2);
    assert.equal(await queue.get(), 'ns/a');
    assert.equal(await queue.get(), 'ns/b');
  });

  it('never hands out a key in process; a key added meanwhile comes back after done', async () => {
    const queue = new WorkQueue(counting());
    queue.add('k');
    const key = (await queue.get())!;
    queue.add('k');
    queue.add('k');
    assert.equal(queue.length, 0, 'a key in process must not be queued again');
    queue.done(key);
    assert.equal(queue.length, 1);
    assert.equal(await queue.get(), 'k');
  });

  it('wakes a waiting worker when a key arrives, and releases workers on shutdown', async () => {
    const queue = new WorkQueue(counting());
    const waiting = queue.get();
    queue.add('x');
    assert.equal(await waiting, 'x');
    const idle = queue.get();
    queue.shutDown();
    assert.equal(await idle, undefined);
    queue.add('y');
    assert.equal(await queue.get(), undefined);
  });

  it('backs off exponentially per key until forgotten', async () => {
    const observer = counting();
    const queue = new WorkQueue(observer, { baseDelayMs: 10, maxDelayMs: 40 });
    const delays: number[] = [];
    for (let i = 0; i < 4; i++) {
      const started = performance.now();
      queue.addRateLimited('k');
      const key = (await queue.get())!;
      delays.push(performance.now() - started);
      queue.done(key);
    }
    assert.equal(observer.retries, 4);
    assert.equal(queue.failuresOf('k'), 4);
    // 10, 20, 40, 40 (capped); timers fire no earlier than asked.
    assert.ok(delays[0]! >= 9 && delays[1]! >= 19 && delays[2]! >= 39 && delays[3]! >= 39, delays.join(','));
    queue.forget('k');
    assert.equal(queue.failuresOf('k'), 0);
  });

  it('spreads the retries of keys that failed together', async () => {
    const queue = new WorkQueue(counting(), { baseDelayMs: 200, maxDelayMs: 200 });
    const started = performance.now();
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
    keys.forEach((key) => queue.addRateLimited(key));
    const back: number[] = [];
    for (const _ of keys) {
      const key = (await queue.get())!;
      back.push(performance.now() - started);
      queue.done(key);
    }
    // 200 ms stretched by up to 20%: ten keys all back within a few ms of each other would mean no jitter.
    assert.ok(back.every((t) => t >= 199 && t < 600), back.join(','));
    assert.ok(back.at(-1)! - back[0]! > 5, `all back within ${(back.at(-1)! - back[0]!).toFixed(1)} ms: ${back.join(',')}`);
  });

  it('hands out no queued key once shut down: a deposed or stopping controller starts nothing new', async () => {
    const queue = new WorkQueue(counting());
    for (let i = 0; i < 200; i++) queue.add(`ns/k${i}`);
    assert.equal(await queue.get(), 'ns/k0');
    queue.shutDown();
    assert.equal(await queue.get(), undefined);
    assert.equal(queue.length, 0);
  });

  it('waits out a delay beyond setTimeout\'s 24.8-day limit instead of firing at once', async () => {
    const queue = new WorkQueue(counting());
    queue.addAfter('far', 30 * 24 * 3600_000);
    const next = queue.get();
    const fired = await Promise.race([next.then(() => true), new Promise((resolve) => setTimeout(resolve, 100, false))]);
    assert.equal(fired, false, 'a 30-day requeue fired within 100 ms');
    queue.shutDown();
    assert.equal(await next, undefined);
  });

  it('keeps the earlier of two delayed adds', async () => {
    const queue = new WorkQueue(counting());
    queue.addAfter('k', 60_000);
    queue.addAfter('k', 5);
    assert.equal(await queue.get(), 'k');
    queue.shutDown();
  });
});
