// The Helm chart as a Helm user runs it: `helm install` and `helm upgrade` of dist/helm/keelson with the image built
// here, the controllers running in-cluster on the real node. They watch one namespace (Roles; cluster-wide only their
// own Namespace and what secure metrics need), so the release shares the cluster with the other tests; the pods it
// makes there are simulated.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { releaseImage } from '../controller/api/release.ts';
import { controllerName, metricsReaderName } from '../charts/install.ts';
import { secureMetricsPort } from '../charts/operator-install.ts';
import { scrapeScript } from './support/metrics.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
import { installCrds } from './support/operator.ts';
import { repoRoot } from '../cluster/paths.ts';
import { isReady, withoutRealNode } from './support/real-node.ts';
import { goTool } from './support/tools.ts';
import { waitFor } from '../cluster/wait.ts';

const run = promisify(execFile);
const cluster = testCluster();
const chartDir = join(repoRoot, 'dist/helm/keelson');
let helm: (...args: string[]) => Promise<string>;
let watched: string;
let system: string;
let cleanup: () => Promise<void>;

const controllerPods = async () => ((await cluster.getJson(system, 'pods', '-l',
  'app.kubernetes.io/name=keelson,app.kubernetes.io/component=controller'))?.items ?? [])
  .filter((pod: any) => !pod.metadata.deletionTimestamp);

/**
 * The sum of the controller's samples of `name` whose labels match `labels`, read inside its pod with its own token
 * (the test binds its ServiceAccount to the metrics reader) from its self-signed HTTPS endpoint.
 */
async function metric(pod: string, name: string, labels: RegExp): Promise<number> {
  const { stdout } = await cluster.kubectl(['exec', '-n', system, pod, '--', 'node', '-e', scrapeScript(secureMetricsPort)]);
  const [status, ...lines] = stdout.split('\n');
  if (status !== '200') throw new Error(`/metrics of ${pod} answered ${stdout.slice(0, 200)}`);
  return lines.filter((line) => line.startsWith(`${name}{`) && labels.test(line))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}
const forbiddenRequests = (pod: string) => metric(pod, 'keelson_client_requests_total', /code="403"/);

async function rolledOut(): Promise<any[]> {
  await cluster.kubectl(['rollout', 'status', `deployment/${controllerName}`, '-n', system, '--timeout=180s']);
  const deployment = await cluster.getJson(system, 'deployment', controllerName);
  return waitFor('only the new pods left, all ready', async () => {
    const pods = await controllerPods();
    return pods.length === deployment.spec.replicas && pods.every(isReady) ? pods : undefined;
  }, { timeoutMs: 90_000 });
}

const tdset = (replica: number) => {
  const hour = new Date().getUTCHours();
  return JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', metadata: { name: 'hello', namespace: watched },
    spec: { container: { image: 'keelson.local/hello-world:1', port: 8000 },
      schedulingConfig: [{ startTime: hour, endTime: (hour + 2) % 24, replica }], defaultReplica: 1 } });
};

describe('helm install and upgrade of dist/helm/keelson, on the real node', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    ({ name: watched, cleanup } = await freshNamespace(cluster, 'helm'));
    system = `${watched}-system`;
    const binary = await goTool('helm');
    helm = async (...args) => (await run(binary, [...args, '--kubeconfig', cluster.state.kubeconfig, '--namespace', watched],
      { timeout: 5 * 60_000 })).stdout;
    // The chart's default image is on the local cluster's node already, as after `kind load`.
    await installCrds(cluster);
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass', metadata: { name: system }, value: 1000 }) });
  });
  after(async () => {
    await cluster.kubectl(['delete', 'clusterrolebinding', `${metricsReaderName}-${watched}`, '--ignore-not-found']);
    await cluster.kubectl(['delete', 'priorityclass', system, '--ignore-not-found']);
    await helm?.('uninstall', 'keelson').catch(() => undefined);
    await cleanup?.();
  });

  it('installs: the controller runs as its ServiceAccount under a Role and reconciles, never refused', async () => {
    // The admission policies came with the CRDs, from dist/, as every test on this cluster applies them.
    await helm('install', 'keelson', chartDir, '--set', `namespace=${system}`, '--set', `watchNamespace=${watched}`,
      '--set', 'admissionPolicies=false', '--set', `priorityClassName=${system}`, '--set-json', 'imagePullSecrets=["regcred"]',
      '--set-json', 'podLabels={"team":"platform"}', '--set-json', 'serviceAccountAnnotations={"example.com/role":"operator"}',
      '--set-json', 'topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"ScheduleAnyway"}]');
    await cluster.kubectl(['create', 'clusterrolebinding', `${metricsReaderName}-${watched}`, `--clusterrole=${metricsReaderName}`,
      `--serviceaccount=${system}:${controllerName}`]);
    const [pod] = await rolledOut();
    assert.equal(pod.spec.nodeName, (cluster.state.realNode as { name: string }).name);
    assert.equal(pod.spec.serviceAccountName, controllerName);
    assert.equal(pod.spec.containers[0].image, releaseImage);
    assert.deepEqual([pod.spec.priorityClassName, pod.spec.imagePullSecrets, pod.metadata.labels.team],
      [system, [{ name: 'regcred' }], 'platform']);
    assert.equal(pod.spec.topologySpreadConstraints[0].labelSelector.matchLabels['app.kubernetes.io/component'], 'controller');
    assert.equal((await cluster.getJson(system, 'serviceaccount', controllerName)).metadata.annotations['example.com/role'],
      'operator');
    assert.ok(pod.spec.containers[0].args.includes(`--namespace=${watched}`));
    assert.equal((await cluster.getJson(watched, 'role', controllerName))?.metadata.labels['app.kubernetes.io/part-of'], 'keelson');

    await cluster.kubectl(['apply', '-f', '-'], { input: tdset(2) });
    await waitFor('the TDSet\'s Deployment at 2 replicas', async () =>
      (await cluster.getJson(watched, 'deployment', 'hello'))?.spec?.replicas === 2, { timeoutMs: 90_000 });
    assert.equal(await forbiddenRequests(pod.metadata.name), 0);
  });

  it('upgrades: new values roll out, one replica leads, and the work goes on', async () => {
    await helm('upgrade', 'keelson', chartDir, '--reuse-values', '--set', 'replicas=2', '--set', 'logLevel=debug');
    const pods = await rolledOut();
    assert.equal(pods.length, 2);
    for (const pod of pods) assert.ok(pod.spec.containers[0].args.includes('--log-level=debug'));
    assert.equal((await cluster.getJson(system, 'poddisruptionbudget', controllerName)).spec.minAvailable, 1);
    assert.match(await helm('history', 'keelson'), /^2\s.*deployed\s.*Upgrade complete/m);

    await cluster.kubectl(['apply', '-f', '-'], { input: tdset(3) });
    await waitFor('the upgraded controller to scale the TDSet\'s Deployment to 3', async () =>
      (await cluster.getJson(watched, 'deployment', 'hello'))?.spec?.replicas === 3, { timeoutMs: 90_000 });
    for (const pod of pods) assert.equal(await forbiddenRequests(pod.metadata.name), 0);
    // One leads, at once or once the other's Lease has lapsed: read until it does, not at one instant.
    await waitFor('exactly one replica leading', async () => JSON.stringify((await Promise.all(pods.map((pod) =>
      metric(pod.metadata.name, 'leader_election_master_status', /./)))).sort()) === '[0,1]', { timeoutMs: 60_000 });
  });
});
