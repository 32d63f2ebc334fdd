import assert from 'node:assert/strict';
import { it } from 'node:test';
import { outboxLimit, queueNotifications, retryDelayMs, type Notification } from './webhook.ts';

const message = (i: number): Notification => ({ id: `m${i}`, event: 'alert', pod: `pod-${i}`, text: `pod-${i} is unhealthy` });

it('queues new messages behind the waiting ones, dropping and counting the oldest past the limit', () => {
  const waiting = Array.from({ length: outboxLimit - 1 }, (_, i) => message(i));
  const { outbox, dropped } = queueNotifications(waiting, [message(1000), message(1001), message(1002)]);
  assert.equal(outbox.length, outboxLimit);
  assert.equal(dropped, 2);
  assert.deepEqual([outbox[0]!.id, outbox.at(-1)!.id], ['m2', 'm1002']);
  assert.deepEqual(queueNotifications([], [message(1)]), { outbox: [message(1)], dropped: 0 });
});

it('waits 2 s after a first failure, doubling to at most five minutes', () => {
  assert.deepEqual([1, 2, 3, 20].map(retryDelayMs), [2_000, 4_000, 8_000, 300_000]);
});
