// Continuous archiving of a PostgresCluster on the real node into the local cluster's object store, with pgBackRest
// in the members: what a user relies on for a recovery point is that every WAL segment reaches the store, and that
// the cluster says so, or says why not. Serial: one test stops the store, which every cluster shares.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { controllerImage, postgresImage } from '../../../images/recipes.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { readCredentials, s3Request, type ObjectStore } from '../../../cluster/node/objectstore.ts';
import { testAlerts } from '../../../test/support/promtool.ts';
import { metricsPort } from './plan.ts';

const cluster = testCluster();
const { kubectl, get, apply } = inNamespace(cluster, () => namespace);
let namespace: string;
let scratch: string;
let controller: ControllerProcess;
let store: ObjectStore;
let image: string;
const cleanups: (() => Promise<unknown>)[] = [];

const condition = async (type: string) =>
  (await get('pgc', 'shop'))?.status?.conditions?.find((c: any) => c.type === type);
/** A query inside the member, over its Unix socket. */
const sql = async (query: string) => (await kubectl('exec', 'shop-0000', '-c', 'postgres', '--', 'psql', '-X',
  '-v', 'ON_ERROR_STOP=1', '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', query)).stdout.trim();
/** The member agent's metrics, read inside the pod as Prometheus would scrape them: series to value. */
async function memberMetrics(pod = 'shop-0000'): Promise<Map<string, number>> {
  const { stdout } = await kubectl('exec', pod, '-c', 'agent', '--', 'node', '-e',
    `fetch("http://127.0.0.1:${metricsPort}/metrics").then((r) => r.text()).then((t) => process.stdout.write(t))`);
  return new Map(stdout.split('\n').filter((line) => line && !line.startsWith('#'))
    .map((line) => [line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))]));
}
/** The archiver's series as scraped, labelled as the PodMonitor's target, held for 10 minutes (promtool's notation). */
function archiverSeries(scraped: Map<string, number>, target: Record<string, string>): Record<string, string> {
  const labels = Object.entries(target).map(([k, v]) => `${k}="${v}"`).join(', ');
  return Object.fromEntries([...scraped].filter(([name]) => name.startsWith('keelson_postgres_archiver_'))
    .map(([name, value]) => [`${name}{${labels}}`, `${value}x10`]));
}
const segmentBytes = 16 * 2 ** 20;
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

/** The WAL segments in the store under the cluster's archive. */
async function archivedSegments(): Promise<string[]> {
  const listing = await s3Request(store, 'GET',
    `/${store.bucket}?list-type=2&prefix=${encodeURIComponent(`${namespace}/shop/archive/`)}`);
  return [...listing.matchAll(/<Key>[^<]*\/([0-9A-F]{24})-[0-9a-f]{40}[^<]*<\/Key>/g)].map((m) => m[1]!);
}

/** Every segment from the first archived up to the last: none skipped (one timeline, within 4 GiB of WAL). */
function assertContiguous(segments: string[]): void {
  const numbers = segments.map((s) => Number.parseInt(s.slice(16), 16)).sort((a, b) => a - b);
  assert.deepEqual(numbers, Array.from({ length: numbers.length }, (_, i) => numbers[0]! + i), 'no segment missing');
}

