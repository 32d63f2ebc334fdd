// Unhealthy pods by the workload they belong to: one alert per workload (spec.groupBy: owner), counting its pods and
// naming the most recent, or one per pod (groupBy: pod); each with one reason and container that do not flap while
// its pods cycle through a crash loop's states (Alertmanager tells alerts apart by them).
import { clip } from './budget.ts';
import { workloadName, type Workload } from './owner.ts';
import type { PodAlertStatus } from './schema.ts';

export interface UnhealthyPod {
  pod: string;
  /** Set by a ClusterPodAlert, whose pods are of several namespaces. */
  namespace?: string;
  workload: Workload;
  reason: string;
  /** The failing container. */
  container?: string;
  since: Date;
}

/** One workload's alert, as status keeps it. */
export type WorkloadAlert = NonNullable<PodAlertStatus['workloads']>[number];

export const maxListedWorkloads = 100;
const maxNamedPods = 10;

/** What tells one alert from another: its namespace (a ClusterPodAlert's), workload, and pod with groupBy pod. */
export type AlertIdentity = Pick<WorkloadAlert, 'namespace' | 'owner' | 'pod'>;

/** Whether two entries are one alert. */
export const sameAlert = (a: AlertIdentity, b: AlertIdentity) =>
  a.owner === b.owner && a.pod === b.pod && a.namespace === b.namespace;

/** Reasons by how much they tell, least first; others rank between. */
const reasonRanks: string[][] = [['Pending', 'ContainerCreating', 'PodInitializing'], ['NotReady', 'Restarted'], [],
  ['Unschedulable', 'Evicted', 'Failed', 'Error', 'OOMKilled'], ['ImagePullBackOff', 'ErrImagePull', 'InvalidImageName',
    'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError'], ['CrashLoopBackOff']];
const rankOf = (reason: string) => {
  const rank = reasonRanks.findIndex((names) => names.includes(reason));
  return rank < 0 ? 2 : rank;
};
/** How long an alert keeps a reason none of its pods has any more, unless a worse one comes. */
export const reasonHoldMs = 5 * 60_000;

/** The value most of `values` have (ties: the first by name). */
function mostOf(values: string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0]?.[0];
}

/** The pods an alert names: those with its reason first, then by how much their reason tells, each the most recent
 * first (`recent` is). */
const worstFirst = (recent: UnhealthyPod[], reason: string) => [...recent].sort((a, b) =>
  Number(b.reason === reason) - Number(a.reason === reason) || rankOf(b.reason) - rankOf(a.reason));

export interface GroupOptions {
  /** One alert per pod rather than per workload. */
  perPod?: boolean;
  /** When a pod of the alert last had the reason it carries, if known (else it is taken as now). */
  lastSeen?: (alert: AlertIdentity) => number | undefined;
  now?: number;
}

/**
 * The alerts of `found`, most recent first: one per workload, or per pod. An alert's reason is what tells most about
 * it: it moves at once to a worse one (CrashLoopBackOff over NotReady), and to a lesser one only when none of its pods
 * has had its reason for reasonHoldMs, so that a crash loop passing through other states between back-offs does not
 * make Alertmanager see a new alert each time. Its container stays while a pod still has it failing.
 */
export function groupByWorkload(found: readonly UnhealthyPod[], previous: readonly WorkloadAlert[],
  { perPod = false, lastSeen = () => undefined, now = Date.now() }: GroupOptions = {}): WorkloadAlert[] {
  const groups = new Map<string, UnhealthyPod[]>();
  for (const pod of found) {
    const key = `${pod.namespace ?? ''} ${workloadName(pod.workload)} ${perPod ? pod.pod : ''}`;
    groups.set(key, [...groups.get(key) ?? [], pod]);
  }
  return [...groups.values()].map((pods) => {
    const recent = [...pods].sort((a, b) => b.since.getTime() - a.since.getTime() || a.pod.localeCompare(b.pod));
    const identity = { ...(recent[0]!.namespace ? { namespace: recent[0]!.namespace } : {}),
      owner: workloadName(recent[0]!.workload), ...(perPod ? { pod: recent[0]!.pod } : {}) };
    const before = previous.find((p) => sameAlert(p, identity));
    const reasons = recent.map((p) => p.reason);
    const worst = Math.max(...reasons.map(rankOf));
    const best = mostOf(reasons.filter((r) => rankOf(r) === worst))!;
    const kept = before?.reason;
    const holding = kept !== undefined && rankOf(kept) >= worst &&
      (reasons.includes(kept) || now - (lastSeen(identity) ?? now) < reasonHoldMs);
    const reason = holding ? kept : best;
    // The container moves only with the reason: both are the alert's identity to Alertmanager.
    const container = holding && before ? before.container : mostOf(recent.filter((p) => p.reason === reason)
      .map((p) => p.container).filter((c): c is string => c !== undefined));
    const earliest = Math.min(...pods.map((p) => p.since.getTime()));
    // While it fires, an alert began when it began (its oldest pod may recover meanwhile): PagerDuty's dedup key and
    // Alertmanager's startsAt stay.
    const since = before?.since ?? new Date(earliest).toISOString().replace('.000Z', 'Z');
    return { ...identity, unhealthyPods: pods.length, reason, ...(container ? { container } : {}),
      since, pods: worstFirst(recent, reason).slice(0, maxNamedPods).map((p) => p.pod),
      latest: recent[0]!.since.getTime() };
  }).sort((a, b) => b.latest - a.latest || (a.namespace ?? '').localeCompare(b.namespace ?? '') ||
    a.owner.localeCompare(b.owner) || (a.pod ?? '').localeCompare(b.pod ?? ''))
    .map(({ latest: _latest, ...group }) => group);
}

/** `Deployment shop in apps: 3 pods unhealthy (CrashLoopBackOff): shop-1, shop-2, shop-3`. */
export function workloadText(group: WorkloadAlert, namespace = group.namespace): string {
  const [kind, name] = group.owner.split('/');
  const named = group.pods ?? [];
  const more = group.unhealthyPods > named.length ? `, and ${group.unhealthyPods - named.length} more` : '';
  return clip(`${kind} ${name} in ${namespace}: ${group.unhealthyPods} pod${group.unhealthyPods === 1 ? '' : 's'} ` +
    `unhealthy (${group.reason}): ${named.join(', ')}${more}`, 4096);
}

export function workloadResolvedText(group: WorkloadAlert, namespace = group.namespace): string {
  const [kind, name] = group.owner.split('/');
  return `${kind} ${name} in ${namespace} has no unhealthy pod now (was ${group.reason})`;
}
