// Whether a pod is unhealthy, why, since when, and which container's log tells the story.
// Unhealthy: phase Pending, Failed or Unknown; or Running with a container waiting, not ready, or restarted after a
// failure less than a minute ago (a crash loop runs for moments between its back-offs: that is no recovery).
// Succeeded pods (finished Jobs) and pods being deleted are not. Init containers come first: one that crashes is the
// story.
import type { ContainerStatus, Pod } from '../../runtime/core.ts';
import { clip } from './budget.ts';

/** What of a pod the health rules read. */
export type PodView = Pick<Pod, 'metadata' | 'status'>;

/** The fields of a pod a PodView reads: all that PodAlert needs the cache to keep of pods. */
export const podViewFields = ['status.phase', 'status.reason', 'status.message', 'status.conditions',
  ...['initContainerStatuses', 'containerStatuses'].flatMap((list) =>
    ['name', 'ready', 'restartCount', 'state', 'lastState'].map((field) => `status.${list}.${field}`))];

export interface ContainerReport {
  name: string;
  state: string;
  ready: boolean;
  reason?: string;
  message?: string;
  restartCount: number;
}

export interface Trouble {
  phase: string;
  reason: string;
  message?: string;
  since: Date;
  /** The container whose log to capture. */
  container?: string;
  /** Capture the previous instance's log: the current one is a restart that has not run yet. */
  previousLog: boolean;
  containers: ContainerReport[];
}

function report(status: ContainerStatus): ContainerReport {
  const [state, detail] = Object.entries(status.state ?? {})[0] ?? ['unknown', {}];
  const { reason, message } = detail as { reason?: string; message?: string };
  return { name: status.name ?? '', state, ready: status.ready ?? false, restartCount: status.restartCount ?? 0,
    ...(reason ? { reason } : {}), ...(message ? { message: clip(message, 4096) } : {}) };
}

const isCompleted = (c: ContainerStatus) => c.state?.terminated?.exitCode === 0;

/** How long a container restarted after a failure must run before it counts as healthy again. */
export const stableAfterMs = 60_000;

const restartedLately = (c: ContainerStatus, now: Date) => {
  const started = c.state?.running?.startedAt;
  const failed = c.lastState?.terminated && c.lastState.terminated.exitCode !== 0;
  return Boolean(failed && started && now.getTime() - Date.parse(started) < stableAfterMs);
};

const date = (value: string | undefined, fallback: Date) => (value ? new Date(value) : fallback);

/** The kubelet's longest back-off between a crash loop's restarts. */
const longestBackOffMs = 5 * 60_000;

/**
 * Whether a container of the pod failed within `withinMs` and the longest back-off: a crash loop's pod, not one only
 * starting, nor one that failed once long ago.
 */
export const failedLately = (pod: PodView, withinMs: number, now = new Date()) => [...pod.status?.initContainerStatuses ?? [],
  ...pod.status?.containerStatuses ?? []].some(({ lastState }) => lastState?.terminated &&
  lastState.terminated.exitCode !== 0 && now.getTime() - Date.parse(lastState.terminated.finishedAt ?? '') <
  withinMs + longestBackOffMs);

export function trouble(pod: PodView, now = new Date()): Trouble | undefined {
  if (pod.metadata.deletionTimestamp) return undefined;
  const status = pod.status ?? {};
  const phase = status.phase ?? 'Pending';
  if (phase === 'Succeeded') return undefined;
  const statuses = [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])];
  // A completed init container is terminated and not ready: only a running or waiting one can be failing.
  const first = statuses.find((c) => (!c.ready && !isCompleted(c)) || c.state?.waiting || restartedLately(c, now));
  // Most pods run well: every reconcile judges each of them, so those are passed before anything is built.
  if (phase === 'Running' && !first) return undefined;
  const created = date(pod.metadata.creationTimestamp, new Date(0));
  const containers = statuses.map(report);
  const waiting = first?.state?.waiting;
  const condition = (type: string) => status.conditions?.find((c) => c.type === type);
  const previousLog = Boolean(first && (waiting?.reason === 'CrashLoopBackOff' ||
    ((first.restartCount ?? 0) > 0 && first.lastState?.terminated)));
  const base = { phase, containers, previousLog, ...(first ? { container: first.name } : {}) };

  switch (phase) {
    case 'Running': {
      if (!first) return undefined;
      const ready = condition('Ready');
      const since = ready?.status === 'False' ? date(ready.lastTransitionTime, created) : created;
      if (first.ready && !waiting) {
        const last = first.lastState!.terminated!;
        return { ...base, reason: 'Restarted', since, message: `container ${first.name} runs again after exit code ` +
          `${last.exitCode}${last.reason ? ` (${last.reason})` : ''}; healthy once it has run for ${stableAfterMs / 1000}s` };
      }
      return { ...base, reason: waiting?.reason ?? 'NotReady', since,
        ...(waiting?.message ? { message: waiting.message } : first.state?.running ? { message: `container ${first.name} is not ready` } : {}) };
    }
    case 'Pending': {
      const scheduled = condition('PodScheduled');
      if (waiting?.reason) return { ...base, reason: waiting.reason, since: created, ...(waiting.message ? { message: waiting.message } : {}) };
      if (scheduled?.status === 'False') {
        return { ...base, reason: scheduled.reason ?? 'Unschedulable', since: created,
          ...(scheduled.message ? { message: scheduled.message } : {}) };
      }
      return { ...base, reason: 'Pending', since: created };
    }
    case 'Failed': {
      const ended = statuses.map((c) => c.state?.terminated?.finishedAt).filter(Boolean).sort().at(-1);
      const terminated = statuses.find((c) => c.state?.terminated)?.state?.terminated;
      return { ...base, reason: status.reason ?? terminated?.reason ?? 'Failed', since: date(ended, created),
        ...(status.message ?? terminated?.message ? { message: status.message ?? terminated?.message } : {}) };
    }
    default:
      return { ...base, reason: status.reason ?? phase, since: created, ...(status.message ? { message: status.message } : {}) };
  }
}

/** Whether a log's body is what the kubelet writes when it could not read the log, not the log. */
export const isKubeletLogFailure = (text: string) =>
  /^(unable to retrieve container logs for |failed to try resolving symlinks in path )/.test(text);

export function alertText(alert: { pod: string; namespace: string; reason: string; container?: string; restarts: number;
  message?: string }): string {
  const { restarts } = alert;
  const where = alert.container ? ` (container ${alert.container}, ${restarts} restart${restarts === 1 ? '' : 's'})` : '';
  return clip(`Pod ${alert.pod} in ${alert.namespace} is unhealthy: ${alert.reason}${where}` +
    (alert.message ? `: ${alert.message}` : ''), 4096);
}
