import { dns1123Label, dns1123Subdomain, labelMap, statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { array, integer, object, string, type Infer } from '../../api/schema.ts';
import { podMonitorSpec } from '../pod-monitor.ts';

export const prometheusJmxExporterSpec = object({
  labelSelector: labelMap({ description: 'Pods carrying all these labels get the exporter; at least one label (an ' +
    'empty selector would match every pod).', minProperties: 1, required: true }),
  config: object({
    configMapName: string({ description: 'The ConfigMap in this namespace holding the exporter\'s YAML config.',
      required: true, maxLength: 253, pattern: dns1123Subdomain }),
    configMapKey: string({ description: 'The key of the config in that ConfigMap.', required: true, maxLength: 253,
      pattern: '^[-._a-zA-Z0-9]+$' }),
  }, { description: 'The JMX exporter configuration.', required: true }),
  port: integer({ description: 'The port the exporter serves /metrics on inside the pod. A loaded agent cannot ' +
    'move: a changed port takes effect when the container restarts.', minimum: 1, maximum: 65535, required: true }),
  bindAddress: string({ description: 'The IPv4 address the exporter listens on inside the pod; default every ' +
    'interface. 127.0.0.1 keeps metrics to the pod, for a scraper in a sidecar.', maxLength: 15,
    pattern: '^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$' }),
  containerName: string({ description: 'The container running the JVM; default the pod\'s first container.',
    maxLength: 63, pattern: dns1123Label }),
  podMonitor: podMonitorSpec('selecting the pods that serve metrics; without it, the pods\' prometheus.io ' +
    'annotations are what a scraper goes by'),
}, { description: 'Which pods get the JMX exporter, with which config and port.', required: true });

export const prometheusJmxExporterStatus = statusOf({
  selector: string({ description: 'The pod selector, in kubectl\'s label-selector syntax.' }),
  endpointCount: integer({ description: 'Pods serving metrics now.', minimum: 0 }),
  metricsEndpoints: array(object({
    pod: string({ description: 'The pod.', required: true }),
    container: string({ description: 'The container whose JVM runs the agent.', required: true }),
    port: integer({ description: 'The metrics port.', required: true }),
  }, { description: 'One pod serving metrics.' }), { description: 'Pods serving metrics.', maxItems: 500 }),
  podMonitor: string({ description: 'The PodMonitor made for spec.podMonitor.' }),
  skippedPods: array(object({
    pod: string({ description: 'The pod.', required: true }),
    reason: string({ description: 'Why no exporter runs there.', required: true, maxLength: 1024 }),
  }, { description: 'A matching pod without the exporter.' }), { description: 'Matching pods skipped.', maxItems: 100 }),
});

export const PrometheusJmxExporter = defineKind({
  kind: 'PrometheusJmxExporter',
  shortNames: ['pje'],
  description: 'PrometheusJmxExporter loads the Prometheus JMX exporter agent into the running JVMs of matching ' +
    'pods, without a restart, and marks the pods for scraping.',
  spec: prometheusJmxExporterSpec,
  status: prometheusJmxExporterStatus,
  printerColumns: [
    { name: 'Selector', type: 'string', jsonPath: '.status.selector', description: 'The pods it applies to.' },
    { name: 'Port', type: 'integer', jsonPath: '.spec.port', description: 'The metrics port.' },
    { name: 'Endpoints', type: 'integer', jsonPath: '.status.endpointCount', description: 'Pods serving metrics.' },
  ],
  requesterRights: [
    { group: '', resource: 'pods', subresource: 'exec', verb: 'create',
      because: 'the controller runs commands in its pods for you to load the agent' },
    { group: '', resource: 'configmaps', verb: 'get', name: 'object.spec.config.configMapName',
      because: 'the controller reads that ConfigMap for you and writes it into the pods' },
    { group: 'monitoring.coreos.com', resource: 'podmonitors', verb: 'create', when: 'has(object.spec.podMonitor)',
      because: 'the controller makes a PodMonitor for you' },
  ],
});

export type PrometheusJmxExporterSpec = Infer<typeof prometheusJmxExporterSpec>;
export type PrometheusJmxExporterStatus = Infer<typeof prometheusJmxExporterStatus>;
export type PrometheusJmxExporterResource = ResourceOf<typeof PrometheusJmxExporter>;
