// Finalizers as kube-rs's finalizer helper: make sure ours is on a live object, and on deletion run the cleanup, then
// take ours off so the object can go. Patches carry resourceVersion, so races end in 409 and a retry.
import type { Client } from './client.ts';
import type { KubeObject, ResourceType } from './resources.ts';

async function setFinalizers(client: Client, type: ResourceType, object: KubeObject, finalizers: string[]): Promise<void> {
  await client.patch(type, object.metadata.namespace, object.metadata.name,
    { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } }, 'merge');
}

export interface FinalizerSteps<R> {
  /** Reconcile a live object that carries the finalizer. */
  apply(): Promise<R>;
  /** Undo what the object caused, before it goes. Throws to retry later. */
  cleanup(): Promise<void>;
}

/**
 * Runs `apply` for live objects, after adding `finalizer` if missing (that write re-triggers the reconcile), and
 * `cleanup` then finalizer removal for objects being deleted.
 */
export async function withFinalizer<R>(client: Client, type: ResourceType, object: KubeObject, finalizer: string,
  steps: FinalizerSteps<R>): Promise<R | void> {
  const finalizers = object.metadata.finalizers ?? [];
  if (object.metadata.deletionTimestamp) {
    if (!finalizers.includes(finalizer)) return;
    await steps.cleanup();
    await setFinalizers(client, type, object, finalizers.filter((f) => f !== finalizer));
    return;
  }
  if (!finalizers.includes(finalizer)) {
    await setFinalizers(client, type, object, [...finalizers, finalizer]);
    return;
  }
  return steps.apply();
}
