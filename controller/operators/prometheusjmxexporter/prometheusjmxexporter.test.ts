// End to end: real JVMs on this machine stand behind simulated pods (kwok runs their exec here), and the operator,
// running as its ServiceAccount, loads the real exporter agent into them through the apiserver's pods/exec.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { execReady, javaContainer, reportContainerStarted, type JavaContainer } from '../../../test/support/jvm.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { installPodMonitorCrd } from '../../../test/support/prometheus-operator.ts';
import { freePort } from '../../../cluster/ports.ts';
import { isReady, waitForPod, withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { javaAppImage, toolsImage } from '../../../images/recipes.ts';
import { recordAnnotation } from './plan.ts';

const cluster = testCluster();
const { kubectl, get, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let scratch: string;
let controller: ControllerProcess;
const cleanups: (() => Promise<void>)[] = [];


function exporter(name: string, spec: object): Promise<unknown> {
  return apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter', metadata: { name, namespace },
    spec: { config: { configMapName: 'jmx', configMapKey: 'config.yaml' }, bindAddress: '127.0.0.1', ...spec } });
}

function configMap(config: string): Promise<unknown> {
  return apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jmx', namespace }, data: { 'config.yaml': config } });
}

/** A Running pod labelled app=<app> whose container's exec (and JVMs) are on this machine, started as `containerID`. */
async function javaPod(name: string, app: string, containerID = `containerd://${name}-1`): Promise<JavaContainer> {
  const container = await javaContainer(cluster, { namespace, pod: name });
  cleanups.push(container.cleanup);
  await kubectl('run', name, '--image=registry.example/java-app:1', `--labels=app=${app}`);
  await waitFor(`pod ${name} running`, async () => (await get('pod', name))?.status?.phase === 'Running');
  await execReady(cluster, { namespace, pod: name });
  await reportContainerStarted(cluster, { namespace, pod: name }, containerID);
  return container;
}

async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.text();
}

function skippedReason(name: string, pod: string): Promise<string> {
  return waitFor(`${name} to report pod ${pod} skipped`, async () =>
    (await get('pje', name))?.status?.skippedPods?.find((s: { pod: string }) => s.pod === pod)?.reason);
}

