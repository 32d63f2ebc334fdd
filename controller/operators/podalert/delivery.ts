// Delivery of a PodAlert's outbox: the webhook Secret is read on every pass (a missing one is reported at once, not
// at the next incident), the destination is checked before any connection, and each message delivered is recorded
// in status before the next is sent, so a failed write repeats one message at most (and its id lets a receiver drop
// the repeat).
import type { OperatorContext } from '../../runtime/manager.ts';
import type { Condition } from '../../runtime/status.ts';
import { types, type KubeObject } from '../../runtime/resources.ts';
import type { DestinationPolicy } from './destination.ts';
import { render } from './formats.ts';
import type { PodAlertSpec } from './schema.ts';
import { DestinationRefused, droppedText, post, retryDelayMs, type Notification } from './webhook.ts';

export type DeliveryCondition = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/** Records what is still waiting (and, at the end, how delivery went); resolves with the object written. */
export type RecordOutbox<T> = (object: T, outbox: Notification[], condition?: DeliveryCondition) => Promise<T>;

const type = 'WebhookDelivered';

export async function deliver<T extends KubeObject>(ctx: OperatorContext, policy: DestinationPolicy, object: T,
  spec: Pick<PodAlertSpec, 'severity'> & { webhook: NonNullable<PodAlertSpec['webhook']> }, outbox: Notification[],
  dropped: number, record: RecordOutbox<T>):
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
  const namespace = object.metadata.namespace;
  // A ClusterPodAlert's references name their namespace.
  const read = async (ref: { name: string; key: string; namespace?: string }) => {
    const secret = await ctx.client.get<KubeObject & { data?: Record<string, string> }>(types.secrets,
      ref.namespace ?? namespace, ref.name);
    const encoded = secret?.data?.[ref.key];
    if (!secret) return { failure: ['SecretNotFound', `Secret ${ref.name} not found`] as [string, string] };
    if (!encoded) return { failure: ['SecretKeyNotFound', `Secret ${ref.name} has no key ${ref.key}`] as [string, string] };
    return { value: Buffer.from(encoded, 'base64').toString('utf8').trim() };
  };
  const { secretRef, routingKeySecretRef, format = 'generic' } = spec.webhook;
  const url = await read(secretRef);
  if (url.failure) return failed(...url.failure);
  const routingKey = routingKeySecretRef ? await read(routingKeySecretRef) : undefined;
  if (routingKey?.failure) return failed(...routingKey.failure);
  const context = { kind: object.kind ?? 'PodAlert', namespace, name: object.metadata.name, severity: spec.severity ?? 'warning',
    ...(routingKey ? { routingKey: routingKey.value } : {}) };
  while (waiting.length) {
    try {
      await post(url.value!, render[format](waiting[0]!, context), policy);
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
