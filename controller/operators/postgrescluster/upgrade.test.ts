import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Pod } from '../../runtime/core.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import { ApiError } from '../../runtime/rest.ts';
import { backupBeforeToken, MajorUpgrades, majorUpgradeCondition, pendingUpgrade, upgradeIntent,
  type MajorUpgradeDeps, type MajorUpgradeStatus } from './upgrade.ts';

const now = new Date('2026-11-26T10:00:00Z');
const cluster = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster',
  metadata: { name: 'books', namespace: 'shop', uid: 'u1', generation: 3 } } as any;
const spec = { size: 2, version: '17', image: 'keelson.local/postgresql:17', storage: { size: '1Gi' } } as any;
const pending: MajorUpgradeStatus = { from: '15', fromImage: 'keelson.local/postgresql:15', to: '17',
  toImage: 'keelson.local/postgresql:17', phase: 'Pending',
  startTime: '2026-11-26T10:00:00Z', message: 'waiting for the cluster to be steady' };
const intentOf = (record?: MajorUpgradeStatus, retry?: string, asked = '17') => upgradeIntent({ running: '15',
  runningImage: 'keelson.local/postgresql:15', asked, askedImage: `keelson.local/postgresql:${asked}`, now,
  ...record ? { record } : {}, ...retry ? { retry } : {} });

describe('what a version asked for means to a cluster', () => {
  it('is nothing for the same major, an upgrade for a higher one, and kept out for a lower one', () => {
    assert.equal(intentOf(undefined, undefined, '15.4').kind, 'none');
    assert.equal(intentOf(undefined, undefined, '14').kind, 'lower');
    assert.deepEqual(intentOf(), { kind: 'upgrade', record: pending });
    assert.equal(upgradeIntent({ asked: '17', askedImage: 'postgres:17', now }).kind, 'none',
      'a cluster that never ran has nothing to upgrade');
  });

  it('follows an upgrade once begun to its end, whatever the spec asks since, and a pending one as it changes', () => {
    const stopping = { ...pending, phase: 'Stopping' as const, primary: 'books-0000' };
    assert.deepEqual(intentOf(stopping), { kind: 'upgrade', record: stopping });
    assert.deepEqual(intentOf(stopping, undefined, '18'), { kind: 'upgrade', record: stopping });
    // Its members then start on what it upgraded to, before they run it.
    assert.equal(intentOf({ ...stopping, phase: 'Completed' }, undefined, '18').kind, 'done');
    assert.deepEqual(intentOf(pending, undefined, '17.2'), { kind: 'upgrade', record: { ...pending, to: '17.2',
      toImage: 'keelson.local/postgresql:17.2' } });
    assert.equal(intentOf({ ...pending, phase: 'Failed' }, undefined, '18').kind, 'upgrade');
  });

  it('is refused after a failure until the retry annotation takes a new value, which starts over', () => {
    const failed = { ...pending, phase: 'Failed' as const, retry: '1', message: 'pg_upgrade --check refused the upgrade' };
    assert.equal(intentOf(failed).kind, 'refused');
    assert.equal(intentOf(failed, '1').kind, 'refused');
    assert.deepEqual(intentOf(failed, '2'), { kind: 'upgrade', record: { ...pending, retry: '2' } });
    const condition = majorUpgradeCondition(intentOf(failed), '15', 3)!;
    assert.equal(condition.reason, 'Failed');
    assert.match(condition.message, /refused the upgrade; the members run 15\..*keelson.dev\/major-upgrade-retry=/);
  });
});

describe('an upgrade asked for but not begun', () => {
  const steady = { kind: 'steady' } as const;
  const token = backupBeforeToken(pending);

  it('waits for the cluster to be steady, saying for what', () => {
    const next = pendingUpgrade({ record: pending, step: { kind: 'wait', reason: 'member books-0001 is starting' },
      primary: 'books-0000', backsUp: false, now });
    assert.equal(next.record.phase, 'Pending');
    assert.match(next.record.message, /books-0001 is starting/);
  });

  it('stops the members of a steady cluster without an object store at once', () => {
    const next = pendingUpgrade({ record: pending, step: steady, primary: 'books-0000', backsUp: false, now });
    assert.deepEqual([next.record.phase, next.record.primary, next.backup], ['Stopping', 'books-0000', undefined]);
  });

  it('takes a full backup first with an object store, and fails without stopping anything when it fails', () => {
    let next = pendingUpgrade({ record: pending, step: steady, primary: 'books-0000', backsUp: true, now });
    assert.deepEqual([next.record.phase, next.backup], ['Pending', token]);
    assert.equal(token, 'before-postgresql-17-20261126100000');
    next = pendingUpgrade({ record: next.record, step: steady, primary: 'books-0000', backsUp: true, now,
      backup: { token, phase: 'Running', message: '40% copied' } });
    assert.match(next.record.message, /40% copied/);
    const done = pendingUpgrade({ record: next.record, step: steady, primary: 'books-0000', backsUp: true, now,
      backup: { token, phase: 'Completed' } });
    assert.equal(done.record.phase, 'Stopping');
    const failed = pendingUpgrade({ record: next.record, step: steady, primary: 'books-0000', backsUp: true, now,
      backup: { token, phase: 'Failed', message: 'the store refused the keys' } });
    assert.equal(failed.record.phase, 'Failed');
    assert.match(failed.record.message, /nothing was stopped: the store refused the keys/);
  });
});

