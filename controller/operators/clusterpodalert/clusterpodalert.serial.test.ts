// ClusterPodAlert against the real control plane, as its ServiceAccount watching every namespace: pods of
// namespaces picked by label, one alert per workload and namespace, into a webhook and a real Alertmanager.
// Serial: a controller watching every namespace must not share the cluster with tests of other namespaces.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { installSimulationStages, simulateLabel } from '../../../cluster/stages.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { startAlertmanager, type Alertmanager } from '../../../test/support/alertmanager.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';

const cluster = testCluster();
const name = `teams-${process.pid}`;
/** The label that picks namespaces; its value is this run's. */
const picked = 'keelson.dev/test-alerts';
let home: string;
/** Three namespaces picked by label, and one not (yet). */
let teams: string[];
let other: string;
const cleanups: (() => Promise<void>)[] = [];
let scratch: string;
let controller: ControllerProcess;
let alertmanager: Alertmanager;
let hook: Server;
const received: any[] = [];

const kubectl = (...args: string[]) => cluster.kubectl(args);
const label = (namespace: string, value: string | undefined) =>
  kubectl('label', 'namespace', namespace, value === undefined ? `${picked}-` : `${picked}=${value}`, '--overwrite');
const crashLooping = (namespace: string) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace }, spec: { replicas: 2,
    selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web', [simulateLabel]: 'crash-loop' } },
      spec: { containers: [{ name: 'app', image: 'registry.example/web:1' }] } } } }) });
