// The operator's orchestration against the real control plane, with simulated nodes and static volumes, running as
// its ServiceAccount. What PostgreSQL itself does in each step is proven in member.test.ts.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { memberPasswords, serveMemberExec, staticVolumes, type MemberExec } from '../../../test/support/postgres-pods.ts';
import { kwokNodeAnnotation, simulatedNodeTaint, simulatedPodsAnnotations } from '../../../cluster/components.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { issueCa, issueServer, serverProblems } from './certificates.ts';
import { failoverTimeoutMs } from './plan.ts';

const cluster = testCluster();
const { kubectl, get, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let scratch: string;
let controller: ControllerProcess;
let exec: MemberExec;
let shared: MemberExec;
let drainExec: MemberExec;
const cleanups: (() => Promise<void>)[] = [];
const memberNames = Array.from({ length: 6 }, (_, i) => `db-000${i}`);
/** How long a member may be busy here before nothing waits for it (300 s by default). */
const stuckAfterSeconds = 20;

const patch = (spec: object) => kubectl('patch', 'pgc', 'db', '--type=merge', '-p', JSON.stringify({ spec }));
const status = async () => (await get('pgc', 'db'))?.status;
const livePods = async (): Promise<any[]> => (await get('pods', '-l', 'keelson.dev/postgrescluster=db')).items
  .filter((p: any) => !p.metadata.deletionTimestamp && p.metadata.labels['keelson.dev/member']);
/** Asks the eviction API, as a drain does, to evict a pod. */
const evict = (pod: string) => cluster.kubectl(['create', '--raw', `/api/v1/namespaces/${namespace}/pods/${pod}/eviction`,
  '-f', '-'], { input: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: pod, namespace } }),
allowFailure: true });
const reasonsOf = async (name: string) => (await events(name)).map((e: any) => `${e.reason} ${e.note}`);
const reasons = () => reasonsOf('db');
/** The member pods serving behind the Service, by name. */
const endpoints = async (service: string) => {
  const slices = (await get('endpointslices', '-l', `kubernetes.io/service-name=${service}`)).items as any[];
  return slices.flatMap((s) => s.endpoints ?? []).map((e: any) => e.targetRef?.name).sort();
};

function running(size: number, extra: (s: any) => boolean = () => true): Promise<any> {
  return waitFor(`db Running with ${size} ready members`, async () => {
    const s = await status();
    return s?.phase === 'Running' && s.readyMembers === size && (await livePods()).length === size && extra(s) ? s : undefined;
  }, { timeoutMs: 90_000 });
}

