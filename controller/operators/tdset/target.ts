// A workload the TDSet does not own, scaled through its scale subresource and nothing else. The replicas found before
// the first scale are recorded in status before it, and given back when the TDSet goes (kube-green's restore, kept
// where it cannot be garbage-collected first). Replicas someone else sets within a window are theirs until the next
// window: the TDSet scales at boundaries and when its spec changes, and never fights a person between them.
import { types, type ResourceType } from '../../runtime/resources.ts';
import { scaleResourceText, scaleResourceType, type ScaleResource } from './scale-resources.ts';
import type { Desired } from './schedule.ts';
import type { appsKinds, TDSetSpec, TDSetStatus } from './schema.ts';

export type TargetRef = NonNullable<TDSetSpec['scaleTargetRef']>;

const appsTargets: Record<(typeof appsKinds)[number], ResourceType> = {
  Deployment: types.deployments,
  StatefulSet: { group: 'apps', version: 'v1', resource: 'statefulsets', kind: 'StatefulSet', namespaced: true },
  ReplicaSet: { group: 'apps', version: 'v1', resource: 'replicasets', kind: 'ReplicaSet', namespaced: true },
};

/**
 * The resource `ref` names: an apps/v1 workload, or a custom resource among those the install lists; otherwise why
 * not, which the schema cannot say (the list is the install's).
 */
export function targetType(ref: TargetRef, listed: readonly ScaleResource[]): ResourceType | { notScalable: string } {
  const [group = '', version = ''] = ref.apiVersion.split('/');
  const apps = group === 'apps' ? appsTargets[ref.kind as keyof typeof appsTargets] : undefined;
  if (apps) return apps;
  // All three must match: admission asked the TDSet's creator for the resource the ref gives, and the kind is read.
  const custom = listed.find((r) => r.group === group && r.resource === ref.resource && r.kind === ref.kind);
  if (custom) return scaleResourceType(custom, version);
  return { notScalable: `this install scales Deployments, StatefulSets, ReplicaSets${listed.length ? ` and ` +
    listed.map(scaleResourceText).join(', ') : ''}, not ${ref.resource ?? ref.kind}.${group}:${ref.kind}: an admin ` +
    'adds it to the install\'s tdsetScaleResources (--tdset-scale-resources), which grants the controller its scale ' +
    'subresource' };
}

export const targetName = (ref: Pick<TargetRef, 'kind' | 'name'>) => `${ref.kind}/${ref.name}`;

/** Whether two refs name the same workload (one kind may be in two groups). */
export const sameTarget = (a: TargetRef, b: TargetRef) => a.kind === b.kind && a.name === b.name &&
  a.apiVersion.split('/')[0] === b.apiVersion.split('/')[0];

/** What the TDSet last did to its target, as status keeps it. */
export type Applied = Pick<TDSetStatus, 'originalReplicas' | 'appliedReplicas' | 'appliedWindow' | 'originalMinReplicas' |
  'appliedMinReplicas' | 'originalMaxReplicas' | 'appliedMaxReplicas'>;

/** The stretch of the schedule a decision is for: the window, its replicas, and when it ends. */
export const stretchOf = (desired: Desired, next: Date | undefined): string => `${desired.window}:${desired.replicas}` +
  `${desired.maxReplicas === undefined ? '' : `/${desired.maxReplicas}`}@${next?.toISOString() ?? 'never'}`;

export type Decision =
  | { kind: 'paused' }
  /** Someone else set the replicas within this stretch: left as they are. */
  | { kind: 'changed-elsewhere' }
  | { kind: 'scale'; from: number; to: number }
  | { kind: 'as-asked' };

export function decide(current: number, desired: Desired, stretch: string, applied: Applied, paused: boolean): Decision {
  if (paused) return { kind: 'paused' };
  if (applied.appliedWindow === stretch && applied.appliedReplicas !== undefined && current !== applied.appliedReplicas) {
    return { kind: 'changed-elsewhere' };
  }
  return current === desired.replicas ? { kind: 'as-asked' } : { kind: 'scale', from: current, to: desired.replicas };
}

