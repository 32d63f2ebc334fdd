// The install as users run it: the operator image built here, `kubectl apply -f dist/`, and the controller running
// in-cluster on the real node under its own ServiceAccount. It watches every namespace, so it runs alone (serial),
// after the tests whose controllers would otherwise share their custom resources with it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { releaseImage } from '../controller/api/release.ts';
import { controllerName, metricsReaderName, podControllerName } from '../charts/install.ts';
import { secureMetricsPort } from '../charts/operator-install.ts';
import { scrapeScript } from './support/metrics.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
import type { LogLine } from './support/controller-process.ts';
import { repoRoot } from '../cluster/paths.ts';
import { isReady, withoutRealNode } from './support/real-node.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
const system = 'keelson-system';
const install = join(repoRoot, 'dist/0001-keelson.k8s.yaml');
let namespace: string;
let cleanup: () => Promise<void>;

/** Every JSON log line of every controller pod, from each pod's start, including pods that come and go. */
class ControllerLogs {
  readonly lines = new Map<string, LogLine[]>();
  private readonly followers: ChildProcess[] = [];
  private readonly timer = setInterval(() => void this.followNewPods(), 250);

  private async followNewPods(): Promise<void> {
    const pods = await cluster.getJson(system, 'pods', '-l', 'app.kubernetes.io/name=keelson,app.kubernetes.io/component=controller');
    for (const pod of pods?.items ?? []) {
      const name = pod.metadata.name as string;
      const started = pod.status?.containerStatuses?.[0]?.state?.running || pod.status?.containerStatuses?.[0]?.state?.terminated;
      if (this.lines.has(name) || !started) continue;
      this.lines.set(name, []);
      const follower = spawn(cluster.kubectlPath, [`--kubeconfig=${cluster.state.kubeconfig}`, 'logs', '-f', name, '-n', system],
        { stdio: ['ignore', 'pipe', 'ignore'] });
      this.followers.push(follower);
      createInterface({ input: follower.stdout! }).on('line', (line) => {
        try {
          this.lines.get(name)!.push(JSON.parse(line) as LogLine);
        } catch { /* not a log record */ }
      });
    }
  }

  /** When each pod led: from "became leader" to the lease's release (or its stop, or now while it runs). */
  leadership(): { pod: string; from: number; to: number }[] {
    return [...this.lines].flatMap(([pod, lines]) => {
      const became = lines.find((l) => l.msg === 'became leader');
      if (!became) return [];
      const end = lines.find((l) => ['released the lease', 'stopped'].includes(l.msg) || l.msg.startsWith('lost leadership'));
      return [{ pod, from: Date.parse(became.time), to: end ? Date.parse(end.time) : Infinity }];
    });
  }

  stop(): void {
    clearInterval(this.timer);
    for (const follower of this.followers) follower.kill();
  }
}

async function inPod(pod: string, script: string): Promise<string> {
  return (await cluster.kubectl(['exec', '-n', system, pod, '--', 'node', '-e', script])).stdout.trim();
}

async function controllerPods(component = 'controller'): Promise<any[]> {
  return (await cluster.getJson(system, 'pods', '-l', `app.kubernetes.io/name=keelson,app.kubernetes.io/component=${component}`)).items;
}

/** Whether the ServiceAccount `name` of the install may do `verb` on `resource` (or resource/subresource) in the test's namespace. */
async function canI(name: string, verb: string, resource: string): Promise<boolean> {
  const [type, subresource] = resource.split('/');
  const { stdout } = await cluster.kubectl(['auth', 'can-i', verb, type!, ...(subresource ? [`--subresource=${subresource}`] : []),
    '-n', namespace, `--as=system:serviceaccount:${system}:${name}`], { allowFailure: true });
  return stdout.trim() === 'yes';
}