before(async () => {
  const ns = await freshNamespace(cluster, 'pgc');
  namespace = ns.name;
  cleanups.push(ns.cleanup);
  scratch = await mkdtemp(join(tmpdir(), 'keelson-pgc-test-'));
  await installCrds(cluster);
  await staticVolumes(cluster, `keelson-${namespace}`, 24);
  cleanups.push(async () => { await cluster.kubectl(['delete', 'pv', '-l', `keelson.dev/test-volumes=keelson-${namespace}`, '--wait=false']); });
  exec = await serveMemberExec(cluster, namespace, 'db', memberNames, scratch);
  const others = [await serveMemberExec(cluster, namespace, 'dr', ['dr-0000', 'dr-0001'], join(scratch, 'dr')),
    await serveMemberExec(cluster, namespace, 'copy', ['copy-0000'], join(scratch, 'copy'))];
  shared = await serveMemberExec(cluster, namespace, 'shared', ['shared-0000', 'shared-0001', 'shared-0002'],
    join(scratch, 'shared'));
  others.push(shared, await serveMemberExec(cluster, namespace, 'keep', ['keep-0000', 'keep-0001', 'keep-0002', 'keep-0003'],
    join(scratch, 'keep')), await serveMemberExec(cluster, namespace, 'taken', ['taken-0000', 'taken-0001'], join(scratch, 'taken')),
    await serveMemberExec(cluster, namespace, 'stuck', ['stuck-0000', 'stuck-0001', 'stuck-0002'], join(scratch, 'stuck')));
  drainExec = await serveMemberExec(cluster, namespace, 'drain', ['drain-0000', 'drain-0001', 'drain-0002'],
    join(scratch, 'drain'));
  others.push(drainExec);
  cleanups.push(async () => [exec, ...others].forEach((e) => e.stop()));
  controller = await startOperator(cluster, namespace, ['postgrescluster'], scratch,
    { extraArgs: [`--postgres-replace-stuck-after=${stuckAfterSeconds}`] });
});
after(async () => {
  await controller?.stop();
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

describe('PostgresCluster against the real control plane, as its ServiceAccount', () => {
  it('starts the seed first, then adds members one at a time, with Services following the roles', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'db', namespace }, spec: { size: 3, version: '17.2',
        storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
    const s = await running(3);
    assert.equal(s.primary, 'db-0000');
    assert.equal(s.currentVersion, '17.2');
    assert.deepEqual(s.members.map((m: any) => `${m.name}:${m.role}`), ['db-0000:primary', 'db-0001:replica', 'db-0002:replica']);
    const added = (await reasons()).filter((r: string) => r.startsWith('MemberAdded'));
    assert.deepEqual(added, ['MemberAdded Added seed member db-0000', 'MemberAdded Added member db-0001 as a replica',
      'MemberAdded Added member db-0002 as a replica']);
    const pods = await livePods();
    const created = (name: string) => pods.find((p) => p.metadata.name === name).metadata.creationTimestamp;
    assert.ok(created('db-0000') <= created('db-0001') && created('db-0001') <= created('db-0002'));
    await waitFor('the Services to select the primary and the replicas', async () =>
      JSON.stringify(await endpoints('db')) === '["db-0000"]' &&
      JSON.stringify(await endpoints('db-ro')) === '["db-0001","db-0002"]');
    const secret = await get('secret', 'db-credentials');
    assert.equal(Buffer.from(secret.data['postgres-password'], 'base64').toString().length, 32);
    const columns = (await kubectl('get', 'pgc', 'db')).stdout.split('\n');
    assert.match(columns[0]!, /^NAME\s+SIZE\s+READY\s+PRIMARY\s+PHASE\s+LAST BACKUP\s+AGE$/);
    // No backup yet: kubectl prints the cell empty, or <none>.
    assert.match(columns[1]!, /^db\s+3\s+3\s+db-0000\s+Running\s+(<none>\s+)?\d+\S*$/);
  });

  it('serves a certificate of the cluster\'s CA, published for clients; a user\'s Secret only once it checks out',
    async () => {
      const tlsReady = async () => (await status()).conditions.find((c: any) => c.type === 'TLSReady');
      const text = (object: any, key: string) => Buffer.from(object.data[key], 'base64').toString();
      const issued = await get('secret', 'db-tls');
      assert.equal(issued.type, 'kubernetes.io/tls');
      assert.equal((await get('configmap', 'db-ca')).data['ca.crt'], text(issued, 'ca.crt'));
      assert.equal(text(await get('secret', 'db-ca'), 'ca.crt'), text(issued, 'ca.crt'));
      assert.deepEqual(await serverProblems({ cert: text(issued, 'tls.crt'), key: text(issued, 'tls.key'),
        ca: text(issued, 'ca.crt') }, ['db', `db-ro.${namespace}.svc`, `db-0001.db-members.${namespace}.svc`]), []);
      assert.equal((await tlsReady()).reason, 'Issued');
      assert.equal((await status()).tls.source, 'operator');
      assert.deepEqual((await reasons()).filter((r: string) => /^(CAIssued|CertificateIssued) /.test(r)).length, 2);
      const uids = (await livePods()).map((p) => p.metadata.uid).sort();
      const theirs = await issueCa('their CA');
      const given = async (name: string, names: string[]) => {
        const server = await issueServer(theirs, names);
        await apply({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, type: 'kubernetes.io/tls', stringData: {
          'tls.crt': server.cert, 'tls.key': server.key, 'ca.crt': theirs.cert } });
        return server;
      };
      await given('db-narrow', [`db.${namespace}.svc`]);
      await patch({ tls: { serverSecret: { name: 'db-narrow' } } });
      const refused = await waitFor('the narrow certificate refused', async () => {
        const c = await tlsReady();
        return c?.reason === 'ServerSecretInvalid' ? c : undefined;
      });
      assert.match(refused.message, new RegExp(`tls.crt does not name db-ro\\.${namespace}\\.svc`));
      assert.equal((await get('secret', 'db-tls')).data['tls.crt'], issued.data['tls.crt'], 'the members\' certificate changed');
      assert.ok((await reasons()).some((r: string) => r.startsWith('ServerSecretInvalid')));
      const wide = await given('db-wide', [`db.${namespace}.svc`, `db-ro.${namespace}.svc`]);
      await patch({ tls: { serverSecret: { name: 'db-wide' } } });
      await waitFor('their certificate taken', async () => (await tlsReady())?.reason === 'FromSecret' &&
        text(await get('secret', 'db-tls'), 'tls.crt') === wide.cert &&
        (await get('configmap', 'db-ca')).data['ca.crt'] === theirs.cert);
      assert.equal((await status()).tls.source, 'db-wide');
      // Kubelet brings a new certificate to running members, which reload it: no pod is made again for it.
      assert.deepEqual((await livePods()).map((p) => p.metadata.uid).sort(), uids);
      await patch({ tls: null });
      await waitFor('the cluster\'s own certificate back', async () => (await tlsReady())?.reason === 'Issued' &&
        (await get('configmap', 'db-ca')).data['ca.crt'] === text(await get('secret', 'db-ca'), 'ca.crt'));
    });

  it('makes no member of a new cluster whose certificate Secret does not check out, and says why', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'badtls', namespace },
      spec: { size: 1, version: '17.2', storage: { size: '1Gi', storageClassName: `keelson-${namespace}` },
        tls: { serverSecret: { name: 'badtls-server' } } } });
    const ready = await waitFor('badtls to say what it waits for', async () => {
      const c = (await get('pgc', 'badtls'))?.status?.conditions?.find((c: any) => c.type === 'Ready');
      return c?.reason === 'Waiting' ? c : undefined;
    });
    assert.match(ready.message, /^no member pod is made until the members' certificate is ready: Secret badtls-server cannot /);
    assert.match(ready.message, /it is not there\. No member is made until it can\.$/);
    assert.deepEqual((await get('pvc', '-l', 'keelson.dev/postgrescluster=badtls')).items, []);
    assert.deepEqual((await get('pods', '-l', 'keelson.dev/postgrescluster=badtls')).items, []);
    await kubectl('delete', 'pgc', 'badtls');
  });

  it('lets evictions (a drain) take one replica at a time, and the primary none, by PodDisruptionBudgets', async () => {
    // The disruption controller's own count: with two replicas ready, one may go; the primary may not.
    const counted = (name: string, pods: number) => waitFor(`PodDisruptionBudget ${name} counted`, async () => {
      const pdb = await get('pdb', name);
      return pdb?.status?.currentHealthy === pods && pdb.status.expectedPods === pods ? pdb : undefined;
    });
    const [replicas, primary] = [await counted('db', 2), await counted('db-primary', 1)];
    assert.deepEqual([replicas.spec.minAvailable, replicas.status.disruptionsAllowed], [1, 1]);
    assert.deepEqual([primary.spec.minAvailable, primary.status.disruptionsAllowed], [1, 0]);
    assert.equal(replicas.metadata.ownerReferences[0].kind, 'PostgresCluster');
    const refused = await evict((await status()).primary);
    assert.match(refused.stderr, /Cannot evict pod as it would violate the pod's disruption budget/);
  });

  it('replaces a deleted member pod on its own volume', async () => {
    const claim = (await get('pvc', 'db-0001')).metadata.uid;
    const pod = (await get('pod', 'db-0001')).metadata.uid;
    await kubectl('delete', 'pod', 'db-0001', '--wait=false');
    await waitFor('db-0001 back as a new pod', async () => {
      const p = await get('pod', 'db-0001');
      return p && p.metadata.uid !== pod && p.status?.phase === 'Running';
    }, { timeoutMs: 60_000 });
    await running(3);
    assert.equal((await get('pvc', 'db-0001')).metadata.uid, claim);
    assert.ok((await reasons()).some((r: string) => r.startsWith('MemberReplaced Started member db-0001 as replica')));
  });

  it('fails over to the replica with the most replayed WAL when the primary stays unready', async () => {
    await exec.setPosition('db-0001', 'replica 0/3000000');
    await exec.setPosition('db-0002', 'replica 0/5000000');
    const lost = Date.now();
    await kubectl('patch', 'pod', 'db-0000', '--subresource=status', '--type=json', '-p', JSON.stringify([
      { op: 'replace', path: '/status/conditions', value: [{ type: 'Ready', status: 'False', reason: 'Simulated' }] }]));
    // As if another operator replica, its clock an hour ahead, had written that the primary was lost long ago: the
    // timeout runs on the clock of the process that measures it.
    const conditions = (await status()).conditions.filter((c: any) => c.type !== 'PrimaryAvailable');
    await kubectl('patch', 'pgc', 'db', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { conditions: [
      ...conditions, { type: 'PrimaryAvailable', status: 'False', reason: 'Unavailable', message: 'db-0000 is not ready',
        lastTransitionTime: new Date(Date.now() - 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z') }] } }));
    const s = await waitFor('a new primary', async () => {
      const st = await status();
      return st?.primary === 'db-0002' ? st : undefined;
    }, { timeoutMs: failoverTimeoutMs + 60_000 });
    assert.ok(Date.now() - lost >= failoverTimeoutMs, 'not before the timeout');
    assert.equal(s.synchronous.primary, 'db-0002');
    assert.ok(await exec.promoted('db-0002'));
    assert.ok(!(await exec.promoted('db-0001')));
    assert.ok(['FailingOver', 'Running'].includes(s.phase));
    await waitFor('the read-write Service to follow the new primary', async () =>
      JSON.stringify(await endpoints('db')) === '["db-0002"]');
    const after = await running(3, (st) => st.members.find((m: any) => m.name === 'db-0000')?.role === 'replica');
    assert.equal(after.primary, 'db-0002');
    assert.equal((await get('pod', 'db-0000')).metadata.labels['keelson.dev/role'], 'replica');
    assert.ok((await reasons()).some((r: string) => r.startsWith('Promoted Promoted db-0002 to primary in place of db-0000')));
  });

  it('scales up and down by one member at a time, never removing the primary, keeping volumes', async () => {
    await patch({ size: 4 });
    await running(4);
    assert.ok(await get('pod', 'db-0003'));
    await patch({ size: 2 });
    const s = await running(2);
    assert.deepEqual(s.members.map((m: any) => m.name).sort(), ['db-0000', 'db-0002']);
    const removed = (await reasons()).filter((r: string) => r.startsWith('MemberRemoved')).map((r: string) => /Removed member (db-\d+)/.exec(r)?.[1]);
    assert.deepEqual(removed, ['db-0003', 'db-0001']);
    const kept = await get('pvc', 'db-0001');
    assert.equal(kept.metadata.labels['keelson.dev/retired'], 'true');
  });

  it('changes nothing while paused, and says so', async () => {
    await patch({ paused: true });
    await waitFor('phase Paused', async () => (await status())?.phase === 'Paused');
    await kubectl('delete', 'pod', 'db-0000', '--wait=false');
    await waitFor('db-0000 gone', async () => !(await get('pod', 'db-0000')), { timeoutMs: 60_000 });
    const ready = (await status()).conditions.find((c: any) => c.type === 'Ready');
    assert.equal(ready.reason, 'Paused');
    assert.equal(await get('pod', 'db-0000'), undefined);
    await patch({ paused: false });
    await running(2);
  });

  it('rolls a minor version through the replica, switches over, then restarts the old primary', async () => {
    await exec.setPosition('db-0000', 'replica 0/7000000');
    await patch({ version: '17.3' });
    const s = await running(2, (st) => st.currentVersion === '17.3');
    assert.equal(s.primary, 'db-0000');
    for (const pod of await livePods()) assert.equal(pod.spec.containers[0].image, 'postgres:17.3');
    const steps = (await reasons()).filter((r: string) => /^(MemberUpgrading|Promoted)/.test(r)).slice(-2);
    assert.match(steps[0]!, /^MemberUpgrading Restarting member db-0000/);
    assert.match(steps[1]!, /^Promoted Promoted db-0000 to primary in place of db-0002 \(switchover/);
  });

  it('upgrades a major version by stopping every member for a pod of both images on the primary\'s volume, and ' +
    'starts the members again on the old one when it fails; the apiserver refuses a downgrade', async () => {
    await assert.rejects(patch({ version: '16' }), /major version cannot go down/);
    const { primary } = await status();
    await patch({ version: '18' });
    const upgrade = await waitFor('the upgrade pod', async () => get('pod', 'db-major-upgrade'), { timeoutMs: 60_000 });
    assert.deepEqual([upgrade.spec.initContainers[0].image, upgrade.spec.containers[0].image,
      upgrade.spec.volumes.find((v: any) => v.name === 'data').persistentVolumeClaim.claimName],
    ['postgres:17.3', 'postgres:18', primary]);
    assert.deepEqual((await livePods()).map((p) => p.metadata.name), [], 'a member still runs');
    const upgrading = await status();
    assert.deepEqual([upgrading.phase, upgrading.majorUpgrade.phase, upgrading.conditions.find((c: any) =>
      c.type === 'MajorUpgrade').reason], ['Upgrading', 'Upgrading', 'Upgrading']);
    // As kubelet reports the script's verdict that the old data is untouched (10), its log's end as the message.
    await kubectl('patch', 'pod', 'db-major-upgrade', '--subresource=status', '--type=merge', '-p', JSON.stringify({
      status: { phase: 'Failed', containerStatuses: [{ name: 'upgrade', image: 'postgres:18', imageID: '', ready: false,
        restartCount: 0, state: { terminated: { exitCode: 10, reason: 'Error',
          message: 'pg_upgrade --check refused the upgrade; the data directory is unchanged' } } }] } }));
    const failed = await waitFor('MajorUpgrade=False Failed', async () => (await status())?.conditions
      ?.find((c: any) => c.type === 'MajorUpgrade' && c.reason === 'Failed'));
    assert.match(failed.message, /start again on 17\.3, whose data was not changed: upgrade exited with 10: pg_upgrade --check refused/);
    const s = await running(2);
    for (const pod of await livePods()) assert.equal(pod.spec.containers[0].image, 'postgres:17.3');
    assert.deepEqual([s.currentVersion, s.currentImage], ['17.3', 'postgres:17.3']);
    await waitFor('a MajorUpgradeFailed Event', async () => (await reasons()).some((r: string) => r.startsWith('MajorUpgradeFailed')));
  });

  it('follows the Lease: fences a pod still labelled primary, and finishes a promotion cut short', async () => {
    // As if the operator had stopped between taking the Lease for db-0002 and promoting it.
    await kubectl('patch', 'lease', 'db-primary', '--type=merge', '-p', JSON.stringify({ spec: { holderIdentity: 'db-0002' } }));
    await running(2, (st) => st.primary === 'db-0002' &&
      JSON.stringify(st.members.map((m: any) => `${m.name}:${m.role}`).sort()) === '["db-0000:replica","db-0002:primary"]');
    const events = await reasons();
    assert.ok(events.some((r: string) => r.startsWith('MultiplePrimaries Pod db-0000 is labelled primary, but the Lease names db-0002')));
    assert.ok(events.some((r: string) => r.startsWith('Promoted Finished promoting db-0002, which the Lease names; commits wait')));
    await waitFor('the read-write Service on db-0002 alone', async () => JSON.stringify(await endpoints('db')) === '["db-0002"]');
  });

  it('grows member volumes where the StorageClass allows it, says why not where it does not, and never shrinks them', async () => {
    const storageClass = `keelson-${namespace}`;
    // The claims of members there are, not those kept of members removed.
    const claims = async () => (await get('pvc', '-l', 'keelson.dev/postgrescluster=db'))!.items
      .filter((c: any) => c.metadata.labels['keelson.dev/member'] && !c.metadata.labels['keelson.dev/retired'] &&
        !c.metadata.deletionTimestamp)
      .map((c: any) => c.spec.resources.requests.storage);
    const resized = (reason: string) => waitFor(`StorageResized ${reason}`, async () => (await status())?.conditions
      ?.find((c: any) => c.type === 'StorageResized' && c.reason === reason));
    // The test's volumes have a class name and no StorageClass: the apiserver refuses to grow their claims.
    await patch({ storage: { size: '2Gi' } });
    const refused = await resized('ExpansionRefused');
    assert.equal(refused.status, 'False');
    assert.match(refused.message, new RegExp(`^db-\\d{4}(, db-\\d{4})* cannot grow to 2Gi: .*storageclass.*\\(StorageClass ` +
      `${storageClass}\\); they keep their size, and new members get 2Gi$`));
    await waitFor('an ExpansionRefused Event', async () => (await reasons()).some((r: string) => r.startsWith('ExpansionRefused db-')));
    assert.deepEqual([...new Set(await claims())], ['1Gi']);
    // With a class that allows expansion, the next size asked for reaches every member claim.
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass', metadata: { name: storageClass, labels: { 'keelson.dev/test-volumes': storageClass } },
      provisioner: 'kubernetes.io/no-provisioner', allowVolumeExpansion: true }) });
    cleanups.push(async () => { await cluster.kubectl(['delete', 'storageclass', storageClass, '--ignore-not-found']); });
    await patch({ storage: { size: '3Gi' } });
    // The test's volumes hold 10Gi: a claim's capacity is its volume's.
    const grown = await resized('Resized');
    assert.equal(grown.message, 'every member volume has 3Gi at least');
    assert.deepEqual([...new Set(await claims())], ['3Gi']);
    await assert.rejects(patch({ storage: { size: '1Gi' } }), /storage.size cannot shrink/);
    await assert.rejects(patch({ storage: { size: 3 * 2 ** 30 - 1 } }), /storage.size cannot shrink/);
    // The same size written another way is no change.
    await patch({ storage: { size: '3072Mi' } });
    await patch({ storage: { size: 3 * 2 ** 30 } });
    await assert.rejects(patch({ storage: { storageClassName: 'other' } }), /storage.storageClassName cannot change/);
  });

  it('switches over to the member keelson.dev/switchover-to names, once, and refuses a name that is no member\'s', async () => {
    await exec.setPosition('db-0000', 'replica 0/9000000');
    await kubectl('annotate', 'pgc', 'db', 'keelson.dev/switchover-to=db-0000');
    const s = await running(2, (st) => st.primary === 'db-0000' && st.switchover?.phase === 'Completed');
    assert.equal(s.switchover.to, 'db-0000');
    assert.ok((await reasons()).some((r: string) =>
      r.startsWith('Promoted Promoted db-0000 to primary in place of db-0002 (switchover asked for')));
    await kubectl('annotate', 'pgc', 'db', '--overwrite', 'keelson.dev/switchover-to=db-0009');
    const refused = await waitFor('the request refused', async () => {
      const request = (await status())?.switchover;
      return request?.phase === 'Failed' ? request : undefined;
    });
    assert.match(refused.message, /^no member is named "db-0009"/);
    await waitFor('a SwitchoverRefused Event', async () =>
      (await reasons()).some((r: string) => r.startsWith('SwitchoverRefused no member is named "db-0009"')));
    assert.equal((await status()).primary, 'db-0000');
    await kubectl('annotate', 'pgc', 'db', 'keelson.dev/switchover-to-');
    await waitFor('status.switchover gone with the annotation', async () => (await status())?.switchover === undefined);
  });

  it('fails with NoBackup, deleting nothing, when every member and its data are gone and there is no backup', async () => {
    await patch({ storage: { keepOnScaleDown: false } });
    await kubectl('delete', 'pod,pvc', '-l', 'keelson.dev/member', '--wait=false');
    // The claims go once their pods have, after the members' 30 s grace period, which kwok waits out as a kubelet
    // would; a busy run has taken longer than 60 s in all.
    const s = await waitFor('phase Failed', async () => {
      const st = await status();
      return st?.phase === 'Failed' ? st : undefined;
    }, { timeoutMs: 120_000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}; last Ready: ${JSON.stringify((await status())?.conditions
        ?.find((c: any) => c.type === 'Ready'))}`);
    });
    assert.equal(s.conditions.find((c: any) => c.type === 'Ready').reason, 'NoBackup');
    assert.deepEqual(await livePods(), []);
  });

  it('backs up through a repository host on its volume, and recovers a new seed from it when every member and its ' +
    'data are gone', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'dr', namespace }, spec: { size: 1, version: '17.2',
        storage: { size: '1Gi', storageClassName: `keelson-${namespace}` }, backup: { schedule: '* * * * *', retain: 2 } } });
    // The CronJob of pg_basebackup an earlier version filled the volume with (labelled as it made it) goes.
    const uid = (await waitFor('dr made', () => get('pgc', 'dr'))).metadata.uid;
    await apply({ apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'dr-backups', namespace,
      labels: { 'keelson.dev/postgrescluster': 'dr' }, ownerReferences: [{ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', name: 'dr', uid, controller: true }] },
    spec: { schedule: '0 3 * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never',
      containers: [{ name: 'backup', image: 'postgres:17.2', command: ['sh', '/keelson/backup.sh'] }] } } } } } });
    const host = await waitFor('the repository host on the backup volume', () => get('pod', 'dr-repo'), { timeoutMs: 60_000 });
    assert.ok(host.spec.volumes.some((v: any) => v.persistentVolumeClaim?.claimName === 'dr-backups'));
    const member = await waitFor('dr-0000', () => get('pod', 'dr-0000'), { timeoutMs: 60_000 });
    assert.ok(member.spec.containers[0].env.some((e: any) => e.name === 'PGBACKREST_REPO1_HOST' &&
      e.value === `dr-repo.dr-members.${namespace}.svc`));
    const backedUp = await waitFor('the first backup, in status', async () =>
      (await get('pgc', 'dr'))?.status?.lastBackup, { timeoutMs: 150_000 });
    assert.match(backedUp.name, /^\d{8}-\d{6}F$/);
    assert.match((await events('dr')).map((e: any) => e.note).join('\n'), /started on dr-repo, into the backup volume/);
    // pgBackRest made the stanza and took the backup on the repository host, reaching the primary from there.
    const commands = await readFile(join(scratch, 'dr', 'dr-repository', 'commands'), 'utf8');
    assert.match(commands, /^dr-repo stanza-create --pg1-host=dr-0000\.dr-members\./m);
    assert.match(commands, /^dr-repo backup --type=full .*--pg1-host=dr-0000\.dr-members\./m);
    assert.doesNotMatch(commands, /^dr-0000 (stanza-create|backup)/m);
    await waitFor('the CronJob gone', async () => (await get('cronjob', 'dr-backups')) === undefined);
    assert.match((await kubectl('get', 'pgc', 'dr', '--no-headers')).stdout, /^dr\s+1\s+\d+\s+dr-0000\s+\w+\s+\d+[smh]\S*\s+\d+\S*\s*$/);
    // Deleted, the repository host is made again.
    await kubectl('delete', 'pod', 'dr-repo', '--wait=false');
    await waitFor('dr-repo made again', async () => {
      const again = await get('pod', 'dr-repo');
      return again && again.metadata.uid !== host.metadata.uid && !again.metadata.deletionTimestamp;
    }, { timeoutMs: 90_000 });

    await kubectl('delete', 'pod,pvc', '-l', 'keelson.dev/postgrescluster=dr,keelson.dev/member', '--wait=false');
    const seed = await waitFor('a recovering seed', async () => {
      const pod = await get('pod', 'dr-0000');
      const env = pod?.spec.containers[0].env ?? [];
      return !pod?.metadata.deletionTimestamp && env.some((e: any) => e.name === 'RECOVER_STANZA' && e.value === 'dr')
        ? pod : undefined;
    }, { timeoutMs: 60_000 });
    // Through its repository host, which alone mounts the volume.
    assert.ok(!seed.spec.volumes.some((v: any) => v.persistentVolumeClaim?.claimName === 'dr-backups'));
    assert.ok((await events('dr')).some((e: any) => e.reason === 'Restoring'));
    await waitFor('dr Running again', async () => (await get('pgc', 'dr'))?.status?.phase === 'Running', { timeoutMs: 60_000 });
    const restoring = async () => (await get('pvc', 'dr-0000'))?.metadata.annotations?.['keelson.dev/restoring'];
    await waitFor('the seed\'s claim no longer marked restoring once it serves', async () => (await restoring()) === undefined);

    // A seed whose pod goes before it first served (the mark still on its claim) restores again, never stops as a
    // member with no data would. Paused meanwhile, as the mark would otherwise go at once, the seed serving.
    const env = (pod: any) => Object.fromEntries(pod.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.equal(env(await get('pod', 'dr-0000')).BOOTSTRAPPED, undefined);
    await kubectl('patch', 'pgc', 'dr', '--type=merge', '-p', '{"spec":{"paused":true}}');
    await waitFor('dr Paused', async () => (await get('pgc', 'dr'))?.status?.phase === 'Paused');
    await kubectl('annotate', 'pvc', 'dr-0000', 'keelson.dev/restoring=true');
    await kubectl('delete', 'pod', 'dr-0000', '--wait=false');
    await waitFor('dr-0000 gone', async () => (await get('pod', 'dr-0000'))?.metadata.uid !== seed.metadata.uid,
      { timeoutMs: 90_000 });
    await kubectl('patch', 'pgc', 'dr', '--type=merge', '-p', '{"spec":{"paused":false}}');
    const again = await waitFor('dr-0000 made again', async () => {
      const pod = await get('pod', 'dr-0000');
      return pod && pod.metadata.uid !== seed.metadata.uid && !pod.metadata.deletionTimestamp ? pod : undefined;
    }, { timeoutMs: 90_000 });
    assert.equal(env(again).RECOVER_STANZA, 'dr');
    assert.equal(env(again).BOOTSTRAPPED, undefined);
    await waitFor('the mark gone again once it serves', async () => (await restoring()) === undefined, { timeoutMs: 60_000 });
  });

  it('creates a new cluster from another cluster\'s backup volume, read where it lies', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'copy', namespace }, spec: { size: 1, version: '17.2',
        storage: { size: '1Gi', storageClassName: `keelson-${namespace}` }, bootstrap: { fromBackup: { cluster: 'dr' } } } });
    const seed = await waitFor('the copy\'s seed', () => get('pod', 'copy-0000'), { timeoutMs: 60_000 });
    const env = Object.fromEntries(seed.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    assert.deepEqual([env.RECOVER_STANZA, env.RECOVER_FROM_VOLUME], ['dr', 'true']);
    assert.ok(seed.spec.volumes.some((v: any) => v.persistentVolumeClaim?.claimName === 'dr-backups' && v.persistentVolumeClaim.readOnly));
    await waitFor('copy Running', async () => (await get('pgc', 'copy'))?.status?.phase === 'Running', { timeoutMs: 60_000 });
  });

  it('fails over though a shared object is another\'s, once enough synchronous standbys answer', async () => {
    // A ConfigMap of the scripts' name that is someone else's (and that nobody may change).
    await kubectl('create', 'configmap', 'shared-scripts', '--from-literal=member.sh=exit 1');
    await kubectl('patch', 'configmap', 'shared-scripts', '--type=merge', '-p', '{"immutable":true}');
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'shared', namespace }, spec: { size: 3, version: '17.2',
        storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
    const sharedStatus = async () => (await get('pgc', 'shared'))?.status;
    await waitFor('shared Running with 3 ready members', async () => {
      const st = await sharedStatus();
      return st?.phase === 'Running' && st.readyMembers === 3;
    }, { timeoutMs: 90_000 });
    const condition = (await sharedStatus()).conditions.find((c: any) => c.type === 'SharedObjectsReady');
    assert.equal(condition.status, 'False');
    assert.equal(condition.reason, 'NotOwned');
    assert.match(condition.message, /^ConfigMap shared-scripts already exists and belongs to something else: left unchanged/);

    await shared.setPosition('shared-0001', 'the member is not answering');
    await shared.setPosition('shared-0002', 'replica 0/5000000');
    await kubectl('patch', 'pod', 'shared-0000', '--subresource=status', '--type=json', '-p', JSON.stringify([
      { op: 'replace', path: '/status/conditions', value: [{ type: 'Ready', status: 'False', reason: 'Simulated' }] }]));
    // shared-0000's commits waited for ANY 1 of the two: the one that does not answer may hold the last of them.
    const waiting = await waitFor('the failover to wait for a quorum', async () => (await sharedStatus())?.conditions
      ?.find((c: any) => c.type === 'PrimaryAvailable' && c.reason === 'QuorumNotReached'), { timeoutMs: failoverTimeoutMs + 60_000 });
    assert.match(waiting.message, /1 of the synchronous standbys answered, and 2 must .*waiting for shared-0001 \(not answering: shared-0001: unexpected member position/);
    assert.equal((await sharedStatus()).primary, 'shared-0000');
    await shared.setPosition('shared-0001', 'replica 0/4000000');
    await waitFor('shared-0002 promoted', async () => (await sharedStatus())?.primary === 'shared-0002',
      { timeoutMs: 30_000 });
    const promoted = (await events('shared')).find((e: any) => e.reason === 'Promoted');
    assert.match(promoted.note, /in place of shared-0000 .*; commits wait for ANY 1 \("shared-0001"\)/);
  });

  it('changes no object it does not own: reported, left as it was, and left when the cluster is deleted', async () => {
    await kubectl('create', 'service', 'clusterip', 'taken', '--tcp=80:8080');
    await apply({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'taken-0000', namespace },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: `keelson-${namespace}`, resources: { requests: { storage: '1Gi' } } } });
    const service = await get('service', 'taken');
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'taken', namespace },
      spec: { size: 1, version: '17.2', storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
    const takenStatus = async () => (await get('pgc', 'taken'))?.status;
    const shared = await waitFor('SharedObjectsReady NotOwned', async () => (await takenStatus())?.conditions
      ?.find((c: any) => c.type === 'SharedObjectsReady' && c.reason === 'NotOwned'));
    assert.match(shared.message, /^Service taken already exists and belongs to something else/);
    const ready = await waitFor('Ready NotOwned', async () => (await takenStatus())?.conditions
      ?.find((c: any) => c.type === 'Ready' && c.reason === 'NotOwned'));
    assert.match(ready.message, /PersistentVolumeClaim taken-0000 exists and belongs to something else/);
    const both = (await takenStatus()).conditions.find((c: any) => c.type === 'SharedObjectsReady');
    assert.match(both.message, /^Service taken already exists .*; PersistentVolumeClaim taken-0000 exists and belongs/);
    assert.ok((await events('taken')).some((e: any) => e.reason === 'NotOwned'));
    const after = await get('service', 'taken');
    assert.deepEqual(after.spec.selector, service.spec.selector);
    assert.equal(after.metadata.ownerReferences, undefined);
    assert.equal((await get('pvc', 'taken-0000')).metadata.ownerReferences, undefined);
    assert.equal(await get('pod', 'taken-0000'), undefined);
    await kubectl('delete', 'pgc', 'taken');
    await waitFor('taken-ro gone with its cluster', async () => !(await get('service', 'taken-ro')));
    assert.equal((await get('service', 'taken')).metadata.uid, service.metadata.uid);
    assert.ok(await get('pvc', 'taken-0000'));
  });

  const keepStatus = async () => (await get('pgc', 'keep'))?.status;
  const keepRunning = (size: number, extra: (s: any) => boolean = () => true) => waitFor(`keep Running with ${size}`, async () => {
    const s = await keepStatus();
    return s?.phase === 'Running' && s.readyMembers === size && extra(s) ? s : undefined;
  }, { timeoutMs: 90_000 });

  it('repairs its member Role and credentials Secret when deleted, with the passwords the members run with', async () => {
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'keep', namespace },
      spec: { size: 2, version: '17.2', storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
    await keepRunning(2);
    const role = await get('role', 'keep-member');
    await kubectl('delete', 'role', 'keep-member');
    const repaired = await waitFor('the Role made again', async () => {
      const r = await get('role', 'keep-member');
      return r && r.metadata.uid !== role.metadata.uid ? r : undefined;
    });
    assert.deepEqual(repaired.rules, role.rules);
    await kubectl('delete', 'secret', 'keep-credentials');
    const secret = await waitFor('the Secret made again', () => get('secret', 'keep-credentials'));
    const decoded = (key: string) => Buffer.from(secret.data[key], 'base64').toString();
    assert.equal(decoded('postgres-password'), memberPasswords.POSTGRES_PASSWORD);
    assert.equal(decoded('replication-password'), memberPasswords.REPLICATION_PASSWORD);
    assert.ok((await events('keep')).some((e: any) => e.reason === 'CredentialsRestored'));
  });

  it('keeps volumes, Secret and Lease when deleted, and a cluster made again with the name adopts them', async () => {
    const claims = Object.fromEntries(await Promise.all(['keep-0000', 'keep-0001'].map(async (name) =>
      [name, (await get('pvc', name)).metadata.uid])));
    const primary = (await keepStatus()).primary;
    await kubectl('delete', 'pgc', 'keep');
    await waitFor('keep\'s pods gone', async () => (await get('pods', '-l', 'keelson.dev/postgrescluster=keep')).items.length === 0,
      { timeoutMs: 60_000 });
    for (const name of Object.keys(claims)) assert.equal((await get('pvc', name)).metadata.ownerReferences, undefined);
    assert.ok(await get('secret', 'keep-credentials'));
    assert.equal((await get('lease', 'keep-primary')).spec.holderIdentity, primary);
    assert.equal(await get('service', 'keep'), undefined);

    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'keep', namespace },
      spec: { size: 2, version: '17.2', storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
    const back = await keepRunning(2);
    assert.equal(back.primary, primary);
    for (const [name, uid] of Object.entries(claims)) assert.equal((await get('pvc', name)).metadata.uid, uid);

    await kubectl('patch', 'pgc', 'keep', '--type=merge', '-p', JSON.stringify({ spec: {
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete' } } }));
    const uid = (await get('pgc', 'keep')).metadata.uid;
    await waitFor('the volumes owned by the cluster', async () => (await Promise.all(Object.keys(claims).map((name) =>
      get('pvc', name)))).every((c: any) => c.metadata.ownerReferences?.[0]?.uid === uid));
    await kubectl('patch', 'pgc', 'keep', '--type=merge', '-p', JSON.stringify({ spec: {
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain' } } }));
    await waitFor('the volumes let go', async () => (await Promise.all(Object.keys(claims).map((name) =>
      get('pvc', name)))).every((c: any) => !c.metadata.ownerReferences?.length));
  });

  it('switches over off a primary whose volume is deleted, and labels again a volume whose labels were removed', async () => {
    const old = (await keepStatus()).primary;
    await kubectl('delete', 'pvc', old, '--wait=false');
    const switched = await keepRunning(2, (s) => s.primary !== old && !s.members.some((m: any) => m.name === old));
    assert.ok((await get('pods', '-l', 'keelson.dev/postgrescluster=keep')).items.every((p: any) => p.metadata.name !== old));
    const relabelled = switched.primary;
    const pod = (await get('pod', relabelled)).metadata.uid;
    await kubectl('label', 'pvc', relabelled, 'keelson.dev/member-', 'keelson.dev/postgrescluster-');
    await waitFor('the volume labelled again', async () =>
      (await get('pvc', relabelled)).metadata.labels?.['keelson.dev/member'] === relabelled);
    await keepRunning(2, (s) => s.primary === relabelled);
    assert.equal((await get('pod', relabelled)).metadata.uid, pod);
    const seen = await reasonsOf('keep');
    assert.ok(seen.some((r) => r.startsWith('VolumeRelabelled')));
    assert.ok(seen.some((r) => r.startsWith(`Promoted Promoted ${relabelled} to primary in place of ${old} (switchover`)));
    assert.ok(!seen.some((r) => r.startsWith('StrangerRemoved')), seen.join('\n'));
  });
  it('replaces a replica stuck Pending with a new member, keeping its volume', async () => {
    const stuck = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'stuck', namespace },
      spec: { size: 2, version: '17.2', storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } };
    await apply(stuck);
    const members = (want: string[]) => waitFor(`stuck with members ${want.join(', ')}, all ready`, async () => {
      const s = (await get('pgc', 'stuck'))?.status;
      return s?.phase === 'Running' && JSON.stringify(s.members?.filter((m: any) => m.ready).map((m: any) => m.name)) ===
        JSON.stringify(want) ? s : undefined;
    }, { timeoutMs: 90_000 });
    await members(['stuck-0000', 'stuck-0001']);
    // Its new pod asks for a node nobody has, as one bound to a node that is gone would wait; new pods would not.
    await apply({ ...stuck, spec: { ...stuck.spec, nodeSelector: { [`keelson.dev/hold-${namespace}`]: 'yes' } } });
    const old = (await get('pod', 'stuck-0001')).metadata.uid;
    await kubectl('delete', 'pod', 'stuck-0001', '--wait=false');
    await waitFor('stuck-0001 Pending again', async () => {
      const p = await get('pod', 'stuck-0001');
      return p && p.metadata.uid !== old && p.status?.phase === 'Pending';
    }, { timeoutMs: 30_000 });
    const pending = Date.now();
    await apply(stuck);
    await members(['stuck-0000', 'stuck-0002']);
    assert.ok(Date.now() - pending >= stuckAfterSeconds * 1000, 'replaced before it had been Pending for the bound');
    assert.ok((await reasonsOf('stuck')).some((r: string) => /^StuckMemberReplaced Removed member stuck-0001 \(Pending for \d+s\); its volume is kept/.test(r)));
    assert.equal((await get('pvc', 'stuck-0001')).metadata.labels['keelson.dev/retired'], 'true');
  });

  it('switches the primary over to a replica on another node when a drain begins, so the drain never fails it over',
    async (t) => {
      // Three simulated nodes of this test's own, tainted so that only this namespace's pods go there.
      const mark = `keelson.dev/drain-${namespace}`;
      const nodes = ['a', 'b', 'c'].map((n) => `${namespace}-${n}`);
      await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List',
        items: nodes.map((name) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name, annotations: {
          [kwokNodeAnnotation]: 'fake' }, labels: { 'kubernetes.io/hostname': name, type: 'kwok', [mark]: 'yes' } },
        spec: { taints: [simulatedNodeTaint, { key: mark, value: 'yes', effect: 'NoSchedule' }] } })) }) });
      cleanups.push(async () => { await cluster.kubectl(['delete', 'node', ...nodes, '--wait=false'], { allowFailure: true }); });
      const tolerations = JSON.parse(simulatedPodsAnnotations['scheduler.alpha.kubernetes.io/defaultTolerations']);
      const tolerate = (more: object[]) => kubectl('annotate', 'namespace', namespace, '--overwrite',
        `scheduler.alpha.kubernetes.io/defaultTolerations=${JSON.stringify([...tolerations, ...more])}`);
      await tolerate([{ key: mark, operator: 'Equal', value: 'yes', effect: 'NoSchedule' }]);
      // Passed or failed, nothing after this test lands on those nodes.
      t.after(async () => {
        await tolerate([]);
        await kubectl('delete', 'pgc', 'drain', '--wait=false');
      });
      await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'drain', namespace },
        spec: { size: 2, version: '17.2', antiAffinity: true, nodeSelector: { [mark]: 'yes' },
          storage: { size: '1Gi', storageClassName: `keelson-${namespace}` } } });
      const drainStatus = async () => (await get('pgc', 'drain'))?.status;
      const nodeOf = async (pod: string) => (await get('pod', pod))?.spec?.nodeName;
      await waitFor('drain Running with 2 ready members', async () => {
        const st = await drainStatus();
        return st?.phase === 'Running' && st.readyMembers === 2;
      }, { timeoutMs: 90_000 });
      const [primary, replica] = ['drain-0000', 'drain-0001'];
      assert.equal((await drainStatus()).primary, primary);
      await drainExec.setPosition(replica, 'replica 0/6000000');
      const [from, to] = [await nodeOf(primary), await nodeOf(replica)];
      assert.notEqual(from, to);

      const drained = await cluster.kubectl(['drain', from, '--pod-selector=keelson.dev/postgrescluster=drain',
        '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=90s'], { allowFailure: true });
      assert.equal(drained.code, 0, drained.stderr);
      const after = await waitFor('drain Running on another primary, off the drained node', async () => {
        const st = await drainStatus();
        const placed = await Promise.all([primary, replica].map(nodeOf));
        return st?.phase === 'Running' && st.readyMembers === 2 && st.primary === replica && !placed.includes(from) &&
          !placed.includes(undefined) ? st : undefined;
      }, { timeoutMs: 90_000 });
      assert.equal(after.switchover, undefined);
      const seen = await reasonsOf('drain');
      assert.ok(seen.some((r) => r.startsWith(`Promoted Promoted ${replica} to primary in place of ${primary} (switchover ` +
        'off a cordoned node')), seen.join('\n'));
      assert.ok(!seen.some((r) => /\(failover/.test(r)), seen.join('\n'));
    });
});
