// keelson_podalert_pod_unhealthy (and keelson_clusterpodalert_pod_unhealthy): one series per pod a PodAlert counts
// unhealthy, as kube-state-metrics exposes pod
// states, so Prometheus can alert on and graph pods by workload and reason. A series goes when its pod recovers or
// goes, or its reason changes (then the new reason's comes). Cardinality is bounded: at most maxSeriesPerPodAlert per
// PodAlert, the most recent; the count of all is keelson_podalert_unhealthy_pods.
import { Gauge, type Registry } from 'prom-client';
import type { SourceLabel } from './alertmanager.ts';
import type { UnhealthyPod } from './groups.ts';

export const maxSeriesPerPodAlert = 500;
type Labels = Record<string, string>;

export class UnhealthyPodSeries {
  private readonly gauge: Gauge;
  /** Each PodAlert's series, by its namespace/name, so that those of pods no longer unhealthy can be removed. */
  private readonly bySource = new Map<string, Map<string, Labels>>();

  /** `source`: podalert, or clusterpodalert, whose pods are of several namespaces: the label naming it. */
  constructor(registry: Registry, private readonly source: SourceLabel) {
    const kind = source === 'podalert' ? 'PodAlert' : 'ClusterPodAlert';
    this.gauge = new Gauge({ name: `keelson_${source}_pod_unhealthy`, registers: [registry],
      labelNames: [source, 'namespace', 'pod', 'owner_kind', 'owner', 'reason'],
      help: `1 for each pod a ${kind} counts unhealthy (past its grace period, or crash-looping within it while its alert fires), by workload and reason (at most ` +
        `${maxSeriesPerPodAlert} per ${kind}, the most recent)` });
  }

  /** The series of `podAlert` become those of `pods`. */
  set(podAlert: { namespace?: string; name: string }, pods: readonly UnhealthyPod[]): void {
    const key = `${podAlert.namespace ?? ''}/${podAlert.name}`;
    const recent = [...pods].sort((a, b) => b.since.getTime() - a.since.getTime() || a.pod.localeCompare(b.pod))
      .slice(0, maxSeriesPerPodAlert);
    const next = new Map(recent.map((p): [string, Labels] => {
      const labels = { [this.source]: podAlert.name, namespace: p.namespace ?? podAlert.namespace ?? '', pod: p.pod,
        owner_kind: p.workload.kind, owner: p.workload.name, reason: p.reason };
      return [JSON.stringify(labels), labels];
    }));
    for (const [id, labels] of this.bySource.get(key) ?? []) if (!next.has(id)) this.gauge.remove(labels);
    for (const labels of next.values()) this.gauge.set(labels, 1);
    if (next.size) this.bySource.set(key, next);
    else this.bySource.delete(key);
  }

  remove(podAlert: { namespace?: string; name: string }): void {
    this.set(podAlert, []);
  }
}
