// A major upgrade of a PostgresCluster on the real node, from Debian 12's PostgreSQL 15 to Debian 13's 17, with an
// object store, and with a backup volume: what a user trusts it with is that every row is there afterwards on every member, that an upgrade
// pg_upgrade refuses leaves the cluster running the old version with its data, and that backups go on for the new
// one. Serial: it stops every member of its cluster for a while.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controllerImage, postgres17Image, postgresImage } from '../../../images/recipes.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { readCredentials, type ObjectStore } from '../../../cluster/node/objectstore.ts';
import { majorUpgradeRetryAnnotation } from './schema.ts';

const cluster = testCluster();
const { kubectl, get, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let scratch: string;
let controller: ControllerProcess;
let image15: string;
let image17: string;
const cleanups: (() => Promise<unknown>)[] = [];

const status = async () => (await get('pgc', 'books'))?.status;
const condition = async (type: string) => (await status())?.conditions?.find((c: any) => c.type === type);
/** A query inside a member, over its Unix socket. */
const local = async (member: string, query: string) => (await kubectl('exec', member, '-c', 'postgres', '--', 'psql',
  '-X', '-v', 'ON_ERROR_STOP=1', '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', query)).stdout.trim();
const notes = async (reason: string) => (await events('books')).filter((e) => e.reason === reason).map((e) => e.note);

/** The cluster Ready with both members, each running `major`, as status says. */
async function readyOn(major: string): Promise<any> {
  let last: any;
  return waitFor(`books Ready on PostgreSQL ${major} with 2 members`, async () => {
    const s = last = await status();
    const ready = s?.conditions?.find((c: any) => c.type === 'Ready')?.status === 'True';
    return ready && s.readyMembers === 2 && s.currentVersion === major ? s : undefined;
  }, { timeoutMs: 300_000, intervalMs: 2000 }).catch(async (error: Error) => {
    const pods = (await get('pods', '-l', 'keelson.dev/postgrescluster=books'))?.items
      .map((p: any) => `${p.metadata.name} ${p.status?.phase}`);
    throw new Error(`${error.message}; last: ${JSON.stringify({ phase: last?.phase, currentVersion: last?.currentVersion,
      majorUpgrade: last?.majorUpgrade, conditions: last?.conditions?.map((c: any) => `${c.type}=${c.status} ${c.reason}: ` +
        c.message) })}; pods: ${pods?.join(', ')}`);
  });
}

/** Every member's server version, and what it holds of the table `books`. */
async function members(): Promise<{ name: string; version: string; rows: string }[]> {
  return Promise.all((await status()).members.map(async (m: any) => ({ name: m.name,
    version: await local(m.name, 'SHOW server_version_num'), rows: await local(m.name, 'SELECT count(*) || \':\' || ' +
      'sum(id) FROM books') })));
}

describe('PostgresCluster major upgrade on the real node', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    const ns = await freshNamespace(cluster, 'pgc-upgrade', { pods: 'real' });
    namespace = ns.name;
    cleanups.push(ns.cleanup);
    scratch = await mkdtemp(join(tmpdir(), 'keelson-pgc-upgrade-'));
    const store = (cluster.state.realNode as { objectStore: ObjectStore }).objectStore;
    await installCrds(cluster);
    [image15, image17] = await Promise.all([cluster.loadImage(postgresImage), cluster.loadImage(postgres17Image),
      cluster.loadImage(await controllerImage())]);
    const keys = await readCredentials(store);
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1',
      kind: 'Secret', metadata: { name: 'store-keys' },
      stringData: { AWS_ACCESS_KEY_ID: keys.accessKeyId, AWS_SECRET_ACCESS_KEY: keys.secretAccessKey } }) });
    controller = await startOperator(cluster, namespace, ['postgrescluster'], scratch);
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'books', namespace },
      spec: { size: 2, version: '15', image: image15, storage: { size: '256Mi' },
        postgresql: { parameters: { shared_preload_libraries: 'pg_stat_statements' } },
        backup: { schedule: '@daily', objectStore: { endpoint: store.endpoint, bucket: store.bucket,
          credentials: { name: 'store-keys' }, ca: { name: 'kube-root-ca.crt', key: 'ca.crt' } } } } });
    await readyOn('15');
  });
  after(async () => {
    await controller?.stop();
    await Promise.all(cleanups.map((c) => c()));
    await rm(scratch, { recursive: true, force: true });
  });

  it('leaves the cluster running 15 with its data when pg_upgrade refuses the upgrade', async () => {
    const { primary } = await status();
    // Columns of reg* types name objects by OIDs pg_upgrade does not keep: it refuses such a cluster.
    await local(primary, 'CREATE TABLE books (id int PRIMARY KEY); INSERT INTO books SELECT generate_series(1, 1000); ' +
      'CREATE EXTENSION pg_stat_statements; CREATE TABLE refuses (routine regproc); INSERT INTO refuses VALUES (\'now\')');
    await kubectl('patch', 'pgc', 'books', '--type=merge', '-p', JSON.stringify({ spec: { version: '17', image: image17 } }));
    const failed = await waitFor('MajorUpgrade=False Failed', async () => {
      const c = await condition('MajorUpgrade');
      return c?.status === 'False' && c.reason === 'Failed' ? c : undefined;
    }, { timeoutMs: 300_000, intervalMs: 2000 });
    assert.match(failed.message, /pg_upgrade --check refused the upgrade/);
    assert.match(failed.message, /reg\* data types in user tables/);
    assert.match(failed.message, /keelson\.dev\/major-upgrade-retry/);
    const s = await readyOn('15');
    // The members were stopped for it: a full backup was taken first.
    assert.equal(s.majorUpgrade.phase, 'Failed');
    assert.equal(s.scheduledBackup.token, s.majorUpgrade.backup);
    assert.equal(s.scheduledBackup.phase, 'Completed');
    assert.deepEqual((await members()).map((m) => [m.version.slice(0, 2), m.rows]), [['15', '1000:500500'],
      ['15', '1000:500500']]);
    assert.equal((await notes('MajorUpgradeFailed')).length, 1);
  });

  it('upgrades 15 to 17 in place once asked again, every row on every member, and backs 17 up', async () => {
    const { primary } = await status();
    await local(primary, 'DROP TABLE refuses');
    await kubectl('annotate', 'pgc', 'books', `${majorUpgradeRetryAnnotation}=1`);
    const asked = Date.now();
    let seen: any;
    await waitFor('the members stopped', async () => (seen = await status())?.majorUpgrade?.phase === 'Upgrading',
      { timeoutMs: 300_000, intervalMs: 1000 }).catch((error: Error) => {
      throw new Error(`${error.message}; last: ${JSON.stringify({ majorUpgrade: seen?.majorUpgrade,
        scheduledBackup: seen?.scheduledBackup, conditions: seen?.conditions?.map((c: any) => `${c.type}=${c.status} ` +
          `${c.reason}: ${c.message}`) })}`);
    });
    const stopped = Date.now();
    const s = await readyOn('17');
    console.log(`major upgrade 15 to 17 of 2 members (a full backup first): Ready on 17 ` +
      `${Math.round((Date.now() - asked) / 1000)} s after it was asked again, ` +
      `${Math.round((Date.now() - stopped) / 1000)} s after the members were stopped`);
    assert.equal(s.majorUpgrade.phase, 'Completed');
    assert.equal((await condition('MajorUpgrade')).reason, 'Completed');
    assert.equal(s.currentImage, image17);
    assert.match(await local(s.primary, 'SELECT version()'), /^PostgreSQL 17\./);
    await waitFor('every member on 17 with every row', async () => {
      const all = await members();
      return all.every((m) => m.version.startsWith('17') && m.rows === '1000:500500') ? all : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000 });
    // The replica streams from the upgraded primary, and what the spec preloads is loaded.
    assert.equal(await local(s.primary, 'SELECT count(*) FROM pg_stat_replication WHERE state = \'streaming\''), '1');
    assert.equal(await local(s.primary, 'SELECT count(*) > 0 FROM pg_stat_statements'), 't');
    // What pg_upgrade leaves to do: planner statistics, and the extension's newer SQL version.
    await waitFor('statistics and the extension updated', async () =>
      (await local(s.primary, 'SELECT (SELECT count(*) FROM pg_stats WHERE tablename = \'books\') || \':\' || ' +
        '(SELECT extversion FROM pg_extension WHERE extname = \'pg_stat_statements\')')) === '1:1.11',
    { timeoutMs: 60_000, intervalMs: 1000 });
    await local(s.primary, 'INSERT INTO books VALUES (1001)');
    const backedUp = await waitFor('a full backup of 17 in the store', async () => {
      const last = (await status()).lastBackup;
      return last?.postgresVersion === '17' ? last : undefined;
    }, { timeoutMs: 180_000, intervalMs: 2000 });
    assert.equal(backedUp.type, 'full');
    // One Event per attempt, or one series of both: their notes are the same.
    assert.ok((await notes('MajorUpgradeStarted')).length >= 1);
    assert.equal((await notes('MajorUpgradeCompleted')).length, 1);
  });

  it('upgrades a cluster that backs up into its volume: the repository host follows the primary to 17, whose ' +
    'stanza it upgrades, and backs 17 up', async () => {
    const shelf = async () => (await get('pgc', 'shelf'))?.status;
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'shelf', namespace },
      spec: { size: 1, version: '15', image: image15, storage: { size: '256Mi' }, backup: { schedule: '@daily' } } });
    const first = await waitFor('shelf\'s first backup, of 15', async () => (await shelf())?.lastBackup?.postgresVersion,
      { timeoutMs: 300_000, intervalMs: 2000 });
    assert.equal(first, '15');
    await local('shelf-0000', 'CREATE TABLE shelves (id int); INSERT INTO shelves SELECT generate_series(1, 100)');
    await kubectl('patch', 'pgc', 'shelf', '--type=merge', '-p', JSON.stringify({ spec: { version: '17', image: image17 } }));
    let last: any;
    const backedUp = await waitFor('shelf on 17, backed up as 17 through its repository host', async () => {
      const s = last = await shelf();
      return s?.majorUpgrade?.phase === 'Completed' && s.lastBackup?.postgresVersion === '17' ? s : undefined;
    }, { timeoutMs: 420_000, intervalMs: 2000 }).catch((error: Error) => {
      throw new Error(`${error.message}; last: ${JSON.stringify({ majorUpgrade: last?.majorUpgrade,
        scheduledBackup: last?.scheduledBackup, conditions: last?.conditions?.map((c: any) => `${c.type}=${c.status} ` +
          `${c.reason}: ${c.message}`) })}`);
    });
    assert.ok(backedUp.majorUpgrade.backup, 'the upgrade went on once a full backup of 15 was in the volume');
    assert.equal(await local('shelf-0000', 'SELECT count(*) FROM shelves'), '100');
    const host = await get('pod', 'shelf-repo');
    assert.equal(host.spec.containers[0].image, image17, 'pgBackRest of the primary\'s version');
    const stanza = JSON.parse((await kubectl('exec', 'shelf-repo', '-c', 'repository', '--', 'pgbackrest', 'info',
      '--output=json')).stdout)[0];
    assert.deepEqual(stanza.db.map((db: any) => db.version), ['15', '17'], 'the stanza upgraded on the repository host');
  });
});
