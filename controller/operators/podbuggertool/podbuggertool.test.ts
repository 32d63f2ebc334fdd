import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveExec } from '../../../cluster/kwok.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { isReady, waitForPod, withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { toolsImage } from '../../../images/recipes.ts';
import { containerName } from './debug.ts';

const cluster = testCluster();
const { kubectl, json, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let elsewhere: string;
const cleanups: (() => Promise<void>)[] = [];
let scratch: string;
let controller: ControllerProcess;

const pods = async (selector: string): Promise<any[]> => (await json('pods', '-l', selector)).items
  .filter((p: any) => !p.metadata.deletionTimestamp);
const tool = (name: string, spec: object) => apply({
  apiVersion: 'keelson.dev/v1alpha1', kind: 'PodBuggerTool', metadata: { name, namespace }, spec });
const debugOf = (pod: any) => (pod.spec.ephemeralContainers ?? []) as any[];

/** Every running pod matching `selector` (and there are `count`) carries exactly `names`, in any order. */
function podsCarry(selector: string, count: number, names: string[]): Promise<any[]> {
  return waitFor(`${count} pods ${selector} to carry ${names.join(', ')}`, async () => {
    const found = await pods(selector);
    const ok = found.length === count && found.every((p) => p.status.phase === 'Running' &&
      JSON.stringify(debugOf(p).map((c) => c.name).sort()) === JSON.stringify([...names].sort()));
    return ok ? found : undefined;
  }, { timeoutMs: 60_000 });
}

before(async () => {
  const [a, b] = await Promise.all([freshNamespace(cluster, 'pbt'), freshNamespace(cluster, 'pbt-other')]);
  ({ name: namespace } = a);
  ({ name: elsewhere } = b);
  cleanups.push(a.cleanup, b.cleanup);
  scratch = await mkdtemp(join(tmpdir(), 'keelson-pbt-test-'));
  await installCrds(cluster);
  // An install that trusts netadmin and sysadmin (the default does not) and two image prefixes.
  controller = await startOperator(cluster, namespace, ['podbuggertool'], scratch, { extraArgs: [
    '--podbuggertool-allowed-profiles=general,netadmin,sysadmin',
    '--podbuggertool-allowed-images=busybox,registry.local:5000/debug/'] });
});
after(async () => {
  await controller.stop();
  await rm(scratch, { recursive: true, force: true });
  await Promise.all(cleanups.map((c) => c()));
});

describe('PodBuggerTool against the real control plane, as its ServiceAccount', () => {
  const first = containerName('course-debug', 'busybox:1.36');
  const second = containerName('course-netshoot', 'registry.local:5000/debug/netshoot:v0.13');

  it('adds the debug container to every pod of a Deployment once they run, and only there', async () => {
    await cluster.kubectl(['run', 'other', '--image=registry.example/course:1', '--labels=app=course', '-n', elsewhere]);
    await kubectl('create', 'deployment', 'course', '--image=registry.example/course:1', '--replicas=3');
    await tool('course-debug', { label: 'app=course', image: 'busybox:1.36' });
    const injected = await podsCarry('app=course', 3, [first]);
    for (const pod of injected) {
      const [debug] = debugOf(pod);
      assert.equal(debug.image, 'busybox:1.36');
      assert.equal(debug.targetContainerName, pod.spec.containers[0].name);
      assert.deepEqual(debug.securityContext, { capabilities: { add: ['SYS_PTRACE'] } });
    }
    const status = await waitFor('status to count them', async () => {
      const s = (await json('pbt', 'course-debug')).status;
      return s?.injectedPods === 3 ? s : undefined;
    });
    assert.equal(status.matchedPods, 3);
    assert.equal(status.selector, 'app=course');
    assert.deepEqual(status.recentInjections.map((r: any) => r.container), [first, first, first]);
    const columns = (await kubectl('get', 'pbt', 'course-debug')).stdout.split('\n');
    assert.match(columns[0]!, /^NAME\s+SELECTOR\s+IMAGE\s+MATCHED\s+INJECTED\s+READY\s+AGE$/);
    assert.match(columns[1]!, /^course-debug\s+app=course\s+busybox:1\.36\s+3\s+3\s+True\s+/);
    await waitFor('a DebugContainerAdded Event on the pod', async () => (await events(injected[0].metadata.name))
      .some((e: any) => e.reason === 'DebugContainerAdded' && e.note.includes(first)));
  });

  it('lets kubectl exec run in the debug container', async () => {
    const [pod] = await pods('app=course');
    await serveExec(cluster, { namespace, pod: pod.metadata.name }, scratch);
    const out = await waitFor('exec in the debug container', async () => {
      const r = await cluster.kubectl(['exec', pod.metadata.name, '-n', namespace, '-c', first, '--', 'echo', 'inside'],
        { allowFailure: true });
      return r.code === 0 ? r.stdout : undefined;
    });
    assert.equal(out, 'inside\n');
  });

  it('gives a replacement pod its own, and never adds a second to a pod that has one', async () => {
    const [victim] = await pods('app=course');
    await kubectl('delete', 'pod', victim.metadata.name, '--wait=false');
    const after = await podsCarry('app=course', 3, [first]);
    assert.ok(!after.some((p) => p.metadata.uid === victim.metadata.uid));
  });

  it('keeps an ephemeral container the pod already had, and appends its own', async () => {
    await kubectl('run', 'prepared', '--image=registry.example/course:1', '--labels=app=prepared');
    await kubectl('wait', '--for=condition=Ready', 'pod/prepared', '--timeout=60s');
    await kubectl('patch', 'pod', 'prepared', '--subresource=ephemeralcontainers', '--type=strategic', '-p',
      JSON.stringify({ spec: { ephemeralContainers: [{ name: 'by-hand', image: 'alpine:3.20', targetContainerName: 'prepared' }] } }));
    await kubectl('label', 'pod', 'prepared', 'app=course', '--overwrite');
    const [pod] = await waitFor('the prepared pod to get the container', async () => {
      const found = (await pods('app=course')).filter((p) => p.metadata.name === 'prepared' && debugOf(p).length === 2);
      return found.length ? found : undefined;
    });
    assert.deepEqual(debugOf(pod).map((c) => [c.name, c.image]), [['by-hand', 'alpine:3.20'], [first, 'busybox:1.36']]);
    await kubectl('delete', 'pod', 'prepared', '--wait=false');
  });

  it('adds one container per PodBuggerTool when several match a pod', async () => {
    await tool('course-netshoot', { selector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['course'] }] },
      image: 'registry.local:5000/debug/netshoot:v0.13', profile: 'netadmin' });
    const carrying = await podsCarry('app=course', 3, [first, second]);
    const netshoot = debugOf(carrying[0]).find((c) => c.name === second);
    assert.deepEqual(netshoot.securityContext, { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } });
  });

  it('applies a changed spec only to pods not yet injected, and stops when deleted', async () => {
    await tool('course-debug', { label: 'app=course', image: 'busybox:1.37' });
    await kubectl('delete', 'pbt', 'course-netshoot');
    await kubectl('scale', 'deployment', 'course', '--replicas=4');
    const newer = containerName('course-debug', 'busybox:1.37');
    const all = await waitFor('the new pod to carry the new image only', async () => {
      const found = await pods('app=course');
      return found.length === 4 && found.some((p) => JSON.stringify(debugOf(p).map((c) => c.name)) === JSON.stringify([newer]))
        ? found : undefined;
    }, { timeoutMs: 60_000 });
    const older = all.filter((p) => debugOf(p).some((c) => c.name === first));
    assert.equal(older.length, 3);
    for (const pod of older) assert.deepEqual(debugOf(pod).map((c) => c.name), [first, second]);
  });

  it('reports a container the apiserver refuses, with a Warning Event', async () => {
    await cluster.kubectl(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=baseline']);
    await kubectl('run', 'guarded', '--image=registry.example/app:1', '--labels=app=guarded');
    await kubectl('wait', '--for=condition=Ready', 'pod/guarded', '--timeout=60s');
    await tool('too-powerful', { label: 'app=guarded', image: 'busybox:1.36', profile: 'sysadmin' });
    const status = await waitFor('Ready=False Refused', async () => {
      const s = (await json('pbt', 'too-powerful')).status;
      return s?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'False' && c.reason === 'Refused') ? s : undefined;
    });
    assert.match(status.conditions[0].message, /pod guarded: .*violates PodSecurity "baseline:latest": privileged/);
    const warnings = await events('too-powerful');
    assert.ok(warnings.some((e: any) => e.type === 'Warning' && e.reason === 'Refused'));
    assert.deepEqual(debugOf((await json('pod', 'guarded'))), []);
  });

  it('refuses a profile or an image the install does not allow: Ready=False, a Warning Event, no container', async () => {
    await kubectl('run', 'policed', '--image=registry.example/app:1', '--labels=app=policed');
    await kubectl('wait', '--for=condition=Ready', 'pod/policed', '--timeout=60s');
    const refusedWith = (name: string, reason: string) => waitFor(`${name}: Ready=False ${reason}`, async () =>
      (await json('pbt', name)).status?.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'False' &&
        c.reason === reason));
    await tool('unlisted-profile', { label: 'app=policed', image: 'busybox:1.36', profile: 'restricted' });
    await tool('unlisted-image', { label: 'app=policed', image: 'busybox.evil.example/busybox:1' });
    assert.match((await refusedWith('unlisted-profile', 'ProfileNotAllowed')).message,
      /profile restricted is not allowed by this install \(allowed: general, netadmin, sysadmin;/);
    assert.match((await refusedWith('unlisted-image', 'ImageNotAllowed')).message,
      /image busybox\.evil\.example\/busybox:1 is not allowed by this install \(allowed: images under busybox, registry/);
    assert.ok((await events('unlisted-image')).some((e: any) => e.type === 'Warning' && e.reason === 'ImageNotAllowed'));
    assert.deepEqual(debugOf(await json('pod', 'policed')), []);
  });

  it('left the pod with the same label in another namespace alone, and was never denied by RBAC', async () => {
    const other = JSON.parse((await cluster.kubectl(['get', 'pod', 'other', '-n', elsewhere, '-o', 'json'])).stdout);
    assert.equal(other.metadata.labels.app, 'course');
    assert.deepEqual(debugOf(other), []);
    // PodSecurity's refusal above is a 403 too; RBAC's says what the user cannot do.
    assert.deepEqual(controller.logs.filter((l) => /cannot \w+ resource/.test(JSON.stringify(l))), []);
  });
});

