// The samples as `npm start` users meet them: dist/samples/ applied with kubectl to the default namespace, the
// operator running, every workload real on the node. Serial: the samples' namespace and names are fixed.
import assert from 'node:assert/strict';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadAllYaml } from '@kubernetes/client-node';
import { catalog } from '../controller/operators/catalog.ts';
import { controllerImage, sampleImageRecipes } from '../images/recipes.ts';
import { testCluster } from './support/cluster.ts';
import type { ControllerProcess } from './support/controller-process.ts';
import { installCrds, startOperator } from './support/operator.ts';
import { repoRoot } from '../cluster/paths.ts';
import { isReady, waitForPod, withoutRealNode } from './support/real-node.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
const samples = join(repoRoot, 'dist/samples');
const namespace = 'default';
let scratch: string;
let controller: ControllerProcess;

const get = (...args: string[]) => cluster.getJson(namespace, ...args);
const fromClient = async (...command: string[]) =>
  (await cluster.kubectl(['-n', namespace, 'exec', 'samples-client', '--', ...command])).stdout;

describe('the samples on the local cluster', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'keelson-samples-'));
    await Promise.all([controllerImage(), ...sampleImageRecipes].map(async (recipe) => cluster.loadImage(await recipe)));
    await installCrds(cluster);
    controller = await startOperator(cluster, namespace, catalog.map((e) => e.name), scratch);
    await cluster.kubectl(['apply', '-f', samples]);
    await cluster.kubectl(['-n', namespace, 'run', 'samples-client', '--image=keelson.local/tools:1',
      '--image-pull-policy=Never', '--restart=Never', '--', 'sleep', '100000']);
    await waitForPod(cluster, namespace, 'samples-client', 'Running', isReady);
  });
  after(async () => {
    await cluster.kubectl(['delete', '-f', samples, '--wait=true', '--timeout=120s'], { allowFailure: true });
    await cluster.kubectl(['-n', namespace, 'delete', 'pod', 'samples-client', '--wait=false'], { allowFailure: true });
    await controller?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it('names only images the local cluster builds', async () => {
    const text = await readFile(join(samples, 'keelson-samples.k8s.yaml'), 'utf8');
    const named = [...text.matchAll(/image: (\S+)/g)].map((m) => m[1]!);
    const built = sampleImageRecipes.map((r) => r.reference);
    assert.ok(named.length >= 5);
    for (const image of named) assert.ok(built.includes(image), `${image} is no stand-in the cluster builds`);
    assert.ok((loadAllYaml(text) as any[]).every((o) => o.metadata.namespace === namespace));
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
});
