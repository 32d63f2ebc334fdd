// Alerts as Alertmanager takes them (POST /api/v2/alerts), so that its routing, grouping, silences, inhibition and
// receivers do what they do well, and none of it is written again here. An alert is a workload's (or a pod's, with
// groupBy pod), its labels fixed for as long as it fires (reason and container are those it fired with), so that
// Alertmanager sees one alert, not a new one each time a crash loop changes state. Firing alerts are posted again
// every resendIntervalMs with an endsAt a few intervals ahead, as Prometheus does: should the controller stop, they
// resolve by themselves. A resolution is posted with endsAt at the moment it was seen, and kept in status until
// Alertmanager has it, so a restart loses none; posting one alert twice is harmless (Alertmanager keeps one per label
// set, and its notification log sends a receiver each notification once).
import { clip } from './budget.ts';
import type { PodAlertSpec, PodAlertStatus } from './schema.ts';

export const resendIntervalMs = 60_000;
/** Firing alerts posted at most (status lists fewer), and resolutions kept waiting at most. */
export const maxPostedAlerts = 1000;
export const maxPendingResolutions = 50;
/** How long a firing alert lasts in Alertmanager unless posted again. */
const firingLeaseMs = 5 * resendIntervalMs;
export const alertName = 'PodUnhealthy';
/** Labels the spec may not set: they say which alert this is. */
export const reservedLabels = ['alertname', 'namespace', 'podalert', 'clusterpodalert', 'owner_kind', 'owner', 'pod', 'container', 'reason',
  'severity'];

type WorkloadAlert = NonNullable<PodAlertStatus['workloads']>[number];
type PodAlertEntry = NonNullable<PodAlertStatus['alerts']>[number];
export type Resolution = NonNullable<PodAlertStatus['alertmanagerResolutions']>[number];

export interface PostableAlert {
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  startsAt: string;
  endsAt: string;
  generatorURL?: string;
}

/** What names an alert's source, in its labels and metrics: the lower-case kind. */
export type SourceLabel = 'podalert' | 'clusterpodalert';

interface Source {
  /** The label naming it. */
  label: SourceLabel;
  /** A PodAlert's namespace; a ClusterPodAlert has none, its alerts have theirs. */
  namespace?: string;
  name: string;
  spec: Pick<PodAlertSpec, 'severity' | 'labels' | 'runbookUrl'>;
}

/** What one alert is about: a workload's (or a pod's) entry, with the log tail of its most recent listed pod. */
export interface Subject {
  /** A ClusterPodAlert's alert's namespace. */
  namespace?: string;
  owner: string;
  pod?: string;
  reason: string;
  container?: string;
  since: string;
  summary: string;
  unhealthyPods: number;
  logTail?: string;
}

export function workloadSubject(workload: WorkloadAlert, summary: string, alerts: readonly PodAlertEntry[]): Subject {
  const listed = (workload.pods ?? []).map((pod) => alerts.find((a) => a.pod === pod && a.namespace === workload.namespace))
    .filter(Boolean) as PodAlertEntry[];
  // The log of a pod failing as the alert says, when one has it.
  const told = listed.find((a) => a.logTail && a.reason === workload.reason && a.container === workload.container) ??
    listed.find((a) => a.logTail) ?? listed[0];
  return { ...(workload.namespace ? { namespace: workload.namespace } : {}), owner: workload.owner, ...(workload.pod ? { pod: workload.pod } : {}), reason: workload.reason,
    since: workload.since, summary,
    unhealthyPods: workload.unhealthyPods, ...(workload.container ? { container: workload.container } : {}),
    ...(told?.logTail ? { logTail: told.logTail } : {}) };
}

export function labelsOf(source: Source, subject: Subject): Record<string, string> {
  const [ownerKind = '', owner = ''] = subject.owner.split('/');
  return { ...source.spec.labels, alertname: alertName, namespace: subject.namespace ?? source.namespace ?? '',
    [source.label]: source.name,
    owner_kind: ownerKind, owner, ...(subject.pod ? { pod: subject.pod } : {}),
    ...(subject.container ? { container: subject.container } : {}), reason: subject.reason,
    severity: source.spec.severity ?? 'warning' };
}

/** A resolution as status keeps it: what Alertmanager needs to end the alert, and its summary; no log tail. */
export const resolution = ({ labels, startsAt, endsAt, annotations }: PostableAlert): Resolution =>
  ({ labels, startsAt, endsAt, annotations: { summary: annotations?.summary ?? '' } });

/** The alert for `subject`, firing until a lease from `now`, or resolved at `resolvedAt`. */
export function postable(source: Source, subject: Subject, now: Date, resolvedAt?: string): PostableAlert {
  const annotations: Record<string, string> = { summary: subject.summary, pods: String(subject.unhealthyPods),
    ...(subject.logTail ? { description: clip(subject.logTail, 2000) } : {}),
    ...(source.spec.runbookUrl ? { runbook_url: source.spec.runbookUrl } : {}) };
  return { labels: labelsOf(source, subject), annotations, startsAt: subject.since,
    endsAt: resolvedAt ?? new Date(now.getTime() + firingLeaseMs).toISOString() };
}