const statusOf = (what: string, ok: (status: any) => boolean) => waitFor(`ClusterPodAlert ${name}: ${what}`, async () => {
  const status = (await cluster.getJson('', 'clusterpodalert', name))?.status;
  return status && ok(status) ? status : undefined;
}, { timeoutMs: 90_000 });
const namespacesOf = (entries: { namespace?: string }[]) => entries.map((e) => e.namespace).sort();

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keelson-clusterpodalert-test-'));
  const fresh = await Promise.all(['cpa-home', 'cpa-a', 'cpa-b', 'cpa-c', 'cpa-other'].map((p) => freshNamespace(cluster, p)));
  cleanups.push(...fresh.map((f) => f.cleanup));
  [home, ...teams] = fresh.map((f) => f.name) as [string, ...string[]];
  other = teams.pop()!;
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk)).on('end', () => {
      if (req.url === '/hook') received.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const hookBase = `http://127.0.0.1:${(hook.address() as { port: number }).port}`;
  alertmanager = await startAlertmanager(`${hookBase}/alertmanager`);
  await Promise.all([installCrds(cluster), installSimulationStages(cluster)]);
  await kubectl('create', 'secret', 'generic', 'hook', `--from-literal=url=${hookBase}/hook`, '-n', home);
  await Promise.all([...teams.map((t) => label(t, name)), ...[...teams, other].map(crashLooping)]);
  controller = await startOperator(cluster, home, ['clusterpodalert'], scratch, { allNamespaces: true });
});
after(async () => {
  await kubectl('delete', 'clusterpodalert', name, '--ignore-not-found');
  await controller?.stop();
  await alertmanager?.stop();
  await new Promise((resolve) => hook.close(resolve));
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

describe('ClusterPodAlert over namespaces chosen by label', () => {
  it('alerts once per workload and namespace, and follows namespaces labelled in and out', async () => {
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'ClusterPodAlert', metadata: { name }, spec: { namespaceSelector: { matchLabels: { [picked]: name } },
        alerts: { checkRunningPods: true }, gracePeriodSeconds: 0, logLines: 0,
        webhook: { secretRef: { name: 'hook', key: 'url', namespace: home } }, alertmanager: { url: alertmanager.url },
        labels: { team: 'platform' } } }) });

    // One Deployment named web in each of three namespaces: three alerts, of two pods each; the fourth is not picked.
    const status = await statusOf('three alerts, delivered', (s) => s.workloads?.length === 3 &&
      s.workloads.every((w: any) => w.unhealthyPods === 2) && s.pendingNotifications?.length === 0 &&
      s.conditions?.some((c: any) => c.type === 'WebhookDelivered' && c.status === 'True'));
    assert.deepEqual(namespacesOf(status.workloads), [...teams].sort());
    assert.deepEqual(status.workloads.map((w: any) => w.owner), ['Deployment/web', 'Deployment/web', 'Deployment/web']);
    assert.equal(status.unhealthyPods, 6);
    assert.equal(status.conditions.find((c: any) => c.type === 'Ready').message,
      '6 unhealthy pods in the 3 namespaces namespaceSelector picks');
    assert.ok(status.alerts.every((a: any) => teams.includes(a.namespace)), 'a pod listed without its namespace');
    const fired = received.filter((m) => m.event === 'alert');
    assert.deepEqual(namespacesOf(fired), [...teams].sort());
    for (const message of fired) {
      assert.equal(message.text.replace(/: web-.*/, ''), `Deployment web in ${message.namespace}: 2 pods unhealthy ` +
        '(CrashLoopBackOff)');
      assert.deepEqual(message.podAlert, { kind: 'ClusterPodAlert', name });
    }

    // Alertmanager holds one alert per namespace, labelled with the pods' namespace and the ClusterPodAlert.
    const held = await waitFor('Alertmanager to hold three alerts', async () => {
      const alerts = (await alertmanager.alerts()).filter((a) => a.labels.clusterpodalert === name);
      return alerts.length === 3 ? alerts : undefined;
    }, { timeoutMs: 60_000 });
    assert.deepEqual(namespacesOf(held.map((a: any) => a.labels)), [...teams].sort());
    for (const alert of held) {
      assert.deepEqual(Object.keys(alert.labels).sort(), ['alertname', 'clusterpodalert', 'container', 'namespace', 'owner',
        'owner_kind', 'reason', 'severity', 'team']);
    }
    const series = (namespace: string) => controller.metric('keelson_clusterpodalert_pod_unhealthy',
      { clusterpodalert: name, namespace, owner: 'web' });
    assert.deepEqual(await Promise.all([...teams, other].map(series)), [2, 2, 2, 0]);
    assert.equal(await controller.metric('keelson_clusterpodalert_unhealthy_pods', { name }), 6);
    // Its Events are in default, the one namespace the API takes a cluster-scoped object's in; kubectl describe finds them.
    const unhealthy = async () => (await cluster.getJson('default', 'events.events.k8s.io', '--field-selector',
      `regarding.name=${name}`)).items.filter((e: any) => e.reason === 'Unhealthy').map((e: any) => e.note.split(':')[0]).sort();
    const expected = teams.map((t) => `Deployment web in ${t}`).sort();
    await waitFor('an Unhealthy Event per team', async () => (await unhealthy()).length >= expected.length);
    assert.deepEqual(await unhealthy(), expected);
    assert.match((await kubectl('describe', 'clusterpodalert', name)).stdout, /Warning\s+Unhealthy\s.*Deployment web in /);

    // Labelled out, a namespace's alert resolves, there and in Alertmanager; labelled in, another's fires.
    const [leaving, ...staying] = teams as [string, ...string[]];
    await Promise.all([label(leaving, undefined), label(other, name)]);
    await statusOf('the alert of the namespace labelled out resolved, and one for the one labelled in',
      (s) => s.workloads?.length === 3 && !namespacesOf(s.workloads).includes(leaving) &&
        namespacesOf(s.workloads).includes(other) && s.pendingNotifications?.length === 0);
    assert.deepEqual(received.filter((m) => m.event === 'resolved').map((m) => [m.namespace, m.text]),
      [[leaving, `Deployment web in ${leaving} has no unhealthy pod now (was CrashLoopBackOff)`]]);
    assert.deepEqual(namespacesOf(received.filter((m) => m.event === 'alert')), [...teams, other].sort());
    await waitFor('Alertmanager to have ended the alert of the namespace labelled out', async () => {
      const alerts = (await alertmanager.alerts()).filter((a) => a.labels.clusterpodalert === name);
      return namespacesOf(alerts.map((a: any) => a.labels)).join() === [...staying, other].sort().join();
    }, { timeoutMs: 60_000 });
    assert.equal(await series(leaving), 0);
    assert.equal(await series(other), 2);
  });

  it('tells pods of one name in two namespaces apart, one alert each with groupBy pod', async () => {
    const [shop, cart] = teams.slice(1) as [string, string];
    const lone = `lone-${name}`;
    await Promise.all([shop, cart].map((namespace) => kubectl('run', 'lone', '-n', namespace, '--image=registry.example/app:1',
      `--labels=${simulateLabel}=crash-loop,lone=yes`)));
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'ClusterPodAlert', metadata: { name: lone }, spec: { namespaceSelector: { matchLabels: { [picked]: name } },
        selector: { matchLabels: { lone: 'yes' } }, alerts: { checkRunningPods: true }, gracePeriodSeconds: 0, logLines: 0,
        groupBy: 'pod' } }) });
    try {
      const status = await waitFor(`ClusterPodAlert ${lone}: two alerts`, async () => {
        const found = (await cluster.getJson('', 'clusterpodalert', lone))?.status;
        return found?.workloads?.length === 2 ? found : undefined;
      }, { timeoutMs: 60_000 });
      assert.deepEqual(status.workloads.map((w: any) => [w.namespace, w.owner, w.pod]).sort(),
        [[cart, 'Pod/lone', 'lone'], [shop, 'Pod/lone', 'lone']].sort());
      assert.deepEqual(status.alerts.map((a: any) => [a.namespace, a.pod]).sort(), [[cart, 'lone'], [shop, 'lone']].sort());
      // One recovers (it is gone): only its alert resolves.
      await kubectl('delete', 'pod', 'lone', '-n', shop, '--wait=false');
      const after = await waitFor(`ClusterPodAlert ${lone}: one alert left`, async () => {
        const found = (await cluster.getJson('', 'clusterpodalert', lone))?.status;
        return found?.workloads?.length === 1 ? found : undefined;
      }, { timeoutMs: 60_000 });
      assert.deepEqual(after.workloads.map((w: any) => w.namespace), [cart]);
    } finally {
      await kubectl('delete', 'clusterpodalert', lone, '--ignore-not-found');
    }
  });
});
