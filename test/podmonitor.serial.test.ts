// PrometheusJmxExporter's PodMonitor on a cluster without the Prometheus Operator's CRDs, then with them. Serial: it
// takes the PodMonitor CRD away from the whole cluster for a while, and puts it back.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from './support/cluster.ts';
import type { ControllerProcess } from './support/controller-process.ts';
import { inNamespace } from './support/namespace.ts';
import { installCrds, startOperator } from './support/operator.ts';
import { installPodMonitorCrd, podMonitorCrdName } from './support/prometheus-operator.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;
let controller: ControllerProcess | undefined;
const { kubectl, get, apply, events } = inNamespace(cluster, () => namespace);

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'podmonitor'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-podmonitor-'));
  await installCrds(cluster);
  await cluster.kubectl(['delete', 'crd', podMonitorCrdName, '--ignore-not-found', '--wait=true', '--timeout=60s']);
});
after(async () => {
  await controller?.stop();
  await installPodMonitorCrd(cluster);
  await cleanup?.();
  await rm(scratch, { recursive: true, force: true });
});

describe('PrometheusJmxExporter asking for a PodMonitor', () => {
  it('says the cluster does not serve PodMonitors, exports all the same, and makes one once it does', async () => {
    controller = await startOperator(cluster, namespace, ['prometheusjmxexporter'], scratch);
    await apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jmx', namespace }, data: { 'config.yaml': 'rules: []' } });
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter', metadata: { name: 'monitored', namespace },
      spec: { labelSelector: { app: 'monitored' }, port: 9404, config: { configMapName: 'jmx', configMapKey: 'config.yaml' },
        podMonitor: {} } });
    const conditions = await waitFor('the PodMonitor condition', async () => {
      const list = (await get('pje', 'monitored'))?.status?.conditions;
      return list?.some((c: { type: string }) => c.type === 'PodMonitor') ? list : undefined;
    });
    const byType = Object.fromEntries(conditions.map((c: { type: string }) => [c.type, c]));
    assert.deepEqual([byType.PodMonitor.status, byType.PodMonitor.reason], ['False', 'PodMonitorNotServed']);
    assert.match(byType.PodMonitor.message, /install the Prometheus Operator's CRDs, or remove spec.podMonitor/);
    assert.deepEqual([byType.Ready.status, byType.Ready.reason], ['True', 'Exporting']);
    await waitFor('a Warning Event saying so', async () => (await events('monitored'))
      .some((e) => e.reason === 'PodMonitorNotServed' && e.type === 'Warning'));

    await installPodMonitorCrd(cluster);
    // Nothing tells the controller the CRD came; a touch of the exporter (or its next look, within 30 s) does.
    await kubectl('annotate', 'pje', 'monitored', 'example.com/touched=1');
    await waitFor('the PodMonitor', () => get('podmonitor', 'monitored'));
    await waitFor('the condition Applied', async () => (await get('pje', 'monitored'))?.status?.conditions
      ?.some((c: { type: string; reason: string }) => c.type === 'PodMonitor' && c.reason === 'Applied'));
  });
});
