// Delivery of a PodAlert's outbox: the webhook Secret is read on every pass (a missing one is reported at once, not
// at the next incident), the destination is checked before any connection, and each message delivered is recorded
// in status before the next is sent, so a failed write repeats one message at most (and its id lets a receiver drop
// the repeat).
import type { OperatorContext } from '../../runtime/manager.ts';
import type { Condition } from '../../runtime/status.ts';
import { types, type KubeObject } from '../../runtime/resources.ts';
import type { DestinationPolicy } from './destination.ts';
import { DestinationRefused, droppedText, payload, post, retryDelayMs, type Notification } from './webhook.ts';

export type DeliveryCondition = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/** Records what is still waiting (and, at the end, how delivery went); resolves with the object written. */
export type RecordOutbox<T> = (object: T, outbox: Notification[], condition?: DeliveryCondition) => Promise<T>;

const type = 'WebhookDelivered';

export async function deliver<T extends KubeObject>(ctx: OperatorContext, policy: DestinationPolicy, object: T,
  secretRef: { name: string; key: string }, outbox: Notification[], dropped: number, record: RecordOutbox<T>):
Promise<{ outbox: Notification[] }> {
  let waiting = [...outbox];
  // A failure makes the first message due later, so the reconcile set off by our own status write does not retry
  // at once. With nothing waiting there is nothing to delay.
  const overflow = dropped ? `${droppedText(dropped)}; ` : '';
  const failed = async (reason: string, message: string) => {
    if (!waiting.length) {
      await record(object, waiting, { type, status: 'False', reason, message });
      return { outbox: waiting };
    }
    const attempts = (waiting[0]!.attempts ?? 0) + 1;
    waiting = [{ ...waiting[0]!, attempts, notBefore: new Date(Date.now() + retryDelayMs(attempts)).toISOString() },
      ...waiting.slice(1)];
    await record(object, waiting, { type, status: 'False', reason: dropped ? 'OutboxOverflow' : reason,
      message: `${overflow}${message}; attempt ${attempts}, retrying in ${retryDelayMs(attempts) / 1000}s` });
    return { outbox: waiting };
  };
  const namespace = object.metadata.namespace!;
  const secret = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(types.secrets, namespace,
    secretRef.name);
  const encoded = secret?.data?.[secretRef.key];
  if (!secret) return failed('SecretNotFound', `Secret ${secretRef.name} not found`);
  if (!encoded) return failed('SecretKeyNotFound', `Secret ${secretRef.name} has no key ${secretRef.key}`);
  const url = Buffer.from(encoded, 'base64').toString('utf8').trim();
  while (waiting.length) {
    try {
      await post(url, payload(waiting[0]!, { namespace, name: object.metadata.name }), policy);
    } catch (error) {
      if (error instanceof DestinationRefused && error.detail) {
        ctx.log.info({ namespace, name: object.metadata.name, detail: error.detail }, 'webhook destination refused');
      }
      return failed(error instanceof DestinationRefused ? 'DestinationRefused' : 'DeliveryFailed', (error as Error).message);
    }
    waiting = waiting.slice(1);
    if (waiting.length) object = await record(object, waiting);
  }
  await record(object, waiting, dropped
    ? { type, status: 'False', reason: 'OutboxOverflow', message: `${overflow}every message since was delivered` }
    : { type, status: 'True', reason: 'Delivered', message: outbox.length ? 'every message was delivered'
      : 'the webhook Secret is in place; no message is waiting' });
  return { outbox: waiting };
}
