import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import { operatorInFreshNamespace } from '../../../test/support/operator.ts';
import { waitFor } from '../../../cluster/wait.ts';

const cluster = testCluster();
const run = operatorInFreshNamespace(cluster, 'tdset', ['tdset']);
const { kubectl, json, get, events } = inNamespace(cluster, () => run.namespace);

// Schedules are built around the current UTC hour, so the window in force is known without faking any clock: the
// current window spans two hours, so no boundary passes while a test runs unless it starts in the last seconds.
const hour = new Date().getUTCHours();
const open = { startTime: hour, endTime: (hour + 2) % 24 };
const current = `${open.startTime}-${open.endTime}`;

function tdset(name: string, spec: Record<string, unknown> = {}): string {
  return JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', metadata: { name, namespace: run.namespace },
    spec: { container: { image: 'registry.example/hello:1', port: 8000 }, defaultReplica: 1,
      schedulingConfig: [{ ...open, replica: 3 }], ...spec } });
}

const patch = (name: string, body: object) => kubectl('patch', 'tds', name, '--type=merge', '-p', JSON.stringify(body));

function replicasOf(name: string, replicas: number): Promise<any> {
  return waitFor(`Deployment ${name} to have ${replicas} replicas`, async () => {
    const deployment = await get('deployment', name);
    return deployment?.spec.replicas === replicas ? deployment : undefined;
  });
}

function condition(name: string, type: string, status: string, reason: string): Promise<any> {
  return waitFor(`TDSet ${name} ${type}=${status} (${reason})`, async () => {
    const object = await get('tds', name);
    const found = object?.status?.conditions?.find((c: any) => c.type === type);
    return found?.status === status && found.reason === reason &&
      found.observedGeneration === object.metadata.generation ? object : undefined;
  });
}

function event(name: string, reason: string, note: RegExp): Promise<any> {
  return waitFor(`a ${reason} Event on ${name}`, async () => {
    return (await events(name)).find((e: any) => e.reason === reason && note.test(e.note));
  });
}

