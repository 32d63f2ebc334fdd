// The workload a pod belongs to, as the people who run it name it: a Deployment (through its ReplicaSet), a
// StatefulSet, a DaemonSet, a Job or the CronJob that made it, or the pod itself when nothing controls it. Alerts
// are grouped by it, as a crash-looping Deployment of 30 pods is one incident, not 30.
import type { ObjectMeta } from '../../runtime/resources.ts';

export interface Workload {
  kind: string;
  name: string;
}

/** As status, messages and labels write it: Deployment/shop. */
export const workloadName = (w: Workload) => `${w.kind}/${w.name}`;

const controllerOf = (meta: Pick<ObjectMeta, 'ownerReferences'>) => meta.ownerReferences?.find((r) => r.controller);

/**
 * `jobOwner` gives a Job's controller (a CronJob), if it has one and is known. A ReplicaSet belongs to the Deployment
 * whose name it carries before the pod-template-hash, the only way the Deployment controller names its ReplicaSets
 * (a ReplicaSet of its own, or another controller's, has no such hash label on its pods).
 */
export function workloadOf(pod: Pick<ObjectMeta, 'name' | 'labels' | 'ownerReferences'>,
  jobOwner: (job: string) => Workload | undefined): Workload {
  const owner = controllerOf(pod);
  if (!owner) return { kind: 'Pod', name: pod.name };
  const hash = pod.labels?.['pod-template-hash'];
  if (owner.kind === 'ReplicaSet' && owner.apiVersion === 'apps/v1' && hash && owner.name.endsWith(`-${hash}`)) {
    return { kind: 'Deployment', name: owner.name.slice(0, -hash.length - 1) };
  }
  if (owner.kind === 'Job' && owner.apiVersion === 'batch/v1') return jobOwner(owner.name) ?? { kind: 'Job', name: owner.name };
  return { kind: owner.kind, name: owner.name };
}

/** A Job's CronJob, from the Job's metadata. */
export function cronJobOf(job: Pick<ObjectMeta, 'ownerReferences'> | undefined): Workload | undefined {
  const owner = job && controllerOf(job);
  return owner?.kind === 'CronJob' && owner.apiVersion === 'batch/v1' ? { kind: 'CronJob', name: owner.name } : undefined;
}