describe('the install from dist/, in-cluster on the real node', { skip: withoutRealNode(cluster) }, () => {
  let logs: ControllerLogs;
  let image: string;

  before(async () => {
    ({ name: namespace, cleanup } = await freshNamespace(cluster, 'install', { pods: 'real' }));
    // Nothing loaded here: the local cluster holds the image dist/ names, as `npm run cluster -- up` leaves it.
    image = releaseImage;
    logs = new ControllerLogs();
  });
  after(async () => {
    logs?.stop();
    await cluster.kubectl(['delete', '-f', install, '--wait=false'], { allowFailure: true });
    await cleanup?.();
  });

  it('becomes Available with the image dist/ names, as 65532 on a read-only root filesystem', async () => {
    await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'dist')]);
    for (const [name, component] of [[controllerName, 'controller'], [podControllerName, 'pod-controller']] as const) {
      await cluster.kubectl(['wait', '--for=condition=Available', `deployment/${name}`, '-n', system, '--timeout=180s']);
      const [pod] = await controllerPods(component);
      assert.equal(pod.spec.containers[0].image, releaseImage);
      assert.equal(pod.spec.nodeName, (cluster.state.realNode as { name: string }).name);
      assert.equal(pod.spec.serviceAccountName, name);
      assert.ok(isReady(pod), 'its readiness probe (/readyz) passes');
      assert.equal(await inPod(pod.metadata.name, 'console.log(process.getuid(), process.getgid())'), '65532 65532');
      assert.equal(await inPod(pod.metadata.name,
        'try { require("fs").writeFileSync("/probe", "x") } catch (e) { console.log(e.code) }'), 'EROFS');
    }
  });

  it('gives each Deployment\'s ServiceAccount its own operators\' rights and not the others\'', async () => {
    for (const [verb, resource] of [['update', 'pods/ephemeralcontainers'], ['create', 'pods/exec'], ['create', 'pods']] as const) {
      assert.equal(await canI(controllerName, verb, resource), false, `${controllerName} may ${verb} ${resource}`);
      assert.equal(await canI(podControllerName, verb, resource), true, `${podControllerName} may not ${verb} ${resource}`);
    }
    for (const [verb, resource] of [['patch', 'tdsets.keelson.dev/status'], ['create', 'deployments.apps'],
      ['patch', 'podalerts.keelson.dev/status']] as const) {
      assert.equal(await canI(podControllerName, verb, resource), false, `${podControllerName} may ${verb} ${resource}`);
      assert.equal(await canI(controllerName, verb, resource), true, `${controllerName} may not ${verb} ${resource}`);
    }
  });

  it('serves /metrics through its Service to another pod, and reconciles a TDSet whose pods answer HTTP', async () => {
    const hour = new Date().getUTCHours();
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', metadata: { name: 'hello' },
        spec: { container: { image: 'keelson.local/hello-world:1', port: 8000 }, service: { port: 80 },
          schedulingConfig: [{ startTime: hour, endTime: (hour + 2) % 24, replica: 2 }], defaultReplica: 1 } },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client' }, spec: { terminationGracePeriodSeconds: 1,
        containers: [{ name: 'client', image: 'keelson.local/tools:1', imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } },
    ] }) });
    const fetchFromClient = (url: string) => waitFor(`GET ${url} from a pod`, async () => {
      const result = await cluster.kubectl(['exec', '-n', namespace, 'client', '--', 'timeout', '5', 'wget', '-qO-', url],
        { allowFailure: true });
      return result.code === 0 ? result.stdout : undefined;
    }, { timeoutMs: 90_000 });

    // A scraper holding a token of a ServiceAccount bound to the metrics reader; the controllers' certificates are their
    // own, self-signed.
    await cluster.kubectl(['create', 'serviceaccount', 'scraper', '-n', namespace]);
    await cluster.kubectl(['create', 'clusterrolebinding', `${metricsReaderName}-${namespace}`, `--clusterrole=${metricsReaderName}`,
      `--serviceaccount=${namespace}:scraper`]);
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'scraper' }, spec: { serviceAccountName: 'scraper', terminationGracePeriodSeconds: 1,
        containers: [{ name: 'scraper', image, imagePullPolicy: 'Never', command: ['node', '-e', 'setInterval(() => {}, 1e9)'] }] } }) });
    const scrape = (service: string, withToken: boolean) => waitFor(`GET https://${service}/metrics from a pod`, async () => {
      const result = await cluster.kubectl(['exec', '-n', namespace, 'scraper', '--', 'node', '-e',
        scrapeScript(secureMetricsPort, `${service}.${system}.svc.cluster.local`, withToken)], { allowFailure: true });
      return result.code === 0 ? result.stdout : undefined;
    }, { timeoutMs: 90_000 });
    assert.match(await scrape(`${controllerName}-metrics`, false), /^401\n/);
    for (const name of [controllerName, podControllerName]) {
      const metrics = await scrape(`${name}-metrics`, true);
      assert.match(metrics, /^200\n/);
      assert.match(metrics, /^leader_election_master_status\{name="[^"]+"\} 1$/m);
    }
    await cluster.kubectl(['delete', 'clusterrolebinding', `${metricsReaderName}-${namespace}`]);
    await waitFor('2 ready replicas of the TDSet\'s Deployment', async () =>
      (await cluster.getJson(namespace, 'deployment', 'hello'))?.status?.readyReplicas === 2, { timeoutMs: 90_000 });
    assert.equal(await fetchFromClient(`http://hello.${namespace}.svc.cluster.local/`), '<pre>Hello World</pre>\n');
  });

  it('has the pod controller, under its own account, add a debug container one can exec into', async () => {
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PodBuggerTool', metadata: { name: 'debug-client' },
      spec: { selector: { matchLabels: { 'keelson.dev/debug': 'yes' } }, image: 'keelson.local/tools:1', command: ['sleep', '3600'] } }) });
    await cluster.kubectl(['label', 'pod', 'scraper', '-n', namespace, 'keelson.dev/debug=yes']);
    const container = await waitFor('a running debug container in the scraper pod', async () => {
      const pod = await cluster.getJson(namespace, 'pod', 'scraper');
      return pod?.status?.ephemeralContainerStatuses?.find((c: any) => c.state?.running)?.name as string | undefined;
    }, { timeoutMs: 90_000 });
    const { stdout } = await cluster.kubectl(['exec', '-n', namespace, 'scraper', '-c', container, '--', 'echo', 'inside']);
    assert.equal(stdout.trim(), 'inside');
  });

  it('with 2 replicas one leads, and a rollout restart never has two leading at once', async () => {
    await cluster.kubectl(['scale', `deployment/${controllerName}`, '-n', system, '--replicas=2']);
    await cluster.kubectl(['rollout', 'status', `deployment/${controllerName}`, '-n', system, '--timeout=180s']);
    const before = new Set((await controllerPods()).map((p) => p.metadata.name as string));
    await waitFor('both replicas logging', () => [...before].every((p) => (logs.lines.get(p)?.length ?? 0) > 0));
    assert.equal(logs.leadership().filter((l) => before.has(l.pod) && l.to === Infinity).length, 1);

    await cluster.kubectl(['rollout', 'restart', `deployment/${controllerName}`, '-n', system]);
    await cluster.kubectl(['rollout', 'status', `deployment/${controllerName}`, '-n', system, '--timeout=300s']);
    const leader = await waitFor('a new pod to lead', () => {
      const current = logs.leadership().filter((l) => l.to === Infinity && !before.has(l.pod));
      return current.length === 1 ? current[0] : undefined;
    }, { timeoutMs: 60_000 });
    const spans = logs.leadership().sort((a, b) => a.from - b.from);
    for (let i = 1; i < spans.length; i++) {
      assert.ok(spans[i]!.from >= spans[i - 1]!.to,
        `${spans[i]!.pod} became leader while ${spans[i - 1]!.pod} still led: ${JSON.stringify(spans)}`);
    }
    // The new leader does the work: a changed spec reaches the Deployment.
    await cluster.kubectl(['patch', 'tdset', 'hello', '-n', namespace, '--type=merge', '-p', '{"spec":{"defaultReplica":1,' +
      `"schedulingConfig":[{"startTime":${new Date().getUTCHours()},"endTime":${(new Date().getUTCHours() + 2) % 24},"replica":3}]}}`]);
    await waitFor(`${leader.pod} to scale the Deployment to 3`, async () =>
      (await cluster.getJson(namespace, 'deployment', 'hello'))?.spec?.replicas === 3, { timeoutMs: 60_000 });
  });
});