describe('PostgresCluster archiving into an object store on the real node', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    const ns = await freshNamespace(cluster, 'pgc-archive', { pods: 'real' });
    namespace = ns.name;
    cleanups.push(ns.cleanup);
    scratch = await mkdtemp(join(tmpdir(), 'keelson-pgc-archive-'));
    store = (cluster.state.realNode as { objectStore: ObjectStore }).objectStore;
    await installCrds(cluster);
    [image] = await Promise.all([cluster.loadImage(postgresImage), cluster.loadImage(await controllerImage())]);
    const keys = await readCredentials(store);
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1',
      kind: 'Secret', metadata: { name: 'store-keys' },
      stringData: { AWS_ACCESS_KEY_ID: keys.accessKeyId, AWS_SECRET_ACCESS_KEY: keys.secretAccessKey } }) });
    controller = await startOperator(cluster, namespace, ['postgrescluster'], scratch);
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'shop', namespace },
      spec: { size: 1, version: '15', image, synchronousReplicas: 0, storage: { size: '256Mi' },
        backup: { schedule: '@daily', objectStore: { endpoint: store.endpoint, bucket: store.bucket,
          credentials: { name: 'store-keys' }, ca: { name: 'kube-root-ca.crt', key: 'ca.crt' } } } } });
  });
  after(async () => {
    await controller?.stop();
    await Promise.all(cleanups.map((c) => c()));
    await rm(scratch, { recursive: true, force: true });
  });

  it('archives every completed WAL segment into the store, and says so in ContinuousArchiving', async () => {
    const archiving = await waitFor('ContinuousArchiving=True', async () => {
      const c = await condition('ContinuousArchiving');
      return c?.status === 'True' ? c : undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000 }).catch(async (error: Error) => {
      throw new Error(`${error.message}; last: ${JSON.stringify(await condition('ContinuousArchiving'))}; ` +
        `Ready: ${JSON.stringify(await condition('Ready'))}`);
    });
    // The last file archived, as pg_stat_archiver says: a segment, or the history file of the cluster's first backup.
    assert.match(archiving.message, /^shop-0000 archived [0-9A-F]{24}(\.[0-9A-F]{8}\.backup)? at /);
    await sql('CREATE TABLE orders (id int PRIMARY KEY); INSERT INTO orders SELECT generate_series(1, 1000)');
    const segment = await sql('SELECT pg_walfile_name(pg_current_wal_lsn())');
    const switched = Date.now();
    await sql('SELECT pg_switch_wal()');
    const segments = await waitFor(`segment ${segment} in the store`, async () => {
      const found = await archivedSegments();
      return found.includes(segment) ? found : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    console.log(`archiving: a completed WAL segment was in the store ${((Date.now() - switched) / 1000).toFixed(1)} s ` +
      'after the switch (polled every 0.25 s)');
    assertContiguous(segments);
  });

  it('keeps the archive up with a sustained writer, as the member\'s /metrics shows', async () => {
    const first = await memberMetrics();
    assert.equal(first.get('keelson_postgres_up'), 1);
    assert.equal(first.get('keelson_postgres_in_recovery'), 0);
    await sql('CREATE TABLE churn (id int, payload text)');
    const started = Date.now();
    // A writer in the member for 20 s, some 0.8 MiB of WAL a transaction, up to 8 MiB/s; scraped every second.
    const writing = sql(`DO $$ DECLARE stop timestamptz := clock_timestamp() + interval '20 seconds'; BEGIN
      WHILE clock_timestamp() < stop LOOP
        INSERT INTO churn SELECT g, repeat(md5(g::text), 8) FROM generate_series(1, 2000) g; DELETE FROM churn;
        COMMIT; PERFORM pg_sleep(0.1);
      END LOOP; END $$`);
    let done = false;
    // Settled either way: a writer that failed ends the scrapes, and `await writing` below says why.
    writing.then(() => { done = true; }, () => { done = true; });
    let maxLag = 0;
    let maxWaiting = 0;
    let scrapes = 0;
    while (!done) {
      const now = await memberMetrics();
      const lag = now.get('keelson_postgres_archiver_lag_bytes');
      assert.ok(lag !== undefined, 'archive lag on /metrics');
      maxLag = Math.max(maxLag, lag);
      maxWaiting = Math.max(maxWaiting, now.get('keelson_postgres_archiver_ready_segments')!);
      scrapes++;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await writing;
    const seconds = (Date.now() - started) / 1000;
    const last = await memberMetrics();
    const written = last.get('keelson_postgres_wal_position_bytes')! - first.get('keelson_postgres_wal_position_bytes')!;
    const archived = last.get('keelson_postgres_archiver_archived_total')! -
      first.get('keelson_postgres_archiver_archived_total')!;
    console.log(`archiving under a sustained writer: ${mib(written)} of WAL in ${seconds.toFixed(0)} s ` +
      `(${mib(written / seconds)}/s), ${archived} segments archived; at most ${mib(maxLag)} not archived and ` +
      `${maxWaiting} completed segments waiting, over ${scrapes} scrapes`);
    assert.ok(written >= 4 * segmentBytes, `the writer wrote ${mib(written)} of WAL`);
    assert.ok(archived >= Math.floor(written / segmentBytes) - 1, `${archived} segments archived of ${mib(written)}`);
    assert.ok(maxLag < 4 * segmentBytes, `up to ${mib(maxLag)} of WAL waited to be archived`);
    // What is left is the segment being written, archived when full or at archive_timeout.
    await waitFor('the archive within one segment of the WAL written', async () =>
      ((await memberMetrics()).get('keelson_postgres_archiver_lag_bytes') ?? Infinity) < segmentBytes,
    { timeoutMs: 60_000, intervalMs: 1000 });
    await sql('DROP TABLE churn; CHECKPOINT');
  });

  it('says ArchiveFailing while the store does not answer, with an Event and an alert, and archives every segment once it does', async () => {
    const pid = cluster.state.pids.objectstore!;
    const before = (await archivedSegments()).length;
    process.kill(pid, 'SIGSTOP');
    let stuck: string;
    try {
      await sql('INSERT INTO orders SELECT generate_series(1001, 2000)');
      stuck = await sql('SELECT pg_walfile_name(pg_current_wal_lsn())');
      await sql('SELECT pg_switch_wal()');
      const failing = await waitFor('ContinuousArchiving=False ArchiveFailing', async () => {
        const c = await condition('ContinuousArchiving');
        return c?.reason === 'ArchiveFailing' ? c : undefined;
      }, { timeoutMs: 240_000, intervalMs: 2000 });
      assert.equal(failing.status, 'False');
      assert.match(failing.message, /^shop-0000 (cannot archive WAL segment [0-9A-F]{24} |has \d+ WAL segments? waiting)/);
      const events = (await get('events', '--field-selector', 'involvedObject.name=shop,reason=ArchiveFailing'))?.items;
      assert.ok(events?.length, 'an ArchiveFailing Event');
      // The alert: the shipped rule, run by promtool on what the member's agent reports now, held for 10 minutes.
      const target = { job: `${namespace}/shop`, namespace, postgrescluster: 'shop', pod: 'shop-0000' };
      const series = archiverSeries(await memberMetrics(), target);
      const alert = await testAlerts([{ alert: 'KeelsonPostgresArchivingFailing', series, at: '6m', fires: target }]);
      assert.equal(alert.code, 0, `the alert on ${JSON.stringify(series)}: ${alert.output}`);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitFor('ContinuousArchiving=True again', async () => (await condition('ContinuousArchiving'))?.status === 'True',
      { timeoutMs: 240_000, intervalMs: 2000 });
    // Nor does the alert fire on what the member reports now.
    const target = { job: `${namespace}/shop`, namespace, postgrescluster: 'shop', pod: 'shop-0000' };
    const quiet = await testAlerts([{ alert: 'KeelsonPostgresArchivingFailing', series: archiverSeries(await memberMetrics(),
      target), at: '6m' }]);
    assert.equal(quiet.code, 0, quiet.output);
    const segments = await waitFor(`segment ${stuck} in the store`, async () => {
      const found = await archivedSegments();
      return found.includes(stuck) ? found : undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000 });
    assert.ok(segments.length > before);
    assertContiguous(segments);
  });

  it('recovers into a new cluster, from the store alone, exactly the rows committed before a time T', async () => {
    await sql('CREATE TABLE ticks (id int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())');
    const insert = async (from: number, to: number) => {
      for (let id = from; id <= to; id++) await sql(`INSERT INTO ticks (id) VALUES (${id})`);
    };
    await insert(1, 10);
    await kubectl('annotate', 'pgc', 'shop', 'keelson.dev/backup-request=before-t', '--overwrite');
    const backup = await waitFor('the requested backup Completed', async () => {
      const s = (await get('pgc', 'shop'))?.status;
      if (s?.backupRequest?.phase === 'Failed') throw new Error(`backup failed: ${s.backupRequest.message}`);
      return s?.backupRequest?.token === 'before-t' && s.backupRequest.phase === 'Completed' ? s.lastBackup : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
    assert.match(backup.name, /^\d{8}-\d{6}F$/);
    assert.match(backup.beginWal, /^[0-9A-F]{24}$/);
    assert.ok(backup.repositorySizeBytes > 0 && backup.sizeBytes > 0);
    await insert(11, 20);
    const target = await sql("SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')");
    await insert(21, 30);
    // The WAL past T reaches the store: a recovery must see a commit after T to know it is there.
    const last = await sql('SELECT pg_walfile_name(pg_current_wal_lsn())');
    await sql('SELECT pg_switch_wal()');
    await waitFor(`segment ${last} in the store`, async () => (await archivedSegments()).includes(last) || undefined,
      { timeoutMs: 60_000, intervalMs: 1000 });
    await kubectl('delete', 'pgc', 'shop', '--wait=true', '--timeout=120s');

    const started = Date.now();
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'restored', namespace },
      spec: { size: 1, version: '15', image, synchronousReplicas: 0, storage: { size: '256Mi' },
        backup: { schedule: '* * * * *', objectStore: { endpoint: store.endpoint, bucket: store.bucket,
          credentials: { name: 'store-keys' }, ca: { name: 'kube-root-ca.crt', key: 'ca.crt' } } },
        bootstrap: { recovery: { source: 'shop', targetTime: target } } } });
    await waitFor('restored Running', async () => (await get('pgc', 'restored'))?.status?.phase === 'Running' || undefined,
      { timeoutMs: 300_000, intervalMs: 1000 }).catch(async (error: Error) => {
      const log = await kubectl('logs', 'restored-0000', '-c', 'postgres', '--tail=30').catch(() => ({ stdout: '' }));
      throw new Error(`${error.message}\n${log.stdout}`);
    });
    const recoverySeconds = (Date.now() - started) / 1000;
    const rows = (await kubectl('exec', 'restored-0000', '-c', 'postgres', '--', 'psql', '-X', '-h', '/var/run/postgresql',
      '-U', 'postgres', '-Atc', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM ticks')).stdout.trim();
    assert.equal(rows, Array.from({ length: 20 }, (_, i) => i + 1).join(','));
    // It archives and backs up under its own name, on its schedule, with no CronJob or volume for it.
    const scheduled = await waitFor('a scheduled backup of restored Completed', async () => {
      const s = (await get('pgc', 'restored'))?.status;
      if (s?.scheduledBackup?.phase === 'Failed') throw new Error(`scheduled backup failed: ${s.scheduledBackup.message}`);
      return s?.scheduledBackup?.phase === 'Completed' ? s : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
    assert.match(scheduled.scheduledBackup.token, /^scheduled-\d{8}T\d{4}Z$/);
    // The operator looks at archiving on its own clock (every 30 s), not when a backup ends: it says so soon after.
    let archiving: any;
    await waitFor('restored to say it archives', async () => {
      archiving = (await get('pgc', 'restored'))?.status?.conditions?.find((c: any) => c.type === 'ContinuousArchiving');
      return archiving?.status === 'True' || undefined;
    }, { timeoutMs: 90_000, intervalMs: 1000 }).catch((error: Error) => {
      throw new Error(`${error.message}; last: ${JSON.stringify(archiving)}`);
    });
    assert.equal(await get('cronjob', 'restored-backups'), undefined);

    // Every member and its data lost: the new seed recovers restored's own archive, all of it, new timeline included,
    // not the bootstrap's target again.
    const inRestored = (query: string) => kubectl('exec', 'restored-0000', '-c', 'postgres', '--', 'psql', '-X',
      '-v', 'ON_ERROR_STOP=1', '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', query);
    await inRestored('INSERT INTO ticks (id) SELECT generate_series(31, 35)');
    const tail = (await inRestored('SELECT pg_walfile_name(pg_current_wal_lsn())')).stdout.trim();
    await inRestored('SELECT pg_switch_wal()');
    await waitFor(`segment ${tail} of restored in the store`, async () => {
      const listing = await s3Request(store, 'GET',
        `/${store.bucket}?list-type=2&prefix=${encodeURIComponent(`${namespace}/restored/archive/`)}`);
      return listing.includes(`/${tail}-`) || undefined;
    }, { timeoutMs: 60_000, intervalMs: 1000 });
    const lostClaim = (await get('pvc', 'restored-0000')).metadata.uid;
    const lostAt = performance.now();
    await kubectl('delete', 'pvc', 'restored-0000', '--wait=false');
    await kubectl('delete', 'pod', 'restored-0000', '--grace-period=1');
    // The new seed takes the first name again, on a new claim.
    await waitFor('restored Running again on a new volume', async () => {
      const claim = await get('pvc', 'restored-0000');
      const s = (await get('pgc', 'restored'))?.status;
      const pod = await get('pod', 'restored-0000');
      const ready = pod?.status?.containerStatuses?.every((c: any) => c.ready);
      return claim && claim.metadata.uid !== lostClaim && ready && s?.phase === 'Running' ? s : undefined;
    }, { timeoutMs: 300_000, intervalMs: 1000 });
    const totalLossSeconds = (performance.now() - lostAt) / 1000;
    assert.match((await kubectl('get', 'events', '--field-selector', 'reason=Restoring', '-o',
      'jsonpath={.items[*].message}')).stdout, /Recovering seed member restored-0000 from the cluster's own archive/);
    const again = (await kubectl('exec', 'restored-0000', '-c', 'postgres', '--', 'psql', '-X', '-h',
      '/var/run/postgresql', '-U', 'postgres', '-Atc', 'SELECT string_agg(id::text, \',\' ORDER BY id) FROM ticks')).stdout.trim();
    assert.equal(again, [...Array.from({ length: 20 }, (_, i) => i + 1), 31, 32, 33, 34, 35].join(','));
    console.log(`total loss: restored Running again from its own archive ${totalLossSeconds.toFixed(1)} s after its ` +
      'only member and volume were deleted');
    console.log(`point-in-time recovery: the new cluster Running ${recoverySeconds.toFixed(1)} s after it was made; ` +
      `backup ${backup.name} took ${backup.durationSeconds} s, ${backup.repositorySizeBytes} bytes in the store`);
  });

  it('backs up again once a promotion starts a new timeline: WAL the old primary had not pushed is never needed', async () => {
    const restored = async () => (await get('pgc', 'restored'))?.status;
    const timeline = (wal: string) => Number.parseInt(wal.slice(0, 8), 16);
    const stateOfRestored = async (error: Error): Promise<never> => {
      const s = await restored();
      const events = (await kubectl('get', 'events', '--field-selector', 'involvedObject.name=restored', '-o',
        'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}')).stdout;
      throw new Error(`${error.message}; last: ${JSON.stringify({ lastBackup: s?.lastBackup, scheduled: s?.scheduledBackup,
        conditions: s?.conditions, phase: s?.phase })}; events:\n${events.slice(-3000)}`);
    };
    // No scheduled backup due meanwhile: the one after the promotion is the timeline's.
    await kubectl('patch', 'pgc', 'restored', '--type=merge', '-p', JSON.stringify({ spec: { size: 2,
      backup: { schedule: '@daily' } } }));
    await waitFor('restored with 2 ready members, no backup running', async () => {
      const s = await restored();
      return s?.phase === 'Running' && s.readyMembers === 2 && s.scheduledBackup?.phase !== 'Running' ? s : undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000 });
    // Its recovery started a timeline too: a backup in it first.
    const before = timeline((await kubectl('exec', 'restored-0000', '-c', 'postgres', '--', 'psql', '-X', '-h',
      '/var/run/postgresql', '-U', 'postgres', '-Atc', 'SELECT pg_walfile_name(pg_current_wal_lsn())')).stdout.trim());
    await waitFor(`a backup in timeline ${before}`, async () => {
      const last = (await restored())?.lastBackup;
      return last && timeline(last.beginWal) === before || undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000 }).catch(stateOfRestored);
    // The primary's volume deleted: it is switched over to restored-0001, which goes on in a new timeline.
    await kubectl('delete', 'pvc', 'restored-0000', '--wait=false');
    await waitFor('restored-0001 promoted', async () => (await restored())?.primary === 'restored-0001' || undefined,
      { timeoutMs: 240_000, intervalMs: 2000 });
    const promotedAt = performance.now();
    const backup = await waitFor('a backup in the new timeline', async () => {
      const last = (await restored())?.lastBackup;
      return last && timeline(last.beginWal) > before ? last : undefined;
    }, { timeoutMs: 240_000, intervalMs: 2000 }).catch(stateOfRestored);
    assert.equal(backup.type, 'incr');
    assert.match((await kubectl('get', 'events', '--field-selector', 'reason=BackupStarted', '-o',
      'jsonpath={.items[*].message}')).stdout,
    /Incremental backup scheduled-\d{8}T\d{4}Z started on (restored-\d{4}), into the object store, from the standby \1 copying the data files, the primary restored-0001 starting/);
    // Taken there to its end, not again on the primary.
    assert.equal((await restored())?.scheduledBackup?.standbyOf, 'restored-0001');
    console.log(`new timeline: backup ${backup.name} in the store ${((performance.now() - promotedAt) / 1000).toFixed(1)} s ` +
      'after the promotion was seen');
  });

  it('takes a backup on a streaming standby, the primary starting and stopping it, and a new cluster recovers from it', async () => {
    const primary = (await get('pgc', 'restored')).status.primary;
    const standby = (await kubectl('get', 'pods', '-l', 'keelson.dev/postgrescluster=restored,keelson.dev/role=replica',
      '-o', 'jsonpath={.items[*].metadata.name}')).stdout.trim();
    assert.match(standby, /^restored-\d{4}$/, 'one replica');
    const psql = (pod: string, query: string) => kubectl('exec', pod, '-c', 'postgres', '--', 'psql', '-X', '-v',
      'ON_ERROR_STOP=1', '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', query);
    await psql(primary, 'INSERT INTO ticks (id) SELECT generate_series(36, 40)');
    const expected = (await psql(primary, "SELECT string_agg(id::text, ',' ORDER BY id) FROM ticks")).stdout.trim();
    await kubectl('annotate', 'pgc', 'restored', 'keelson.dev/backup-request=from-standby', '--overwrite');
    const taken = await waitFor('the backup asked for Completed', async () => {
      const s = (await get('pgc', 'restored'))?.status;
      if (s?.backupRequest?.phase === 'Failed') throw new Error(`backup failed: ${s.backupRequest.message}`);
      return s?.backupRequest?.token === 'from-standby' && s.backupRequest.phase === 'Completed' ? s : undefined;
    }, { timeoutMs: 180_000, intervalMs: 1000 });
    const retried = (await kubectl('get', 'events', '--field-selector', 'reason=BackupRetriedOnPrimary', '-o',
      'jsonpath={.items[*].message}')).stdout;
    assert.doesNotMatch(retried, /Backup from-standby /, 'taken again on the primary');
    assert.equal(taken.backupRequest.member, standby);
    assert.match((await kubectl('get', 'events', '--field-selector', 'reason=BackupStarted', '-o',
      'jsonpath={.items[*].message}')).stdout, new RegExp(`Full backup from-standby started on ${standby}, into the ` +
      `object store, from the standby ${standby} copying the data files, the primary ${primary} starting and stopping it`));
    // pgBackRest's own record of it: taken from a standby.
    const manifest = await s3Request(store, 'GET',
      `/${store.bucket}/${namespace}/restored/backup/restored/${taken.lastBackup.name}/backup.manifest`);
    assert.match(manifest, /^option-backup-standby=true$/m);
    // None of restored's backups, through its recovery, promotions and this one, ever ran beside another: no Event of it
    // (BackupFailed, BackupRetriedOnPrimary) says pgBackRest found the lock held.
    assert.doesNotMatch((await kubectl('get', 'events', '--field-selector', 'involvedObject.name=restored',
      '-o', 'jsonpath={.items[*].message}')).stdout, /unable to acquire lock/);
    // The latest backup of restored is that one: a cluster recovered from the store, all of it, starts from it.
    cleanups.push(() => kubectl('delete', 'pgc', 'from-standby', '--ignore-not-found', '--wait=true', '--timeout=120s')
      .catch(() => {}));
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'from-standby', namespace },
      spec: { size: 1, version: '15', image, synchronousReplicas: 0, storage: { size: '256Mi' },
        backup: { schedule: '@daily', objectStore: { endpoint: store.endpoint, bucket: store.bucket,
          credentials: { name: 'store-keys' }, ca: { name: 'kube-root-ca.crt', key: 'ca.crt' } } },
        bootstrap: { recovery: { source: 'restored' } } } });
    await waitFor('from-standby Running', async () => (await get('pgc', 'from-standby'))?.status?.phase === 'Running' ||
      undefined, { timeoutMs: 300_000, intervalMs: 1000 }).catch(async (error: Error) => {
      const log = await kubectl('logs', 'from-standby-0000', '-c', 'postgres', '--tail=30').catch(() => ({ stdout: '' }));
      throw new Error(`${error.message}\n${log.stdout}`);
    });
    assert.equal((await psql('from-standby-0000', "SELECT string_agg(id::text, ',' ORDER BY id) FROM ticks")).stdout.trim(),
      expected);
  });
});