describe('an upgrade under way', () => {
  function harness(pods: Pod[]) {
    const made: KubeObject[] = [];
    const deleted: string[] = [];
    const events: string[] = [];
    const ran: string[] = [];
    const deps: MajorUpgradeDeps = {
      pod: (_ns, name) => pods.find((p) => p.metadata.name === name),
      run: async (_ns, name, script) => { ran.push(`${name}: ${script}`); return ''; },
      memberPods: () => pods.filter((p) => p.metadata.name !== 'books-major-upgrade'),
      create: async (object) => { made.push(object); },
      deletePod: async (pod) => { deleted.push(pod.metadata.name); },
      record: async (_c, type, reason) => { events.push(`${type} ${reason}`); },
    };
    return { upgrades: new MajorUpgrades(deps, () => now), deps, made, deleted, events, ran };
  }
  const stopping = { ...pending, phase: 'Stopping' as const, primary: 'books-0000' };
  const pod = (name: string, status: object = {}, deleting = false) => ({ metadata: { name, namespace: 'shop',
    ...deleting ? { deletionTimestamp: now.toISOString() } : {} }, status }) as unknown as Pod;

  it('stops the primary first, then the replicas, and runs pg_upgrade on the primary\'s volume with both images',
    async () => {
      const both = harness([pod('books-0000'), pod('books-0001')]);
      const first = await both.upgrades.drive(cluster, spec, stopping);
      assert.deepEqual([both.deleted, first.record.phase, both.made.length], [['books-0000'], 'Stopping', 0]);
      // A replica on a lost node may never go: only the primary's pod must be gone before its volume is used.
      const replicaLeft = harness([pod('books-0001', {}, true)]);
      const second = await replicaLeft.upgrades.drive(cluster, spec, stopping);
      assert.equal(second.record.phase, 'Upgrading');
      const made = replicaLeft.made[0] as any;
      assert.deepEqual([made.metadata.name, made.spec.initContainers[0].image, made.spec.containers[0].image,
        made.spec.volumes.find((v: any) => v.name === 'data').persistentVolumeClaim.claimName, made.spec.restartPolicy],
      ['books-major-upgrade', 'keelson.local/postgresql:15', 'keelson.local/postgresql:17', 'books-0000', 'Never']);
      assert.deepEqual(made.spec.containers[0].env.find((e: any) => e.name === 'FROM_MAJOR'), { name: 'FROM_MAJOR',
        value: '15' });
    });

  const upgrading = { ...stopping, phase: 'Upgrading' as const, attempts: 1 };
  const ended = (exitCode: number, message: string) => ({ phase: 'Failed', containerStatuses: [{ name: 'upgrade',
    state: { terminated: { exitCode, message } } }] });

  it('completes when the pod succeeds; fails, the old data untouched, with its words', async () => {
    const succeeded = harness([pod('books-major-upgrade', { phase: 'Succeeded' })]);
    const done = await succeeded.upgrades.drive(cluster, spec, upgrading);
    assert.deepEqual([done.record.phase, done.record.completionTime, succeeded.deleted, succeeded.events],
      ['Completed', '2026-11-26T10:00:00Z', ['books-major-upgrade'], ['Normal MajorUpgradeCompleted']]);
    const refused = harness([pod('books-major-upgrade', ended(10, `${'x'.repeat(3000)} pg_upgrade --check refused`))]);
    const failed = await refused.upgrades.drive(cluster, spec, upgrading);
    assert.equal(failed.record.phase, 'Failed');
    assert.match(failed.record.message, /start again on 15, whose data was not changed: upgrade exited with 10: \.\.\.x+ pg_upgrade --check refused$/);
    assert.ok(failed.record.message.length <= 2048);
    assert.deepEqual(refused.events, ['Warning MajorUpgradeFailed']);
    const noImage = (minutes: number) => harness([{ ...pod('books-major-upgrade', { phase: 'Pending',
      initContainerStatuses: [{ name: 'old-server', image: 'keelson.local/postgresql:15',
        state: { waiting: { reason: 'ErrImageNeverPull', message: 'not present' } } }] }),
    metadata: { name: 'books-major-upgrade', namespace: 'shop',
      creationTimestamp: new Date(now.getTime() - minutes * 60_000).toISOString() } } as Pod]);
    assert.equal((await noImage(1).upgrades.drive(cluster, spec, upgrading)).record.phase, 'Upgrading');
    assert.match((await noImage(3).upgrades.drive(cluster, spec, upgrading)).record.message,
      /container old-server \(keelson.local\/postgresql:15\) cannot start: ErrImageNeverPull/);
    // The apiserver refusing the pod (a quota, Pod Security) ends it too: it never ran.
    const quota = harness([]);
    const refusing = new MajorUpgrades({ ...quota.deps, create: async () => {
      throw new ApiError(403, 'Forbidden', 'pods "books-major-upgrade" is forbidden: exceeded quota', 'POST', '/api/v1/pods');
    } });
    const forbidden = await refusing.drive(cluster, spec, upgrading);
    assert.equal(forbidden.record.phase, 'Failed');
    assert.match(forbidden.record.message, /refused the upgrade pod: .*exceeded quota/);
    const unscheduled = (minutes: number) => harness([pod('books-major-upgrade', { phase: 'Pending', conditions: [{
      type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/2 nodes are available',
      lastTransitionTime: new Date(now.getTime() - minutes * 60_000).toISOString() }] })]);
    assert.equal((await unscheduled(1).upgrades.drive(cluster, spec, upgrading)).record.phase, 'Upgrading');
    assert.equal((await unscheduled(3).upgrades.drive(cluster, spec, upgrading)).record.phase, 'Failed');
  });

  it('runs pg_upgrade again when cut short, and halts, starting no member, when the old data may not be whole',
    async () => {
      const killed = harness([pod('books-major-upgrade', ended(137, ''))]);
      const again = await killed.upgrades.drive(cluster, spec, upgrading);
      assert.deepEqual([again.record.phase, again.record.attempts, killed.deleted], ['Upgrading', 2,
        ['books-major-upgrade']]);
      const gone = harness([]);
      assert.equal((await gone.upgrades.drive(cluster, spec, again.record)).record.phase, 'Upgrading');
      assert.equal(gone.made.length, 1, 'a pod gone under way is made again: its script resumes where it can');
      // Never beside a member pod on the primary's volume, as one made from a stale read of the cluster would be.
      const beside = harness([pod('books-0000')]);
      const waited = await beside.upgrades.drive(cluster, spec, again.record);
      assert.deepEqual([beside.made.length, beside.deleted, waited.record.message], [0, ['books-0000'],
        'pod books-0000 still uses the volume']);
      const third = harness([pod('books-major-upgrade', ended(137, ''))]);
      const halted = await third.upgrades.drive(cluster, spec, { ...upgrading, attempts: 3 });
      assert.equal(halted.record.phase, 'Halted');
      const linked = harness([pod('books-major-upgrade', ended(11, 'pg_upgrade failed after it began to link files'))]);
      const notWhole = await linked.upgrades.drive(cluster, spec, upgrading);
      assert.equal(notWhole.record.phase, 'Halted');
      assert.match(notWhole.record.message, /^no member is started: upgrade exited with 11: pg_upgrade failed after/);
      assert.deepEqual(linked.events, ['Warning MajorUpgradeHalted']);
      // Halted, it waits; the plan starts nobody on that data, and asking again runs pg_upgrade once more.
      assert.deepEqual(intentOf(notWhole.record, undefined, '18'), { kind: 'upgrade', record: notWhole.record });
      assert.equal(majorUpgradeCondition(intentOf(notWhole.record), '15', 3)!.status, 'False');
      const asked = intentOf(notWhole.record, '7');
      assert.deepEqual(asked.kind === 'upgrade' && [asked.record.phase, asked.record.attempts], ['Upgrading', 1]);
    });

  it('starts ANALYZE and extension updates once, on the primary once it runs the new major', async () => {
    const completed = { ...stopping, phase: 'Completed' as const, message: 'upgraded' };
    const { upgrades, ran } = harness([]);
    const primaryOn = (version: string) => ({ metadata: { name: 'books-0000', namespace: 'shop',
      annotations: { 'keelson.dev/postgres-version': version } } }) as unknown as Pod;
    assert.equal(await upgrades.afterwards(cluster, completed, primaryOn('15')), completed);
    const started = await upgrades.afterwards(cluster, completed, primaryOn('17'));
    assert.equal(started.afterUpgradeStarted, '2026-11-26T10:00:00Z');
    assert.match(ran[0]!, /^books-0000: .*ALTER EXTENSION %I UPDATE.*vacuumdb .*--all --analyze-in-stages/s);
    assert.equal(await upgrades.afterwards(cluster, started, primaryOn('17')), started);
    assert.equal(ran.length, 1);
  });

  it('acts on the record it last wrote until the cluster read shows it, so a stale read starts no member', async () => {
    const { upgrades } = harness([]);
    const upgrading = { ...stopping, phase: 'Upgrading' as const };
    const read = (record: MajorUpgradeStatus) => ({ ...cluster, status: { majorUpgrade: record } });
    upgrades.wrote(cluster, upgrading);
    assert.equal(upgrades.latest(read(pending)), upgrading, 'a read from before the write');
    assert.deepEqual(upgrades.latest(read(upgrading)), upgrading);
    const failed = { ...upgrading, phase: 'Failed' as const };
    assert.equal(upgrades.latest(read(failed)), failed, 'once seen, the status is what counts');
  });
});