before(async () => {
  const ns = await freshNamespace(cluster, 'pje');
  namespace = ns.name;
  cleanups.push(ns.cleanup);
  scratch = await mkdtemp(join(tmpdir(), 'keelson-pje-test-'));
  await Promise.all([installCrds(cluster), installPodMonitorCrd(cluster)]);
  await configMap('rules:\n- pattern: ".*"\n');
  controller = await startOperator(cluster, namespace, ['prometheusjmxexporter'], scratch);
});
after(async () => {
  await controller?.stop();
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

describe('PrometheusJmxExporter against the real control plane, as its ServiceAccount', () => {
  it('loads the agent into the running JVM, without a restart, and marks the pod for scraping', async () => {
    const container = await javaPod('orders', 'orders');
    await container.startJvm();
    const port = await freePort();
    await exporter('orders', { labelSelector: { app: 'orders' }, port });

    const metrics = await waitFor('JVM metrics on the exporter port', () => scrape(port), { timeoutMs: 60_000 });
    assert.match(metrics, /^jvm_memory_used_bytes\{area="heap"\} /m);
    assert.match(metrics, /^jmx_exporter_build_info\{name="jmx_prometheus_javaagent",version="1\.0\.1"\} 1/m);
    const pod = await waitFor('pod annotations', async () => {
      const p = await get('pod', 'orders');
      return p.metadata.annotations?.['prometheus.io/scrape'] ? p : undefined;
    });
    assert.equal(pod.metadata.annotations['prometheus.io/scrape'], 'true');
    assert.equal(pod.metadata.annotations['prometheus.io/port'], String(port));
    assert.equal(JSON.parse(pod.metadata.annotations[recordAnnotation]).containerID, 'containerd://orders-1');

    const status = await waitFor('status to list the endpoint', async () => {
      const s = (await get('pje', 'orders'))?.status;
      return s?.endpointCount === 1 ? s : undefined;
    });
    assert.deepEqual(status.metricsEndpoints, [{ pod: 'orders', container: 'orders', port }]);
    assert.equal(status.conditions.find((c: { type: string }) => c.type === 'Ready').reason, 'Exporting');
    const columns = (await kubectl('get', 'pje', 'orders')).stdout.split('\n');
    assert.match(columns[0]!, /^NAME\s+SELECTOR\s+PORT\s+ENDPOINTS\s+READY\s+AGE$/);
    assert.match(columns[1]!, new RegExp(`^orders\\s+app=orders\\s+${port}\\s+1\\s+True\\s+`));
    const reasons = (await events('orders')).map((e) => e.reason);
    assert.ok(reasons.includes('JmxExporterLoaded') && reasons.includes('Injected'));
  });

  it('injects a restarted container (a new ID) again, and an unchanged one never twice', async () => {
    const container = await javaPod('billing', 'billing');
    const first = await container.startJvm();
    const port = await freePort();
    await exporter('billing', { labelSelector: { app: 'billing' }, port });
    await waitFor('the first JVM serving metrics', () => scrape(port), { timeoutMs: 60_000 });
    await kubectl('label', 'pod', 'billing', 'touched=yes');
    const loads = async () => (await events('billing')).filter((e: { reason: string }) => e.reason === 'JmxExporterLoaded')
      .reduce((n: number, e: { series?: { count: number } }) => n + (e.series?.count ?? 1), 0);
    await waitFor('the label change reconciled', async () =>
      (await get('pje', 'billing'))?.status?.endpointCount === 1);
    assert.equal(await loads(), 1);

    await first.stop();
    await assert.rejects(scrape(port));
    await container.startJvm();
    await reportContainerStarted(cluster, { namespace, pod: 'billing' }, 'containerd://billing-2', 1);
    await waitFor('the restarted JVM serving metrics', () => scrape(port), { timeoutMs: 60_000 });
    const record = JSON.parse((await get('pod', 'billing')).metadata.annotations[recordAnnotation]);
    assert.equal(record.containerID, 'containerd://billing-2');
    assert.equal(await loads(), 2);

    // A lost record (say, the annotation patch failed after the load) is rebuilt from the mark left in the container.
    await kubectl('annotate', 'pod', 'billing', `${recordAnnotation}-`);
    const restored = await waitFor('the record restored', async () =>
      (await get('pod', 'billing')).metadata.annotations?.[recordAnnotation]);
    assert.equal(JSON.parse(restored).containerID, 'containerd://billing-2');
    assert.deepEqual((await get('pje', 'billing')).status.skippedPods ?? [], []);
    await scrape(port);
  });

  it('rewrites a changed config into the container, and the exporter picks it up', async () => {
    const port = Number((await get('pje', 'orders')).spec.port);
    assert.match(await scrape(port), /^java_lang_Memory_HeapMemoryUsage_used /m);
    await configMap('includeObjectNames: ["java.lang:type=Threading"]\nrules:\n- pattern: ".*"\n');
    await waitFor('the exporter to reload its config', async () => {
      const metrics = await scrape(port);
      return /^jmx_config_reload_success_total [1-9]/m.test(metrics) &&
        !/^java_lang_Memory_HeapMemoryUsage_used /m.test(metrics) && /^java_lang_Threading_ThreadCount /m.test(metrics);
    }, { timeoutMs: 60_000 });
    assert.ok((await events('orders')).some((e) => e.reason === 'ConfigUpdated'));
  });

  it('says a port change needs a restart, and keeps reporting the port the agent serves', async () => {
    const port = Number((await get('pje', 'orders')).spec.port);
    await kubectl('patch', 'pje', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { port: port + 1 } }));
    const ready = await waitFor('RestartNeeded', async () => {
      const s = (await get('pje', 'orders')).status;
      return s.observedGeneration === 2 ? s.conditions.find((c: { type: string }) => c.type === 'Ready') : undefined;
    });
    assert.equal(ready.status, 'False');
    assert.equal(ready.reason, 'RestartNeeded');
    assert.match(ready.message, /restart the containers of orders/);
    assert.deepEqual((await get('pje', 'orders')).status.metricsEndpoints, [{ pod: 'orders', container: 'orders', port }]);
    assert.equal((await get('pod', 'orders')).metadata.annotations['prometheus.io/port'], String(port));
    await scrape(port);
  });

  it('reports zero JVMs, two JVMs and a taken port, loads nothing there, and keeps every JVM running', async () => {
    const port = await freePort();
    const none = await javaPod('idle-none', 'batch');
    const two = await javaPod('idle-two', 'batch');
    const busy = await javaPod('idle-busy', 'batch');
    await two.startJvm();
    await two.startJvm();
    const busyJvm = await busy.startJvm();
    const taken = createServer().listen(port, '127.0.0.1');
    await exporter('batch', { labelSelector: { app: 'batch' }, port });
    assert.match(await skippedReason('batch', 'idle-none'), /no JVM runs in container idle-none/);
    assert.match(await skippedReason('batch', 'idle-two'), /2 JVMs run in container idle-two \(pids \d+, \d+\)/);
    assert.match(await skippedReason('batch', 'idle-busy'), new RegExp(`port ${port} is already in use`));
    const status = (await get('pje', 'batch')).status;
    assert.equal(status.endpointCount, 0);
    assert.equal(status.conditions.find((c: { type: string }) => c.type === 'Ready').reason, 'PodsSkipped');
    for (const jvm of [...two.jvms, busyJvm]) assert.doesNotThrow(() => process.kill(jvm.pid, 0));
    assert.equal(await controller.readyz(), 200);
    assert.ok((await events('idle-two')).some((e) => e.reason === 'JmxExporterFailed' && e.type === 'Warning'));

    // A refusal is remembered on the pod: a change to the pod alone neither tries it again nor reports it again.
    const execs = () => controller.metric('keelson_client_requests_total', { verb: 'create', resource: 'pods' });
    const failures = async () => (await events('idle-two')).filter((e: { reason: string }) => e.reason === 'JmxExporterFailed')
      .reduce((n: number, e: { series?: { count: number } }) => n + (e.series?.count ?? 1), 0);
    const [execsBefore, failuresBefore] = [await execs(), await failures()];
    const reconciles = () => controller.metric('controller_runtime_reconcile_total', { controller: 'prometheusjmxexporter' });
    const reconcilesBefore = await reconciles();
    await kubectl('label', 'pod', 'idle-two', 'touched=yes');
    await waitFor('the label change reconciled', async () => await reconciles() > reconcilesBefore);
    assert.equal(await execs(), execsBefore, 'a refused container was inspected again');
    assert.equal(await failures(), failuresBefore, 'a refusal was reported again');

    // On this machine every pod shares one network, so the port must be free for the late JVM as well.
    await new Promise((resolve) => taken.close(resolve));
    await none.startJvm();
    await reportContainerStarted(cluster, { namespace, pod: 'idle-none' }, 'containerd://idle-none-2', 1);
    await waitFor('the late JVM exported once its container restarted', async () =>
      (await get('pje', 'batch'))?.status?.metricsEndpoints?.some((e: { pod: string }) => e.pod === 'idle-none'));
  });

  it('gives a container one agent when two exporters select it at once', async () => {
    const container = await javaPod('shared', 'shared');
    await container.startJvm();
    const [portA, portB] = [await freePort(), await freePort()];
    const spec = (port: number) => ({ labelSelector: { app: 'shared' }, port, config: { configMapName: 'jmx',
      configMapKey: 'config.yaml' }, bindAddress: '127.0.0.1' });
    await apply({ apiVersion: 'v1', kind: 'List', items: [['shared-a', portA], ['shared-b', portB]].map(([name, port]) =>
      ({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter', metadata: { name, namespace },
        spec: spec(port as number) })) });
    const [a, b] = await waitFor('one exporter serving the pod, the other skipping it', async () => {
      const both = await Promise.all(['shared-a', 'shared-b'].map(async (name) => (await get('pje', name))?.status));
      const serving = both.filter((s) => s?.endpointCount === 1).length;
      const skipping = both.filter((s) => s?.skippedPods?.some((p: { reason: string }) => /already exports it/.test(p.reason))).length;
      return serving === 1 && skipping === 1 ? both : undefined;
    }, { timeoutMs: 60_000 });
    const [winner, loser] = a.endpointCount === 1 ? [portA, portB] : [portB, portA];
    assert.ok(b, 'both exporters reported');
    await scrape(winner);
    await assert.rejects(scrape(loser), 'a second agent serves the same JVM');
  });

  it('reports a missing ConfigMap or key as a condition', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter', metadata: { name: 'unconfigured',
      namespace }, spec: { labelSelector: { app: 'nobody' }, port: 9404, config: { configMapName: 'absent',
      configMapKey: 'config.yaml' } } });
    const ready = await waitFor('ConfigMapNotFound', async () => (await get('pje', 'unconfigured'))?.status?.conditions
      ?.find((c: { reason: string }) => c.reason === 'ConfigMapNotFound'));
    assert.equal(ready.status, 'False');
    assert.match(ready.message, /ConfigMap absent does not exist/);
    await kubectl('patch', 'pje', 'unconfigured', '--type=merge', '-p',
      JSON.stringify({ spec: { config: { configMapName: 'jmx', configMapKey: 'missing.yaml' } } }));
    await waitFor('ConfigKeyNotFound', async () => (await get('pje', 'unconfigured'))?.status?.conditions
      ?.some((c: { reason: string }) => c.reason === 'ConfigKeyNotFound'));
  });

  it('makes the PodMonitor spec.podMonitor asks for, keeps it in step, and removes it when no longer asked', async () => {
    await exporter('monitored', { labelSelector: { app: 'monitored' }, port: 9404,
      podMonitor: { labels: { release: 'prometheus' }, interval: '30s' } });
    // The Prometheus Operator's own CRD (its schema) accepted it.
    const monitor = await waitFor('the PodMonitor', () => get('podmonitor', 'monitored'));
    assert.deepEqual(monitor.metadata.labels, { release: 'prometheus', 'app.kubernetes.io/managed-by': 'keelson' });
    assert.equal(monitor.metadata.ownerReferences[0].name, 'monitored');
    assert.deepEqual(monitor.spec.selector, { matchLabels: { app: 'monitored' } });
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    assert.deepEqual([endpoint.path, endpoint.interval], ['/metrics', '30s']);
    assert.deepEqual(endpoint.relabelings.at(-1), { action: 'replace', targetLabel: '__address__', regex: '(.+);([0-9]+)',
      replacement: '$1:$2', sourceLabels: ['__meta_kubernetes_pod_ip', '__meta_kubernetes_pod_annotation_prometheus_io_port'] });
    const condition = await waitFor('the PodMonitor condition', async () => (await get('pje', 'monitored'))?.status
      ?.conditions?.find((c: { type: string }) => c.type === 'PodMonitor'));
    assert.deepEqual([condition.status, condition.reason], ['True', 'Applied']);
    assert.equal((await get('pje', 'monitored')).status.podMonitor, 'monitored');

    await kubectl('patch', 'pje', 'monitored', '--type=merge', '-p', '{"spec":{"podMonitor":{"interval":"1m"}}}');
    await waitFor('the new interval', async () => (await get('podmonitor', 'monitored'))?.spec.podMetricsEndpoints[0]
      .interval === '1m');
    await kubectl('patch', 'pje', 'monitored', '--type=json', '-p', '[{"op":"remove","path":"/spec/podMonitor"}]');
    await waitFor('the PodMonitor gone, and the condition and status with it', async () => {
      const status = (await get('pje', 'monitored'))?.status;
      return !(await get('podmonitor', 'monitored')) && status.podMonitor === undefined &&
        !status.conditions.some((c: { type: string }) => c.type === 'PodMonitor');
    });
  });

  it('has the apiserver refuse a port out of range, missing config fields, an empty selector and a bad interval', async () => {
    const refused = async (spec: object, pattern: RegExp) => {
      const result = apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter',
        metadata: { name: 'invalid', namespace }, spec });
      await assert.rejects(result, pattern);
    };
    const config = { configMapName: 'jmx', configMapKey: 'config.yaml' };
    await refused({ labelSelector: { app: 'x' }, port: 70000, config }, /spec.port: Invalid value: 70000/);
    await refused({ labelSelector: { app: 'x' }, port: 9404, config: { configMapName: 'jmx' } },
      /spec.config.configMapKey: Required value/);
    await refused({ labelSelector: {}, port: 9404, config }, /spec.labelSelector: Invalid value/);
    await refused({ labelSelector: { app: 'x' }, port: 9404, config, podMonitor: { interval: '5 minutes' } },
      /spec.podMonitor.interval: Invalid value/);
  });

  it('takes its annotations off the pods when deleted', async () => {
    await kubectl('delete', 'pje', 'orders', '--wait=true', '--timeout=60s');
    const annotations = (await get('pod', 'orders')).metadata.annotations ?? {};
    for (const key of ['prometheus.io/scrape', 'prometheus.io/port', recordAnnotation]) assert.equal(annotations[key], undefined);
  });
});

