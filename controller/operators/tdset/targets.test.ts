// TDSets on workloads they do not own, and on a pod template of their own, against the real control plane, as the
// operator's ServiceAccount, in a namespace that enforces the restricted Pod Security Standard.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testCluster } from '../../../test/support/cluster.ts';
import { grant, inNamespace } from '../../../test/support/namespace.ts';
import { operatorInFreshNamespace } from '../../../test/support/operator.ts';
import { waitFor } from '../../../cluster/wait.ts';

const cluster = testCluster();
/** A custom resource of a test group, with a scale subresource or without. */
const customResource = (kind: string, plural: string, scale: boolean) => ({ apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition', metadata: { name: `${plural}.example.com` }, spec: { group: 'example.com',
    scope: 'Namespaced', names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: {
      spec: { type: 'object', properties: { replicas: { type: 'integer', maximum: 5 }, colour: { type: 'string' } } },
      status: { type: 'object', properties: { replicas: { type: 'integer' } } } } } },
    subresources: { status: {}, ...(scale ? { scale: { specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas' } } : {}) } }] } });
const run = operatorInFreshNamespace(cluster, 'tdset-targets', ['tdset'], {
  props: { tdsetScaleResources: [{ group: 'example.com', resource: 'widgets', kind: 'Widget' },
    { group: 'example.com', resource: 'gadgets', kind: 'Gadget' }] },
  prepare: async (namespace) => {
    await cluster.kubectl(['label', 'namespace', namespace, 'pod-security.kubernetes.io/enforce=restricted']);
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List',
      items: [customResource('Widget', 'widgets', true), customResource('Gadget', 'gadgets', false)] }) });
    await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd/widgets.example.com',
      'crd/gadgets.example.com']);
  } });
const { kubectl, json, get, events } = inNamespace(cluster, () => run.namespace);

const dayNames = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const hhmm = (at: Date) => at.toISOString().slice(11, 16);
/** A pod spec the restricted standard admits. */
const restrictedPod = { securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [{ name: 'app', image: 'registry.example/shop:1', securityContext: { allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] } } }] };
const workload = (kind: 'Deployment' | 'StatefulSet', name: string, replicas: number) => JSON.stringify({
  apiVersion: 'apps/v1', kind, metadata: { name, namespace: run.namespace, labels: { team: 'shop' }, annotations: { note: 'theirs' } },
  spec: { replicas, selector: { matchLabels: { app: name } }, ...(kind === 'StatefulSet' ? { serviceName: name } : {}),
    template: { metadata: { labels: { app: name } }, spec: restrictedPod } } });
const tdset = (name: string, spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
  kind: 'TDSet', metadata: { name, namespace: run.namespace }, spec: { timeZone: 'UTC', defaultReplica: 1, ...spec } });
const allDay = [{ days: dayNames, start: '00:00', end: '00:00', replicas: 2 }];
const widget = (name: string, replicas: number) => JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget',
  metadata: { name, namespace: run.namespace, labels: { team: 'shop' } }, spec: { replicas, colour: 'blue' } });
const apply = (body: string) => cluster.kubectl(['apply', '-f', '-'], { input: body, allowFailure: true });
const patch = (name: string, body: object) => kubectl('patch', 'tds', name, '--type=merge', '-p', JSON.stringify(body));

function replicasOf(kind: string, name: string, replicas: number, timeoutMs = 30_000): Promise<any> {
  return waitFor(`${kind} ${name} to have ${replicas} replicas`, async () => {
    const object = await get(kind, name);
    return object?.spec.replicas === replicas ? object : undefined;
  }, { timeoutMs });
}

/** Ready's reason as `reason`; a target is read again every 30 s, so what someone else did shows within that. */
function ready(name: string, reason: string, timeoutMs = 60_000): Promise<any> {
  return waitFor(`TDSet ${name} Ready (${reason})`, async () => {
    const object = await get('tds', name);
    const found = object?.status?.conditions?.find((c: any) => c.type === 'Ready');
    return found?.reason === reason && found.observedGeneration === object.metadata.generation ? object : undefined;
  }, { timeoutMs });
}

