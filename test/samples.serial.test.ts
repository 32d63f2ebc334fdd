// The samples as `npm start` users meet them: dist/samples/ on stand-ins for their public images, in a namespace
// that enforces the restricted Pod Security Standard, the operator running, every workload real on the node.
// Serial: three PostgreSQL members and a JVM are more than the shared node should run beside other tests.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { catalog } from '../controller/operators/catalog.ts';
import { restrictedContainerSecurity, restrictedPodSecurity } from '../controller/api/pod-security.ts';
import { sampleStandIns } from '../images/recipes.ts';
import { applySamples, sampleObjects } from '../cluster/samples.ts';
import { testCluster } from './support/cluster.ts';
import type { ControllerProcess } from './support/controller-process.ts';
import { installCrds, startOperator } from './support/operator.ts';
import { isReady, waitForPod, withoutRealNode } from './support/real-node.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
const namespace = 'keelson-samples';
let scratch: string;
let warnings: string;
let controller: ControllerProcess;

const get = (...args: string[]) => cluster.getJson(namespace, ...args);
const fromClient = async (...command: string[]) =>
  (await cluster.kubectl(['-n', namespace, 'exec', 'samples-client', '--', ...command])).stdout;

describe('the samples on the local cluster', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'keelson-samples-'));
    await installCrds(cluster);
    warnings = await applySamples(cluster, namespace);
    // Watching this namespace: ClusterPodAlert, cluster-wide, is left out (its sample is admitted, and its own test runs it).
    controller = await startOperator(cluster, namespace, catalog.filter((e) => e.kind.scope !== 'Cluster')
      .map((e) => e.name), scratch);
    await cluster.kubectl(['-n', namespace, 'apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'samples-client' }, spec: { securityContext: restrictedPodSecurity, containers: [{ name: 'client',
        image: sampleStandIns['busybox:1.36']!.reference, command: ['sleep', '100000'],
        securityContext: restrictedContainerSecurity }] } }) });
    await waitForPod(cluster, namespace, 'samples-client', 'Running', isReady);
  });
  after(async () => {
    // The samples first, while the operator and its ServiceAccount (in this namespace) still run: its finalizers must
    // let them go; then the namespace.
    await cluster.kubectl(['delete', 'keelson', '--all', '-n', namespace, '--wait=false'], { allowFailure: true });
    // The ClusterPodAlert sample is in no namespace (nor in the category keelson).
    await cluster.kubectl(['delete', 'keelson-cluster', '--all', '--wait=false'], { allowFailure: true });
    await waitFor('the samples gone', async () => (await get('keelson'))?.items.length === 0, { timeoutMs: 120_000 })
      .finally(() => cluster.kubectl(['delete', 'namespace', namespace, '--wait=false'], { allowFailure: true }));
    await waitFor(`namespace ${namespace} gone`, async () => (await cluster.getJson('', 'namespace', namespace)) === undefined,
      { timeoutMs: 180_000, intervalMs: 1000 }).catch(async (error: Error) => {
      const left = (await cluster.getJson('', 'namespace', namespace))?.status?.conditions;
      const errors = controller?.logs.filter((l) => ['warn', 'error'].includes(l.level)).slice(-10);
      throw new Error(`${error.message}: ${JSON.stringify(left)}\n${errors?.map((l) => JSON.stringify(l)).join('\n')}`);
    }).finally(() => controller?.stop());
    await rm(scratch, { recursive: true, force: true });
  });

  it('names public images, each with a stand-in here, and no namespace', async () => {
    const objects = await sampleObjects();
    const images = new Set<string>();
    const collect = (value: any): void => {
      if (Array.isArray(value)) value.forEach(collect);
      else if (value && typeof value === 'object') {
        for (const [key, v] of Object.entries(value)) (key === 'image' && typeof v === 'string' ? images.add(v) : collect(v));
      }
    };
    collect(objects);
    assert.deepEqual([...images].sort(), Object.keys(sampleStandIns).sort());
    assert.deepEqual(objects.filter((o) => o.metadata.namespace !== undefined).map((o) => o.metadata.name), []);
  });

  it('are admitted where the restricted standard is enforced, without a warning', async () => {
    assert.equal(warnings, '');
    const ns = await cluster.getJson('', 'namespace', namespace);
    assert.equal(ns.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  });

  it('hello-world: the scheduled pods answer HTTP through their Service', async () => {
    await waitFor('hello-world to answer', async () =>
      (await fromClient('timeout', '5', 'wget', '-qO-', 'http://hello-world').catch(() => '')).includes('Hello World'),
    { timeoutMs: 120_000, intervalMs: 1000 });
  });

  it('debug-course: the course pod has a running debug container', async () => {
    const pod = await waitFor('a debug container running in the teachstore-course pod', async () => {
      const pods = (await get('pods', '-l', 'app=teachstore-course')).items as any[];
      return pods.find((p) => p.status.ephemeralContainerStatuses?.some((s: any) => s.state.running));
    }, { timeoutMs: 120_000, intervalMs: 1000 });
    assert.equal(pod.spec.ephemeralContainers[0].image, 'keelson.local/tools:1');
  });

  it('orders-db: three members of real PostgreSQL, Running', async () => {
    const status = await waitFor('orders-db Running with 3 ready members', async () => {
      const s = (await get('pgc', 'orders-db'))?.status;
      return s?.phase === 'Running' && s.readyMembers === 3 ? s : undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000 });
    const version = await cluster.kubectl(['-n', namespace, 'exec', status.primary, '-c', 'postgres', '--', 'psql', '-X',
      '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', 'SHOW server_version']);
    assert.match(version.stdout, /^15\./);
  });

  it('java-apps: the sample JVM exports its metrics as its ConfigMap says', async () => {
    await waitFor('java-apps to list the JVM', async () => (await get('pje', 'java-apps'))?.status?.endpointCount === 1,
      { timeoutMs: 180_000, intervalMs: 2000 });
    const [pod] = (await get('pods', '-l', 'app=java-app')).items as any[];
    const metrics = await fromClient('timeout', '5', 'wget', '-qO-', `http://${pod.status.podIP}:9404/metrics`);
    assert.match(metrics, /^jvm_memory_used_bytes\{area="heap"\} /m);
    // The sample's config lowercases the names of the beans it exports.
    assert.match(metrics, /^java_lang_memory_heapmemoryusage_used /m);
  });

  it('unhealthy-pods: quiet while every sample is healthy', async () => {
    const status = await waitFor('unhealthy-pods to have evaluated', async () => (await get('podalert', 'unhealthy-pods'))?.status,
      { timeoutMs: 60_000 });
    assert.equal(status.unhealthyPods, 0);
    assert.deepEqual(status.alerts ?? [], []);
  });

  it('no pod an operator or a controller made was refused by the standard', async () => {
    const refused = (await get('events')).items.filter((e: any) => /violates PodSecurity/.test(e.message));
    assert.deepEqual(refused.map((e: any) => e.message), []);
  });
});