describe('PrometheusJmxExporter on the real node', { skip: withoutRealNode(cluster) }, () => {
  let real: string;
  let realController: ControllerProcess;
  const inReal = (...args: string[]) => cluster.kubectl(['-n', real, ...args]);
  before(async () => {
    const ns = await freshNamespace(cluster, 'pje-real', { pods: 'real' });
    real = ns.name;
    cleanups.push(ns.cleanup);
    const [java, tools] = await Promise.all([cluster.loadImage(javaAppImage), cluster.loadImage(toolsImage)]);
    const pod = (name: string, container: object, volumes: object[] = []) => ({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name, labels: { app: name } }, spec: { terminationGracePeriodSeconds: 1, containers: [container], volumes } });
    await cluster.kubectl(['apply', '-n', real, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      // The JVM's attach socket and the agent's files go to /tmp: an emptyDir, as on a read-only root filesystem.
      pod('java', { name: 'app', image: java, imagePullPolicy: 'Never', volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] },
        [{ name: 'tmp', emptyDir: {} }]),
      pod('client', { name: 'client', image: tools, imagePullPolicy: 'Never', command: ['sleep', '3600'] }),
      // A container whose `sh` (the first on its PATH) writes without end, as a hostile or broken image's may.
      pod('flood', { name: 'flood', image: tools, imagePullPolicy: 'Never', env: [{ name: 'PATH', value: '/flood:/bin:/usr/bin' }],
        volumeMounts: [{ name: 'flood', mountPath: '/flood' }], command: ['/bin/sh', '-c',
          'printf "#!/bin/busybox sh\\nexec /bin/busybox yes flood\\n" > /flood/sh && chmod +x /flood/sh && exec sleep 3600'] },
      [{ name: 'flood', emptyDir: {} }]),
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'jmx' }, data: { 'config.yaml': 'rules:\n- pattern: ".*"\n' } },
    ] }) });
    for (const name of ['java', 'client', 'flood']) {
      await waitForPod(cluster, real, name, 'Running', (p) => p.status?.phase === 'Running' && isReady(p));
    }
    realController = await startOperator(cluster, real, ['prometheusjmxexporter', 'podalert'], scratch);
  });
  after(() => realController?.stop());

  it('loads the agent into a JVM in a real container, no restart, serving another pod; a new config is exported', async () => {
    const jvmPid = async () => (await inReal('exec', 'java', '--', 'pidof', 'java')).stdout.trim();
    const pidBefore = await jvmPid();
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PrometheusJmxExporter', metadata: { name: 'java', namespace: real },
      spec: { labelSelector: { app: 'java' }, port: 9404, config: { configMapName: 'jmx', configMapKey: 'config.yaml' } } });
    await waitFor('the exporter to list the pod', async () =>
      (await cluster.getJson(real, 'pje', 'java'))?.status?.endpointCount === 1, { timeoutMs: 90_000 });
    const pod = await cluster.getJson(real, 'pod', 'java');
    const scrape = async () => (await inReal('exec', 'client', '--', 'timeout', '5', 'wget', '-qO-',
      `http://${pod.status.podIP}:9404/metrics`)).stdout;
    assert.match(await scrape(), /^jvm_memory_used_bytes\{area="heap"\} /m);
    assert.match(await scrape(), /^java_lang_Memory_HeapMemoryUsage_used /m);
    assert.equal(pod.status.containerStatuses[0].restartCount, 0);
    assert.equal(await jvmPid(), pidBefore, 'the JVM was restarted');

    await cluster.kubectl(['apply', '-n', real, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: 'jmx' }, data: { 'config.yaml': 'includeObjectNames: ["java.lang:type=Threading"]\nrules:\n- pattern: ".*"\n' } }) });
    await waitFor('the new config exported', async () => {
      const metrics = await scrape();
      return !/^java_lang_Memory_HeapMemoryUsage_used /m.test(metrics) && /^java_lang_Threading_ThreadCount /m.test(metrics);
    }, { timeoutMs: 60_000 });
  });

  it('abandons an exec whose output has no end: memory stays bounded, the pod is reported, other operators go on', async () => {
    const rssBefore = await realController.metric('process_resident_memory_bytes');
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PrometheusJmxExporter', metadata: { name: 'flood', namespace: real },
      spec: { labelSelector: { app: 'flood' }, port: 9405, config: { configMapName: 'jmx', configMapKey: 'config.yaml' } } });
    const reason = await waitFor('the flooding pod skipped', async () => (await cluster.getJson(real, 'pje', 'flood'))
      ?.status?.skippedPods?.find((s: { pod: string }) => s.pod === 'flood')?.reason, { timeoutMs: 60_000 });
    assert.match(reason, /^exec in flood\/flood: the command wrote more than 1048576 bytes; abandoned$/);
    const growth = (await realController.metric('process_resident_memory_bytes')) - rssBefore;
    assert.ok(growth < 64 * 1024 * 1024, `the controller grew by ${Math.round(growth / 1024 / 1024)} MiB`);
    await waitFor('a JmxExporterFailed Warning Event on the pod', async () => ((await cluster.getJson(real,
      'events.events.k8s.io', '--field-selector', 'regarding.name=flood'))?.items ?? [])
      .some((e: { reason: string }) => e.reason === 'JmxExporterFailed'));
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PodAlert', metadata: { name: 'after-flood', namespace: real },
      spec: { alerts: { checkRunningPods: true }, logLines: 0 } });
    await waitFor('PodAlert to reconcile after the flood', async () =>
      (await cluster.getJson(real, 'pa', 'after-flood'))?.status?.lastEvaluationTime, { timeoutMs: 30_000 });
  });
});
