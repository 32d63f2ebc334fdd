import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../test/support/cluster.ts';
import { waitFor } from './wait.ts';
import { serveExec, serveLogs } from './kwok.ts';
import { tmpdir } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'cluster'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-cluster-test-'));
});
after(async () => {
  await cleanup();
  await rm(scratch, { recursive: true, force: true });
});

async function getJson(args: string[]): Promise<any> {
  return JSON.parse((await cluster.kubectl([...args, '-o', 'json', '-n', namespace])).stdout);
}

describe('local control plane', () => {
  it('reports the pinned Kubernetes version and has Ready simulated nodes', async () => {
    const version = JSON.parse((await cluster.kubectl(['version', '-o', 'json'])).stdout);
    assert.match(version.serverVersion.gitVersion, /^v1\.(3[5-9]|[4-9]\d)\.\d+$/);
    const nodes = JSON.parse((await cluster.kubectl(['get', 'nodes', '-o', 'json'])).stdout).items;
    assert.ok(nodes.length >= 2, `expected at least two nodes, got ${nodes.length}`);
    for (const node of nodes) {
      const ready = node.status.conditions.find((c: any) => c.type === 'Ready');
      assert.equal(ready?.status, 'True', `node ${node.metadata.name} is not Ready`);
    }
    // Liveness comes from node Leases, as with kubelets: without renewals nodes would go NotReady within a minute.
    await waitFor('every node Lease to be renewed', async () => {
      const leases = JSON.parse((await cluster.kubectl(['get', 'leases', '-n', 'kube-node-lease', '-o', 'json'])).stdout).items;
      const fresh = leases.filter((l: any) => Date.now() - Date.parse(l.spec.renewTime) < l.spec.leaseDurationSeconds * 1000);
      return nodes.every((n: any) => fresh.some((l: any) => l.metadata.name === n.metadata.name));
    });
  });

  it('runs an ordinary Deployment to 3 Ready pods, and garbage-collects them when it is deleted', async () => {
    await cluster.kubectl(['create', 'deployment', 'web', '--image=registry.example/web:1', '--replicas=3',
      '-n', namespace]);
    const pods = await waitFor('3 Running and Ready pods', async () => {
      const items = (await getJson(['get', 'pods', '-l', 'app=web'])).items as any[];
      const ready = items.filter((p) => p.status.phase === 'Running' &&
        p.status.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True'));
      return ready.length === 3 ? ready : undefined;
    }, { timeoutMs: 60_000 });
    const nodeNames = new Set(cluster.state.nodes);
    for (const pod of pods) assert.ok(nodeNames.has(pod.spec.nodeName), `pod on unexpected node ${pod.spec.nodeName}`);

    await cluster.kubectl(['delete', 'deployment', 'web', '-n', namespace]);
    await waitFor('the ReplicaSet and Pods to be garbage-collected', async () => {
      const left = (await getJson(['get', 'replicasets,pods', '-l', 'app=web'])).items;
      return left.length === 0;
    }, { timeoutMs: 60_000 });
  });

  it('establishes a CRD and rejects custom resources that break its schema or CEL rules', async () => {
    // CRDs are cluster-scoped: a group of this run's own keeps reruns from meeting a CRD still being deleted.
    const group = `${namespace}.harness.keelson.dev`;
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${group}` },
      spec: {
        group,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [{
          name: 'v1', served: true, storage: true,
          schema: { openAPIV3Schema: {
            type: 'object',
            properties: { spec: {
              type: 'object',
              required: ['size'],
              properties: { size: { type: 'integer', minimum: 1, maximum: 9 }, min: { type: 'integer' },
                max: { type: 'integer' } },
              'x-kubernetes-validations': [{ rule: 'self.min <= self.max', message: 'min must not exceed max' }],
            } },
          } },
        }],
      },
    };
    await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(crd) });
    await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=30s', `crd/widgets.${group}`]);

    const widget = (spec: object) => JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Widget',
      metadata: { name: 'w', namespace }, spec });
    const tooBig = await cluster.kubectl(['create', '-f', '-'], { input: widget({ size: 10, min: 1, max: 2 }),
      allowFailure: true });
    assert.notEqual(tooBig.code, 0);
    assert.match(tooBig.stderr, /spec\.size: Invalid value: 10: spec\.size in body should be less than or equal to 9/);
    const crossed = await cluster.kubectl(['create', '-f', '-'], { input: widget({ size: 1, min: 3, max: 2 }),
      allowFailure: true });
    assert.notEqual(crossed.code, 0);
    assert.match(crossed.stderr, /The Widget "w" is invalid: spec: Invalid value: min must not exceed max/);
    await cluster.kubectl(['create', '-f', '-'], { input: widget({ size: 1, min: 1, max: 2 }) });
    await cluster.kubectl(['delete', 'crd', `widgets.${group}`, '--wait=false']);
  });

  it('enforces RBAC on a ServiceAccount: 403 without a Role, allowed with one', async () => {
    await cluster.kubectl(['create', 'serviceaccount', 'reader', '-n', namespace]);
    const kubeconfig = await cluster.serviceAccountKubeconfig(namespace, 'reader', join(scratch, 'reader.kubeconfig'));
    const denied = await cluster.kubectl(['get', 'configmaps', '-n', namespace], { kubeconfig, allowFailure: true });
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /forbidden: User "system:serviceaccount:[^:]+:reader" cannot list resource "configmaps"/);

    await cluster.kubectl(['create', 'role', 'reader', '--verb=list', '--resource=configmaps', '-n', namespace]);
    await cluster.kubectl(['create', 'rolebinding', 'reader', '--role=reader',
      `--serviceaccount=${namespace}:reader`, '-n', namespace]);
    await waitFor('the RoleBinding to take effect', async () =>
      (await cluster.kubectl(['get', 'configmaps', '-n', namespace], { kubeconfig, allowFailure: true })).code === 0);
  });

  describe('on a running simulated pod', () => {
    before(async () => {
      await cluster.kubectl(['run', 'app', '--image=registry.example/app:1', '-n', namespace]);
      await cluster.kubectl(['wait', '--for=condition=Ready', '--timeout=60s', 'pod/app', '-n', namespace]);
    });

    it('stores an ephemeral container added through pods/ephemeralcontainers', async () => {
      const pod = await getJson(['get', 'pod', 'app']);
      const patch = { spec: { ephemeralContainers: [{ name: 'debugger', image: 'busybox:1.36', command: ['sh'],
        stdin: true, tty: true, targetContainerName: 'app' }] } };
      await cluster.kubectl(['patch', 'pod', 'app', '-n', namespace, '--subresource=ephemeralcontainers',
        '--type=strategic', '-p', JSON.stringify(patch)]);
      const after = await getJson(['get', 'pod', 'app']);
      assert.equal(after.metadata.uid, pod.metadata.uid);
      assert.deepEqual(after.spec.ephemeralContainers.map((c: any) => [c.name, c.image, c.targetContainerName]),
        [['debugger', 'busybox:1.36', 'app']]);
    });

    it('serves configured logs through kubectl logs, current and previous', async () => {
      await serveLogs(cluster, { namespace, pod: 'app' }, 'app', ['starting', 'listening on :8080', 'ready'],
        ['starting', 'panic: out of memory']);
      const logs = await waitFor('kubectl logs to answer', async () =>
        (await cluster.kubectl(['logs', 'app', '-n', namespace, '--tail=2'], { allowFailure: true })).stdout || undefined);
      assert.equal(logs, 'listening on :8080\nready\n');
      const previous = await cluster.kubectl(['logs', 'app', '-n', namespace, '--previous']);
      assert.equal(previous.stdout, 'starting\npanic: out of memory\n');
    });

    it('runs the configured command through kubectl exec', async () => {
      await serveExec(cluster, { namespace, pod: 'app' }, scratch, { GREETING: 'hello from exec' });
      const out = await waitFor('kubectl exec to answer', async () => {
        const result = await cluster.kubectl(['exec', 'app', '-n', namespace, '--', 'sh', '-c', 'echo "$GREETING"; pwd'],
          { allowFailure: true });
        return result.code === 0 ? result.stdout : undefined;
      });
      assert.equal(out, `hello from exec\n${scratch}\n`);
    });
  });
});
