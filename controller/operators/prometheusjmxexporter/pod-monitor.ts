// The PodMonitor an exporter asks for with spec.podMonitor: Prometheus Operator users get its pods scraped without
// writing scrape config. The agent's port is not declared in the pod spec (it is loaded into a running JVM), so the
// endpoint keeps only the pods this operator marked as serving and points each target at the port the mark names;
// a pod's other declared ports yield the same target, which Prometheus counts once.
import type { KubeObject, ResourceType } from '../../runtime/resources.ts';
import { controllerReference, type Owner } from '../../runtime/objects.ts';
import { portAnnotation, recordAnnotation, scrapeAnnotation } from './plan.ts';
import type { PrometheusJmxExporterSpec } from './schema.ts';

export const podMonitorType: ResourceType = { group: 'monitoring.coreos.com', version: 'v1', resource: 'podmonitors',
  kind: 'PodMonitor', namespaced: true };

/** The name Prometheus gives a pod annotation's discovery label. */
export const annotationLabel = (annotation: string) =>
  `__meta_kubernetes_pod_annotation_${annotation.replace(/[^a-zA-Z0-9_]/g, '_')}`;

export function podMonitorFor(exporter: Owner, spec: PrometheusJmxExporterSpec): KubeObject {
  const { labels, interval } = spec.podMonitor ?? {};
  return {
    apiVersion: `${podMonitorType.group}/${podMonitorType.version}`, kind: podMonitorType.kind,
    metadata: { name: exporter.metadata.name, namespace: exporter.metadata.namespace,
      labels: { ...labels, 'app.kubernetes.io/managed-by': 'keelson' }, ownerReferences: [controllerReference(exporter)] },
    spec: {
      selector: { matchLabels: spec.labelSelector },
      podMetricsEndpoints: [{
        path: '/metrics',
        ...(interval ? { interval } : {}),
        relabelings: [
          { action: 'keep', sourceLabels: [annotationLabel(scrapeAnnotation)], regex: 'true' },
          // The mark is this exporter's: another exporter's pods sharing labels are its own PodMonitor's.
          { action: 'keep', sourceLabels: [annotationLabel(recordAnnotation)],
            regex: `.*"exporter":"${exporter.metadata.name.replaceAll('.', '\\.')}".*` },
          { action: 'replace', sourceLabels: ['__meta_kubernetes_pod_ip', annotationLabel(portAnnotation)],
            regex: '(.+);([0-9]+)', replacement: '$1:$2', targetLabel: '__address__' },
        ],
      }],
    },
  };
}
