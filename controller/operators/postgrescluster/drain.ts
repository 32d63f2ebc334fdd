// A drain, as kubectl, the cluster autoscaler and Karpenter begin one: the node is cordoned (no new pods), then its
// pods are evicted. The cordon is the warning a primary gets to be switched over before its eviction; its own
// PodDisruptionBudget (objects.ts) refuses that eviction meanwhile.
import type { KubeObject } from '../../runtime/resources.ts';

/** Taints that say a node is being emptied, beside kubectl's cordon (spec.unschedulable). */
const emptyingTaints = ['node.kubernetes.io/unschedulable', 'ToBeDeletedByClusterAutoscaler', 'karpenter.sh/disrupted'];

interface NodeFields {
  spec?: { unschedulable?: boolean; taints?: { key: string; effect: string }[] };
}

/** What the operator reads of a Node: the cache keeps no more of any (their status changes every few seconds). */
export const nodeView = { keep: ['spec.unschedulable', 'spec.taints'] };

/** Whether a node takes no new pods because it is being emptied; a node not known is not. */
export function cordoned(node: KubeObject | undefined): boolean {
  const spec = (node as NodeFields | undefined)?.spec;
  return spec?.unschedulable === true || (spec?.taints ?? []).some((t) => emptyingTaints.includes(t.key) &&
    t.effect !== 'PreferNoSchedule');
}

/** Whether an update to a node changes what the operator acts on. */
export const cordonChanged = (old: KubeObject, updated: KubeObject): boolean => cordoned(old) !== cordoned(updated);
