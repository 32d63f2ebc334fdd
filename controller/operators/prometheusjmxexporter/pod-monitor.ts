// The PodMonitor an exporter asks for with spec.podMonitor: Prometheus Operator users get its pods scraped without
// writing scrape config. The agent's port is not declared in the pod spec (it is loaded into a running JVM), so the
// endpoint keeps only the pods this operator marked as serving and points each target at the port the mark names;
// a pod's other declared ports yield the same target, which Prometheus counts once.
import type { KubeObject } from '../../runtime/resources.ts';
import type { Owner } from '../../runtime/objects.ts';
import { discoveryLabel, podMonitorOf } from '../pod-monitor.ts';
import { portAnnotation, recordAnnotation, scrapeAnnotation } from './plan.ts';
import type { PrometheusJmxExporterSpec } from './schema.ts';

/** The name Prometheus gives a pod annotation's discovery label. */
export const annotationLabel = (annotation: string) => discoveryLabel('annotation', annotation);

export function podMonitorFor(exporter: Owner, spec: PrometheusJmxExporterSpec): KubeObject {
  return podMonitorOf(exporter, spec.podMonitor ?? {}, spec.labelSelector, {
    path: '/metrics',
    relabelings: [
      { action: 'keep', sourceLabels: [annotationLabel(scrapeAnnotation)], regex: 'true' },
      // The mark is this exporter's: another exporter's pods sharing labels are its own PodMonitor's.
      { action: 'keep', sourceLabels: [annotationLabel(recordAnnotation)],
        regex: `.*"exporter":"${exporter.metadata.name.replaceAll('.', '\\.')}".*` },
      { action: 'replace', sourceLabels: ['__meta_kubernetes_pod_ip', annotationLabel(portAnnotation)],
        regex: '(.+);([0-9]+)', replacement: '$1:$2', targetLabel: '__address__' },
    ],
  });
}