/** The replicas to give back when the TDSet goes, if any: not when someone else changed them since it last did. */
export function restoreTo(current: number | undefined, applied: Applied): number | undefined {
  // No appliedReplicas: the first scale was cut short before it was recorded, and what it set is not known.
  if (current === undefined || applied.originalReplicas === undefined ||
    (applied.appliedReplicas !== undefined && current !== applied.appliedReplicas)) return undefined;
  return current === applied.originalReplicas ? undefined : applied.originalReplicas;
}

/** An autoscaler as the TDSet reads it. */
export interface Autoscaler {
  name: string;
  target?: { apiVersion?: string; kind?: string; name?: string };
  minReplicas?: number;
  maxReplicas: number;
  /** The kind and name of its controller (a KEDA ScaledObject makes one and owns it). */
  owner?: string;
}

/** Whether `autoscaler` scales the workload `ref` names. */
export const scales = (autoscaler: Autoscaler, ref: TargetRef): boolean => autoscaler.target?.kind === ref.kind &&
  autoscaler.target.name === ref.name && (autoscaler.target.apiVersion ?? '').split('/')[0] === ref.apiVersion.split('/')[0];

/** Why the TDSet must change nothing with these autoscalers on its target, or nothing when it may go on. */
export function autoscalerProblem(ref: TargetRef, named: string | undefined, autoscalers: readonly Autoscaler[]):
{ reason: string; message: string } | undefined {
  const target = targetName(ref);
  const on = autoscalers.filter((a) => scales(a, ref));
  const stranger = on.find((a) => a.name !== named);
  if (stranger) {
    return stranger.owner?.startsWith('ScaledObject/')
      ? { reason: 'KedaScaledObject', message: `HorizontalPodAutoscaler ${stranger.name} scales ${target} for KEDA's ` +
        `${stranger.owner}, which would undo any change to it: give that ScaledObject a cron trigger instead` }
      : { reason: 'AutoscalerConflict', message: `HorizontalPodAutoscaler ${stranger.name} scales ${target} too: name ` +
        'it in spec.horizontalPodAutoscaler, and the TDSet sets its minReplicas instead of the replicas' };
  }
  if (named === undefined) return undefined;
  const own = autoscalers.find((a) => a.name === named);
  if (!own) {
    return { reason: 'AutoscalerNotFound', message: `HorizontalPodAutoscaler ${named} does not exist; ${target} is left ` +
      'as it is until it does' };
  }
  if (!scales(own, ref)) return { reason: 'AutoscalerMismatch', message: `HorizontalPodAutoscaler ${named} does not scale ${target}` };
  // One something else keeps (KEDA's, say) would have its minReplicas put back as often as the TDSet set them.
  if (own.owner) {
    return { reason: own.owner.startsWith('ScaledObject/') ? 'KedaScaledObject' : 'AutoscalerControlled',
      message: `HorizontalPodAutoscaler ${named} is kept by ${own.owner}, which would undo any change to it` };
  }
  return undefined;
}

/** What to do to an autoscaler and its target. */
export interface AutoscaledPlan {
  /** Bounds to set, where they differ from the autoscaler's. */
  minReplicas?: number;
  maxReplicas?: number;
  scaleTo?: number;
  /** The maxReplicas the TDSet holds the autoscaler at after this, and those to give back; none when it holds none. */
  held?: { maxReplicas: number; original: number };
}

/**
 * With an autoscaler: its minReplicas follow the schedule (within its maxReplicas, which a stretch may set too) and
 * the replicas are its own, but at 0, which no autoscaler keeps (it stops while its target has none): the target is
 * scaled to 0, and up again when a window asks for more. Where a stretch gives no maxReplicas, the autoscaler gets
 * back its own, unless someone changed them since the TDSet set them; the next stretch that gives some records the
 * autoscaler's as they are then.
 */