describe('PodBuggerTool on the real node', { skip: withoutRealNode(cluster) }, () => {
  let real: string;
  let realController: ControllerProcess;
  before(async () => {
    const ns = await freshNamespace(cluster, 'pbt-real', { pods: 'real' });
    real = ns.name;
    cleanups.push(ns.cleanup);
    await cluster.loadImage(toolsImage);
    realController = await startOperator(cluster, real, ['podbuggertool'], scratch);
  });
  after(() => realController?.stop());

  it('adds a debug container a person can exec into and see the target container\'s processes', async () => {
    const tools = 'keelson.local/tools:1';
    await cluster.kubectl(['apply', '-n', real, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'app', labels: { app: 'real' } }, spec: { terminationGracePeriodSeconds: 1, containers: [
        { name: 'app', image: tools, imagePullPolicy: 'Never', command: ['sh', '-c', 'exec sleep 3600'] }] } }) });
    await waitForPod(cluster, real, 'app', 'Running and Ready', (p) => p.status?.phase === 'Running' && isReady(p));
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PodBuggerTool', metadata: { name: 'real-debug', namespace: real },
      spec: { label: 'app=real', image: tools, profile: 'general' } });
    const name = containerName('real-debug', tools);
    await waitForPod(cluster, real, 'app', `running debug container ${name}`, (p) =>
      p.status?.ephemeralContainerStatuses?.some((c: any) => c.name === name && c.state?.running));
    const listing = (await cluster.kubectl(['exec', '-n', real, 'app', '-c', name, '--', 'ps', '-o', 'pid,args'])).stdout;
    assert.match(listing, /^\s*1\s+sleep 3600$/m, `the target's process is not PID 1 of the shared namespace:\n${listing}`);
  });
});

