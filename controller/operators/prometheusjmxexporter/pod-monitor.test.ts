import assert from 'node:assert/strict';
import { it } from 'node:test';
import { annotationLabel, podMonitorFor } from './pod-monitor.ts';

const exporter = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter',
  metadata: { name: 'orders.v2', namespace: 'shop', uid: 'u-1' } };
const spec = { labelSelector: { app: 'orders' }, port: 9404, config: { configMapName: 'jmx', configMapKey: 'c' } };

it('names annotations as Prometheus\'s pod discovery does', () => {
  assert.equal(annotationLabel('prometheus.io/scrape'), '__meta_kubernetes_pod_annotation_prometheus_io_scrape');
  assert.equal(annotationLabel('keelson.dev/jmx-exporter'), '__meta_kubernetes_pod_annotation_keelson_dev_jmx_exporter');
});

it('keeps only the pods this exporter marked, with its name matched literally', () => {
  const monitor = podMonitorFor(exporter, { ...spec, podMonitor: {} }) as any;
  const [, own] = monitor.spec.podMetricsEndpoints[0].relabelings;
  const record = (name: string) => JSON.stringify({ exporter: name, container: 'app', port: 9404 });
  const keeps = (value: string) => new RegExp(`^(?:${own.regex})$`).test(value);
  assert.ok(keeps(record('orders.v2')));
  assert.ok(!keeps(record('ordersXv2')));
  assert.ok(!keeps(record('orders.v2-canary')));
});

it('leaves the interval to Prometheus unless one is given, and carries the labels asked for', () => {
  const plain = podMonitorFor(exporter, { ...spec, podMonitor: {} }) as any;
  assert.equal(plain.spec.podMetricsEndpoints[0].interval, undefined);
  const labelled = podMonitorFor(exporter, { ...spec, podMonitor: { labels: { release: 'prom' }, interval: '15s' } }) as any;
  assert.equal(labelled.spec.podMetricsEndpoints[0].interval, '15s');
  assert.equal(labelled.metadata.labels.release, 'prom');
  assert.deepEqual(labelled.metadata.ownerReferences, [{ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter',
    name: 'orders.v2', uid: 'u-1', controller: true, blockOwnerDeletion: true }]);
});