export function autoscaledPlan(desired: Pick<Desired, 'replicas' | 'maxReplicas'>, current: number, autoscaler: Autoscaler,
  stretch: string, applied: Applied): AutoscaledPlan | 'changed-elsewhere' {
  // Within the stretch it last set them for, bounds (or replicas at 0) someone else changed are theirs.
  const changed = (set: number | undefined, now: number | undefined) => set !== undefined && now !== set;
  if (applied.appliedWindow === stretch && (changed(applied.appliedMinReplicas, autoscaler.minReplicas) ||
    changed(applied.appliedMaxReplicas, autoscaler.maxReplicas) ||
    (desired.replicas === 0 && current !== applied.appliedReplicas))) {
    return 'changed-elsewhere';
  }
  const holding = applied.appliedMaxReplicas !== undefined && applied.originalMaxReplicas !== undefined &&
    autoscaler.maxReplicas === applied.appliedMaxReplicas;
  const own = holding ? applied.originalMaxReplicas! : autoscaler.maxReplicas;
  const max = desired.maxReplicas ?? own;
  const min = autoscaler.minReplicas ?? 1;
  // At 0 the minimum is left as it is, but never above the maximum: the apiserver refuses that at every write.
  const minReplicas = desired.replicas === 0 ? Math.min(min, max) : Math.min(desired.replicas, max);
  const scaleTo = desired.replicas === 0 ? (current === 0 ? undefined : 0) : (current === 0 ? minReplicas : undefined);
  return { ...(minReplicas !== min ? { minReplicas } : {}), ...(max !== autoscaler.maxReplicas ? { maxReplicas: max } : {}),
    ...(scaleTo !== undefined ? { scaleTo } : {}),
    ...(desired.maxReplicas !== undefined ? { held: { maxReplicas: desired.maxReplicas, original: own } } : {}) };
}

/**
 * What to give back when the TDSet goes. With an autoscaler, its minReplicas (within its maxReplicas), and replicas
 * only out of the 0 the TDSet left them at: the autoscaler's own count is not the TDSet's to undo. Nothing someone
 * else changed since.
 */
export function restorePlan(current: number | undefined, applied: Applied, autoscaler: Autoscaler | undefined):
{ replicas?: number; minReplicas?: number; maxReplicas?: number } {
  if (!autoscaler) {
    const replicas = restoreTo(current, applied);
    return replicas === undefined ? {} : { replicas };
  }
  const { originalMinReplicas, appliedMinReplicas, originalReplicas, originalMaxReplicas, appliedMaxReplicas } = applied;
  const minBack = originalMinReplicas !== undefined && autoscaler.minReplicas === appliedMinReplicas &&
    appliedMinReplicas !== originalMinReplicas ? originalMinReplicas : undefined;
  const maxBack = originalMaxReplicas !== undefined && appliedMaxReplicas !== undefined &&
    autoscaler.maxReplicas === appliedMaxReplicas && appliedMaxReplicas !== originalMaxReplicas ? originalMaxReplicas : undefined;
  // Not below a minimum someone else set since: the apiserver would refuse both bounds.
  const maxReplicas = maxBack !== undefined && maxBack >= (minBack ?? autoscaler.minReplicas ?? 1) ? maxBack : undefined;
  const max = maxReplicas ?? autoscaler.maxReplicas;
  const minReplicas = minBack === undefined ? undefined : Math.min(minBack, max);
  const replicas = current === 0 && applied.appliedReplicas === 0 && (originalReplicas ?? 0) > 0
    ? Math.min(Math.max(originalReplicas!, originalMinReplicas ?? 1), max) : undefined;
  return { ...(minReplicas !== undefined ? { minReplicas } : {}), ...(maxReplicas !== undefined ? { maxReplicas } : {}),
    ...(replicas !== undefined ? { replicas } : {}) };
}