describe('TDSet against the real control plane, as its ServiceAccount', () => {
  it('runs the Deployment the current window asks for, and reports it', async () => {
    await cluster.kubectl(['apply', '-f', '-'], { input: tdset('web') });
    const deployment = await replicasOf('web', 3);
    const [owner] = deployment.metadata.ownerReferences;
    assert.deepEqual([owner.kind, owner.name, owner.controller, owner.blockOwnerDeletion], ['TDSet', 'web', true, true]);
    assert.equal(deployment.metadata.labels['app.kubernetes.io/name'], 'web');
    assert.equal(deployment.metadata.labels['app.kubernetes.io/managed-by'], 'keelson');
    const [container] = deployment.spec.template.spec.containers;
    assert.equal(container.image, 'registry.example/hello:1');
    assert.deepEqual(container.ports, [{ name: 'http', containerPort: 8000, protocol: 'TCP' }]);

    const ready = await condition('web', 'Ready', 'True', 'Available');
    assert.equal(ready.status.desiredReplicas, 3);
    assert.equal(ready.status.activeWindow, current);
    const next = new Date();
    next.setUTCHours(open.startTime + 2, 0, 0, 0);
    assert.equal(ready.status.nextTransitionTime, next.toISOString().replace('.000', ''));
    await event('web', 'Created', new RegExp(`^Created Deployment web with 3 replicas: window ${current}$`));
    // Someone else's Deployment of the name would refuse the create: a new TDSet's is made without a read.
    assert.equal(await run.controller.metric('keelson_client_requests_total', { verb: 'get', resource: 'deployments' }), 0,
      'a new TDSet read its Deployment before creating it');
    const columns = (await kubectl('get', 'tds', 'web')).stdout.split('\n');
    assert.match(columns[0]!, /^NAME\s+TARGET\s+REPLICAS\s+WINDOW\s+NEXT\s+READY\s+AGE$/);
    assert.match(columns[1]!, new RegExp(`^web\\s+Deployment/web\\s+3\\s+${current}\\s+${ready.status.nextTransitionTime}\\s+True\\s+`));
  });

  it('follows an edited schedule, with an Event saying why it scaled', async () => {
    await patch('web', { spec: { schedulingConfig: [{ ...open, replica: 5 }] } });
    await replicasOf('web', 5);
    await event('web', 'Scaled', new RegExp(`^Scaled from 3 to 5 replicas: window ${current}$`));
    await patch('web', { spec: { schedulingConfig: [] } });
    await replicasOf('web', 1);
    await event('web', 'Scaled', /^Scaled from 5 to 1 replicas: outside every window$/);
    const status = (await condition('web', 'Ready', 'True', 'Available')).status;
    assert.equal(status.activeWindow, 'default');
    assert.equal(status.nextTransitionTime, undefined);
    await patch('web', { spec: { schedulingConfig: [{ ...open, replica: 5 }] } });
    await replicasOf('web', 5);
  });

  it('reverts a manual kubectl scale', async () => {
    await kubectl('scale', 'deployment', 'web', '--replicas=2');
    await replicasOf('web', 5);
  });

  it('rolls out a new image and corrects drift in what it owns', async () => {
    await patch('web', { spec: { container: { image: 'registry.example/hello:2' } } });
    await waitFor('the new image in the Deployment', async () =>
      (await json('deployment', 'web')).spec.template.spec.containers[0].image === 'registry.example/hello:2');
    await waitFor('pods of the new image', async () => (await json('pods', '-l', 'app.kubernetes.io/name=web')).items
      .some((p: any) => p.spec.containers[0].image === 'registry.example/hello:2'));
    await kubectl('label', 'deployment', 'web', 'app.kubernetes.io/managed-by-');
    await waitFor('the label restored', async () =>
      (await json('deployment', 'web')).metadata.labels['app.kubernetes.io/managed-by'] === 'keelson');
  });

  it('adds a Service when spec.service is set and deletes it when removed', async () => {
    await patch('web', { spec: { service: { port: 80 } } });
    const service = await waitFor('Service web', () => get('service', 'web'));
    assert.deepEqual(service.spec.ports.map((p: any) => [p.name, p.port, p.targetPort]), [['http', 80, 'http']]);
    assert.deepEqual(service.spec.selector, { 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': 'web' });
    // Later passes keep it: the same Service, not one deleted and made again.
    const reconciles = () => run.controller.metric('controller_runtime_reconcile_total', { controller: 'tdset' });
    const before = await reconciles();
    await kubectl('annotate', 'tds', 'web', 'keelson.dev/poke=1');
    await waitFor('another pass', async () => await reconciles() > before || undefined);
    assert.equal((await get('service', 'web'))?.metadata.uid, service.metadata.uid, 'the Service was made again');
    await kubectl('patch', 'tds', 'web', '--type=json', '-p', '[{"op":"remove","path":"/spec/service"}]');
    await waitFor('Service web to be deleted', async () => (await get('service', 'web')) === undefined);
  });

  it('leaves a Deployment it does not own alone, and says so', async () => {
    await kubectl('create', 'deployment', 'theirs', '--image=registry.example/theirs:1', '--replicas=2');
    await cluster.kubectl(['apply', '-f', '-'], { input: tdset('theirs') });
    const reported = await condition('theirs', 'Ready', 'False', 'NotOwned');
    assert.match(reported.status.conditions.find((c: any) => c.type === 'Ready').message,
      /^Deployment theirs already exists and is not owned by this TDSet/);
    await event('theirs', 'NotOwned', /not owned by this TDSet/);
    const deployment = await json('deployment', 'theirs');
    assert.equal(deployment.spec.replicas, 2);
    assert.equal(deployment.metadata.ownerReferences, undefined);
    assert.equal(deployment.spec.template.spec.containers[0].image, 'registry.example/theirs:1');
  });

  it('reports what no schema can say as Ready=False, and leaves the Deployment untouched', async () => {
    await patch('web', { spec: { schedulingConfig: [{ ...open, replica: 9 },
      { startTime: (hour + 1) % 24, endTime: (hour + 3) % 24, replica: 4 }] } });
    const invalid = await condition('web', 'Ready', 'False', 'InvalidSpec');
    assert.match(invalid.status.conditions.find((c: any) => c.type === 'Ready').message,
      /spec\.schedulingConfig\[1\]: window \d+-\d+ overlaps window \d+-\d+; nothing was changed/);
    await event('web', 'InvalidSpec', /overlaps/);
    assert.equal((await json('deployment', 'web')).spec.replicas, 5);

    await patch('web', { spec: { schedulingConfig: [{ ...open, replica: 5 }], timeZone: 'Mars/Olympus_Mons' } });
    const zone = await condition('web', 'Ready', 'False', 'InvalidSpec');
    assert.match(zone.status.conditions.find((c: any) => c.type === 'Ready').message,
      /spec\.timeZone: "Mars\/Olympus_Mons" is not a known IANA time zone/);
    await patch('web', { spec: { timeZone: 'UTC' } });
    await condition('web', 'Ready', 'True', 'Available');
  });

  it('has the apiserver reject what the schema says, naming the field', async () => {
    const result = await cluster.kubectl(['apply', '-f', '-'], { input: tdset('bad', {
      schedulingConfig: [{ startTime: 24, endTime: 2, replica: 1 }] }), allowFailure: true });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /spec\.schedulingConfig\[0\]\.startTime: Invalid value: 24/);
  });

  it('is cleaned up by the garbage collector when deleted', async () => {
    await patch('web', { spec: { service: { port: 80 } } });
    await waitFor('Service web', () => get('service', 'web'));
    await kubectl('delete', 'tds', 'web');
    await waitFor('the Deployment and Service to be collected', async () =>
      (await get('deployment', 'web')) === undefined && (await get('service', 'web')) === undefined,
    { timeoutMs: 60_000 });
  });

  it('takes back its Deployment when someone strips Keelson\'s label from it', async () => {
    await cluster.kubectl(['apply', '-f', '-'], { input: tdset('relabel') });
    await replicasOf('relabel', 3);
    await kubectl('label', 'deployment', 'relabel', 'app.kubernetes.io/managed-by-');
    await waitFor('the label back', async () =>
      (await get('deployment', 'relabel'))?.metadata.labels['app.kubernetes.io/managed-by'] === 'keelson');
  });

  it('caches only its own Deployments among 5,000 it does not own, and still runs new ones', async () => {
    const crowd = Array.from({ length: 5000 }, (_, i) => ({ apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name: `crowd-${i}`, labels: { app: 'crowd' } }, spec: { replicas: 0, selector: { matchLabels: { app: 'crowd' } },
        template: { metadata: { labels: { app: 'crowd' } }, spec: { containers: [{ name: 'app', image: 'registry.example/crowd:1' }] } } } }));
    await cluster.kubectl(['create', '-n', run.namespace, '-f', '-', '-o', 'name'],
      { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: crowd }) });
    await cluster.kubectl(['apply', '-f', '-'], { input: tdset('after-crowd') });
    await replicasOf('after-crowd', 3);
    const own = (await json('deployments', '-l', 'app.kubernetes.io/managed-by=keelson')).items.length;
    const all = (await json('deployments')).items.length;
    assert.ok(all >= 5000 + own, `${all} Deployments in the namespace`);
    const cached = await run.controller.metric('keelson_cache_objects',
      { resource: `deployments.apps in ${run.namespace} (app.kubernetes.io/managed-by=keelson)` });
    assert.equal(cached, own);
  });

  it('never met a 403', async () => {
    assert.equal(await run.controller.metric('keelson_client_requests_total', { code: '403' }), 0);
    assert.deepEqual(run.controller.logs.filter((l) => /forbidden/i.test(JSON.stringify(l))), []);
  });
});