describe('TDSet on workloads it does not own', () => {
  it('scales a Deployment at the minute its window opens, through its scale subresource, changing nothing else',
    async () => {
      assert.equal((await apply(workload('Deployment', 'shop', 2))).code, 0);
      const before = await json('deployment', 'shop');
      // A window that opens two to three minutes ahead, for half an hour.
      const opens = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 2 * 60_000);
      const window = { days: [dayNames[opens.getUTCDay()]], start: hhmm(opens),
        end: hhmm(new Date(opens.getTime() + 30 * 60_000)), replicas: 3 };
      assert.equal((await apply(tdset('shop', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' },
        schedule: [window] }))).code, 0);
      // A StatefulSet, and a custom resource with a scale subresource, on the same window.
      const others = [{ resource: 'statefulset', tdset: 'cache', ref: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'cache' },
        body: workload('StatefulSet', 'cache', 2) }, { resource: 'widget', tdset: 'widget',
        ref: { apiVersion: 'example.com/v1', kind: 'Widget', resource: 'widgets', name: 'shop' }, body: widget('shop', 2) }];
      const othersBefore: any[] = [];
      for (const other of others) {
        assert.equal((await apply(other.body)).code, 0);
        othersBefore.push(await json(other.resource, other.ref.name));
        assert.equal((await apply(tdset(other.tdset, { scaleTargetRef: other.ref, schedule: [window] }))).code, 0);
      }
      const outside = await replicasOf('deployment', 'shop', 1);
      const othersOutside = await Promise.all(others.map((o) => replicasOf(o.resource, o.ref.name, 1)));
      const waiting = await ready('shop', 'Scaled');
      assert.deepEqual([waiting.status.target, waiting.status.originalReplicas, waiting.status.activeWindow,
        waiting.status.nextTransitionTime], ['Deployment/shop', 2, 'default', opens.toISOString().replace('.000', '')]);

      const inside = await replicasOf('deployment', 'shop', 3, opens.getTime() - Date.now() + 30_000);
      assert.ok(Date.now() >= opens.getTime(), 'scaled before the window opened');
      for (const [i, other] of others.entries()) {
        const scaled = [othersOutside[i], await replicasOf(other.resource, other.ref.name, 3)];
        // Nothing but the replicas, each change one write (the custom resource's generation counts them).
        for (const [j, object] of scaled.entries()) {
          assert.deepEqual([{ ...object.spec, replicas: 0 }, object.metadata.labels, object.metadata.annotations],
            [{ ...othersBefore[i].spec, replicas: 0 }, othersBefore[i].metadata.labels, othersBefore[i].metadata.annotations]);
          if (other.resource === 'widget') assert.equal(object.metadata.generation - othersBefore[i].metadata.generation, j + 1);
        }
        assert.equal((await get('tds', other.tdset)).status.target, `${other.ref.kind}/${other.ref.name}`);
        await kubectl('delete', 'tds', other.tdset);
        await replicasOf(other.resource, other.ref.name, 2);
      }
      const name = `${window.days[0]} ${window.start}-${window.end}`;
      await waitFor(`status.activeWindow ${name}`, async () => (await get('tds', 'shop')).status.activeWindow === name);
      const notes = await waitFor('both Scaled Events', async () => {
        const seen = (await events('shop')).map((e: any) => `${e.reason} ${e.note}`);
        return seen.includes('Scaled Scaled Deployment/shop from 2 to 1 replicas: outside every window') &&
          seen.includes(`Scaled Scaled Deployment/shop from 1 to 3 replicas: ${name}`) ? seen : undefined;
      });
      assert.equal(notes.filter((n: string) => n.startsWith('Scaled ')).length, 2);
      // Nothing but the replicas: not its template, labels, annotations or owners.
      for (const scaled of [outside, inside]) {
        assert.deepEqual({ ...scaled.spec, replicas: 0 }, { ...before.spec, replicas: 0 });
        assert.deepEqual([scaled.metadata.labels, scaled.metadata.annotations?.note, scaled.metadata.ownerReferences],
          [before.metadata.labels, 'theirs', undefined]);
      }
      const columns = (await kubectl('get', 'tds', 'shop')).stdout.split('\n');
      assert.match(columns[0]!, /^NAME\s+TARGET\s+REPLICAS\s+WINDOW\s+NEXT\s+READY\s+AGE$/);
      assert.match(columns[1]!, /^shop\s+Deployment\/shop\s+3\s+\w{3} \d\d:\d\d-\d\d:\d\d\s+\S+\s+True\s+/);
    });

  it('keeps replicas set by hand until the schedule next changes; holds an override until its time; pauses', async () => {
    await kubectl('scale', 'deployment', 'shop', '--replicas=7');
    const kept = await ready('shop', 'ChangedElsewhere');
    assert.match(kept.status.conditions.find((c: any) => c.type === 'Ready').message,
      /^Deployment\/shop has 7 replicas, set by someone else since the TDSet set 3/);
    assert.equal((await json('deployment', 'shop')).spec.replicas, 7);

    const until = new Date(Date.now() + 40_000);
    await patch('shop', { spec: { override: { replicas: 5, until: until.toISOString() } } });
    await replicasOf('deployment', 'shop', 5);
    await waitFor('status.activeWindow override', async () => (await get('tds', 'shop')).status.activeWindow === 'override');
    await replicasOf('deployment', 'shop', 3, until.getTime() - Date.now() + 30_000);
    assert.ok(Date.now() >= until.getTime(), 'the override ended early');

    await patch('shop', { spec: { paused: true, defaultReplica: 4 } });
    await ready('shop', 'Paused');
    await patch('shop', { spec: { schedule: allDay.map((w) => ({ ...w, replicas: 6 })) } });
    const paused = await ready('shop', 'Paused');
    assert.equal(paused.status.desiredReplicas, 6);
    assert.equal((await json('deployment', 'shop')).spec.replicas, 3);
    await patch('shop', { spec: { paused: false } });
    await replicasOf('deployment', 'shop', 6);
    await waitFor('6 recorded as set', async () => (await get('tds', 'shop')).status.appliedReplicas === 6);
  });

  it('gives the Deployment back the replicas it found when the TDSet is deleted', async () => {
    await kubectl('delete', 'tds', 'shop', '--wait=false');
    await replicasOf('deployment', 'shop', 2);
    await waitFor('TDSet shop gone', async () => (await get('tds', 'shop')) === undefined);
    assert.ok((await events('shop')).some((e: any) => e.reason === 'Restored' &&
      e.note === 'Gave Deployment/shop back the 2 replicas it had before this TDSet scaled it'));
  });

  it('scales a StatefulSet, and leaves it as someone else set it when the TDSet is deleted', async () => {
    assert.equal((await apply(workload('StatefulSet', 'db', 1))).code, 0);
    await apply(tdset('db', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db' }, schedule: allDay }));
    await replicasOf('statefulset', 'db', 2);
    await waitFor('two pods of db', async () => (await json('pods', '-l', 'app=db')).items.length === 2);
    await kubectl('scale', 'statefulset', 'db', '--replicas=4');
    await ready('db', 'ChangedElsewhere');
    await kubectl('delete', 'tds', 'db');
    assert.equal((await json('statefulset', 'db')).spec.replicas, 4);
  });

  it('leaves a target another TDSet scales to that one, and says so', async () => {
    await apply(tdset('first', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' }, schedule: allDay }));
    await ready('first', 'Scaled');
    await apply(tdset('second', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' },
      schedule: allDay.map((w) => ({ ...w, replicas: 9 })) }));
    const taken = await ready('second', 'TargetTaken');
    assert.match(taken.status.conditions.find((c: any) => c.type === 'Ready').message,
      /^TDSet first scales Deployment\/shop already/);
    assert.equal((await json('deployment', 'shop')).spec.replicas, 2);
    await kubectl('delete', 'tds', 'first', 'second');
    // Nor one its controller would scale back: the Deployment's ReplicaSet.
    const replicaSet = (await json('replicasets', '-l', 'app=shop')).items[0].metadata.name;
    await apply(tdset('rs', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSet },
      schedule: allDay.map((w) => ({ ...w, replicas: 5 })), restoreOnDelete: false }));
    const controlled = await ready('rs', 'TargetControlled');
    assert.match(controlled.status.conditions.find((c: any) => c.type === 'Ready').message,
      new RegExp(`^ReplicaSet/${replicaSet} is controlled by Deployment/shop, which would undo any scale`));
    await kubectl('delete', 'tds', 'rs');
  });

  it('sets the bounds of the autoscaler on its target instead of the replicas, and the two never flap', async () => {
    assert.equal((await apply(workload('Deployment', 'api', 1))).code, 0);
    assert.equal((await apply(JSON.stringify({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'api', namespace: run.namespace }, spec: { minReplicas: 1, maxReplicas: 6,
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'api' },
        metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }] } }))).code, 0);
    const target = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'api' };
    // Not named, the autoscaler is left the workload: nothing is changed.
    await apply(tdset('api', { scaleTargetRef: target, schedule: allDay.map((w) => ({ ...w, replicas: 4 })) }));
    const conflict = await ready('api', 'AutoscalerConflict');
    assert.match(conflict.status.conditions.find((c: any) => c.type === 'Ready').message,
      /^HorizontalPodAutoscaler api scales Deployment\/api too: name it in spec.horizontalPodAutoscaler/);
    assert.equal((await json('hpa', 'api')).spec.minReplicas, 1);

    await kubectl('delete', 'tds', 'api');
    await apply(tdset('api-hpa', { scaleTargetRef: target, horizontalPodAutoscaler: { name: 'api' },
      schedule: allDay.map((w) => ({ ...w, replicas: 4, maxReplicas: 8 })) }));
    await waitFor('the autoscaler\'s bounds at 4 and 8', async () => {
      const { minReplicas, maxReplicas } = (await json('hpa', 'api')).spec;
      return minReplicas === 4 && maxReplicas === 8;
    });
    // The autoscaler itself brings the Deployment up to its new minimum.
    await replicasOf('deployment', 'api', 4, 60_000);
    await ready('api-hpa', 'Autoscaled');
    const writes = async () => await run.controller.metric('keelson_client_requests_total', { verb: 'patch',
      resource: 'horizontalpodautoscalers' }) + await run.controller.metric('keelson_client_requests_total',
      { verb: 'patch', resource: 'deployments' });
    const reconciles = () => run.controller.metric('controller_runtime_reconcile_total', { controller: 'tdset' });
    const [writesBefore, reconcilesBefore] = [await writes(), await reconciles()];
    // Two looks at the target later (every 30 s), and the autoscaler's syncs between: not one write more.
    await waitFor('two more looks at the target', async () => await reconciles() >= reconcilesBefore + 2 || undefined,
      { timeoutMs: 90_000 });
    assert.equal(await writes(), writesBefore);
    assert.deepEqual([(await json('hpa', 'api')).spec.minReplicas, (await json('deployment', 'api')).spec.replicas], [4, 4]);

    await kubectl('delete', 'tds', 'api-hpa');
    const { minReplicas, maxReplicas } = (await json('hpa', 'api')).spec;
    assert.deepEqual([minReplicas, maxReplicas], [1, 6]);
    assert.ok((await events('api-hpa')).some((e: any) => e.reason === 'Restored' &&
      e.note === 'Gave HorizontalPodAutoscaler api back the minReplicas 1 and maxReplicas 6 it had before this TDSet set them'));
    // The autoscaler's replicas are its own: not taken back to the 1 the Deployment had.
    assert.equal((await json('deployment', 'api')).spec.replicas, 4);
  });

  it('runs a Deployment of its own from a pod template, hardened so that the restricted standard admits it', async () => {
    await apply(tdset('tpl', { schedule: allDay, template: { metadata: { labels: { tier: 'web' } }, spec: {
      containers: [{ name: 'app', image: 'registry.example/tpl:1', env: [{ name: 'MODE', value: 'live' }] }] } } }));
    const pods = await waitFor('two pods of tpl admitted', async () => {
      const items = (await json('pods', '-l', 'app.kubernetes.io/instance=tpl')).items;
      return items.length === 2 ? items : undefined;
    });
    assert.deepEqual(pods[0].spec.containers[0].env, [{ name: 'MODE', value: 'live' }]);
    assert.equal(pods[0].metadata.labels.tier, 'web');
  });

  it('has the apiserver refuse what CEL can say: one workload, windows that overlap, a target changed', async () => {
    const refused = async (name: string, spec: Record<string, unknown>, message: RegExp) => {
      const result = await apply(tdset(name, spec));
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, message);
    };
    const target = { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' };
    await refused('two', { scaleTargetRef: target, container: { image: 'x:1', port: 80 }, schedule: allDay },
      /give exactly one of spec.container, spec.template and spec.scaleTargetRef/);
    await refused('both', { scaleTargetRef: target, schedule: allDay, schedulingConfig: [] },
      /give exactly one of spec.schedule and spec.schedulingConfig/);
    await refused('overlap', { scaleTargetRef: target, schedule: [
      { days: ['Fri'], start: '22:00', end: '02:00', replicas: 1 }, { days: ['Sat'], start: '01:00', end: '03:00', replicas: 2 }] },
    /windows overlap/);
    await refused('holiday', { scaleTargetRef: target, schedule: allDay,
      exceptions: [{ date: '2026-12-25', from: '2026-12-24', to: '2026-12-26', replicas: 0 }] }, /give either date, or from and to/);
    await refused('clock', { scaleTargetRef: target, schedule: [{ days: ['Mon'], start: '24:00', end: '01:00', replicas: 1 }] },
      /spec.schedule\[0\].start/);
    await refused('bound', { scaleTargetRef: target, schedule: allDay.map((w) => ({ ...w, maxReplicas: 1 })) },
      /spec.schedule\[0\].maxReplicas: Invalid value: .*maxReplicas must be at least replicas/);
    await refused('unbounded', { scaleTargetRef: target, schedule: allDay, defaultMaxReplicas: 3 },
      /maxReplicas are the autoscaler's: give spec.horizontalPodAutoscaler/);
    await refused('plural', { scaleTargetRef: { apiVersion: 'example.com/v1', kind: 'Widget', name: 'shop' }, schedule: allDay },
      /give resource \(the plural, e.g. widgets\) for a custom resource/);
    await apply(tdset('moves', { scaleTargetRef: target, schedule: allDay, restoreOnDelete: false }));
    const moved = await kubectl('patch', 'tds', 'moves', '--type=merge', '-p',
      JSON.stringify({ spec: { scaleTargetRef: { ...target, name: 'other' } } })).then(() => '', (e: Error) => e.message);
    assert.match(moved, /spec.scaleTargetRef cannot be set, changed or removed: make a new TDSet/);
    await kubectl('delete', 'tds', 'moves');
  });

  it('scales only the custom resources the install names, and those only for whoever may scale them', async () => {
    // Listed, but its CustomResourceDefinition declares no scale subresource.
    await apply(JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g', namespace: run.namespace },
      spec: { replicas: 1 } }));
    await apply(tdset('gadget', { scaleTargetRef: { apiVersion: 'example.com/v1', kind: 'Gadget', resource: 'gadgets', name: 'g' },
      schedule: allDay }));
    const noScale = await ready('gadget', 'TargetNotScalable');
    assert.equal(noScale.status.conditions.find((c: any) => c.type === 'Ready').message, 'Gadget/g has no scale ' +
      'subresource: its CustomResourceDefinition declares none (spec.versions[].subresources.scale)');
    // Not listed: not scaled, whatever it is.
    await apply(tdset('gizmo', { scaleTargetRef: { apiVersion: 'example.com/v1', kind: 'Gizmo', resource: 'gizmos', name: 'g' },
      schedule: allDay }));
    const unlisted = await ready('gizmo', 'TargetNotScalable');
    assert.ok(unlisted.status.conditions.find((c: any) => c.type === 'Ready').message.startsWith('this install scales ' +
      'Deployments, StatefulSets, ReplicaSets and widgets.example.com:Widget, gadgets.example.com:Gadget, not ' +
      'gizmos.example.com:Gizmo: '));
    // A listed kind with another plural than the install's is not it: admission asked for that plural's scale.
    await apply(tdset('aliased', { scaleTargetRef: { apiVersion: 'example.com/v1', kind: 'Widget', resource: 'gadgets',
      name: 'shop' }, schedule: allDay }));
    await ready('aliased', 'TargetNotScalable');
    await kubectl('delete', 'tds', 'gadget', 'gizmo', 'aliased');

    // A scale the apiserver refuses for good is said, and not asked for again before the target is read again (each
    // attempt writes status, and each write would reconcile at once).
    await apply(widget('big', 1));
    await apply(tdset('capped', { scaleTargetRef: { apiVersion: 'example.com/v1', kind: 'Widget', resource: 'widgets',
      name: 'big' }, schedule: allDay.map((w) => ({ ...w, replicas: 9 })) }));
    const capped = await ready('capped', 'ChangeRefused');
    const refusedAt = Date.now();
    assert.match(capped.status.conditions.find((c: any) => c.type === 'Ready').message,
      /^the apiserver refused to scale Widget\/big: .*; tried again in 30s$/);
    const refusals = () => run.controller.metric('keelson_client_requests_total', { verb: 'patch', resource: 'widgets',
      code: '422' });
    await waitFor('the refused scale asked for again', async () => await refusals() >= 2 || undefined, { timeoutMs: 90_000 });
    assert.ok(Date.now() - refusedAt > 20_000, 'the refused scale was asked for again at once');
    assert.equal((await json('widget', 'big')).spec.replicas, 1);
    await kubectl('delete', 'tds', 'capped');

    // Admission asks whoever points a TDSet at a Widget for patch on its scale, as for a Deployment.
    const onKind = (kind: string, resource: string) => tdset('by-user', { scaleTargetRef: { apiVersion: 'example.com/v1',
      kind, resource, name: 'shop' }, schedule: allDay });
    const applyAs = async (body = onKind('Widget', 'widgets')) => (await cluster.kubectl(['apply', '--dry-run=server', '--as',
      'tds-user', '-f', '-'], { input: body, allowFailure: true })).stderr;
    const own = { apiGroups: ['keelson.dev'], resources: ['tdsets'], verbs: ['get', 'create', 'patch'] };
    await grant(cluster, run.namespace, 'tds-user', [own]);
    await waitFor('the TDSet refused', async () => (await applyAs()).includes('tds-user may not create or change this ' +
      `TDSet: it needs patch on widgets.example.com/scale named shop in namespace ${run.namespace}`) || undefined);
    // Also for a kind this install does not list: another install, or this one later, might.
    assert.match(await applyAs(onKind('Gizmo', 'gizmos')), /it needs patch on gizmos.example.com\/scale named shop/);
    await grant(cluster, run.namespace, 'tds-user', [own, { apiGroups: ['example.com'], resources: ['widgets/scale'],
      verbs: ['patch'], resourceNames: ['shop'] }]);
    await waitFor('the TDSet admitted', async () => (await applyAs()) === '' || undefined);
  });

  it('never met a 403', async () => {
    assert.equal(await run.controller.metric('keelson_client_requests_total', { code: '403' }), 0);
  });
});
