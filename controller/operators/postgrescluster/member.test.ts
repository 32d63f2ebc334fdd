// The member lifecycle against real PostgreSQL (Debian's packages), run by the very scripts member pods run: a seed,
// replicas cloned from it, a failover to the replica with the most WAL (each asked once it can take no more from the
// old primary), the old primary rewound back in as a replica, members that cannot be rewound or were cloned halfway
// cloned afresh, and a recovery from what pgBackRest archived. Data written before each step is read back after it.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { appendFile, chown, mkdir, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { heldLink } from '../../../test/support/held-link.ts';
import { postgresScratch, runScript, servedCertificate, sql, startMember, type Environment, type Member }
  from '../../../test/support/postgres.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { issueCa, issueServer } from './certificates.ts';
import { serveMetrics } from './metrics.ts';
import { lsnValue, memberScript, parsePosition, positionScript, promoteScript, readyScript,
  synchronousScript } from './scripts.ts';

let dir: string;
let environment: Environment;
const members: Member[] = [];
const passwords = { POSTGRES_PASSWORD: 'superSecret1', REPLICATION_PASSWORD: 'replSecret1' };

async function member(name: string, env: Record<string, string>): Promise<Member> {
  const started = await startMember(environment, name, join(dir, name), memberScript, env);
  members.push(started);
  return started;
}

const replicaOf = (primary: Member) => ({ MEMBER_ROLE: 'replica', PRIMARY_HOST: '127.0.0.1', PRIMARY_PORT: String(primary.port) });
/** A replica that streams through its own slot, as member pods do. */
const slottedReplicaOf = (primary: Member, name: string) => ({ ...replicaOf(primary), REPLICATION_SLOT: name });
const slots = (m: Member) => sql(environment, m, 'SELECT slot_name || \':\' || active FROM pg_replication_slots ORDER BY 1');
const ready = (m: Member) => runScript(environment, readyScript, { PGPORT: String(m.port) }).then(() => 'ready',
  (error: { stderr?: string }) => error.stderr?.trim() ?? 'failed');
const rows = (m: Member) => sql(environment, m, 'SELECT note FROM notes ORDER BY id');
const shows = (m: Member, note: string) => waitFor(`${m.name} to show "${note}"`,
  async () => (await rows(m)).split('\n').includes(note), { timeoutMs: 60_000 });
const position = async (m: Member) => parsePosition(await runScript(environment, positionScript, { PGPORT: String(m.port) }));
const promote = (m: Member, env: Record<string, string> = {}) =>
  runScript(environment, promoteScript, { PGPORT: String(m.port), SYNCHRONOUS_STANDBY_NAMES: '', ...env });
// In a cluster, replicas stream from the read-write Service, which moves to the promoted member, and are known to it by
// their pod's name; here the replica is pointed at it by hand, as the Service's move does.
async function follow(replica: Member, primary: Member): Promise<void> {
  await sql(environment, replica, `ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=${primary.port} ` +
    `user=replicator password=${passwords.REPLICATION_PASSWORD} application_name=${replica.name}'`);
  await sql(environment, replica, 'SELECT pg_reload_conf()');
}
// A replica keeps none of its primary's synchronous standbys: promoted, it waits for those the operator names.
async function hasNoSynchronousStandbys(m: Member): Promise<void> {
  assert.doesNotMatch(await readFile(join(m.dataDir, 'postgresql.auto.conf'), 'utf8'), /synchronous_standby_names/);
  assert.equal(await sql(environment, m, 'SHOW synchronous_standby_names'), '');
}

before(async () => {
  ({ dir, environment } = await postgresScratch(passwords));
});
after(async () => {
  await Promise.all(members.map((m) => m.kill()));
  await rm(dir, { recursive: true, force: true });
});

describe('member scripts against real PostgreSQL', () => {
  let a: Member;
  let b: Member;
  let c: Member;
  const backups = () => join(dir, 'backups');

  it('initialises a seed and clones streaming replicas from it', async () => {
    a = await member('a', { MEMBER_ROLE: 'primary' });
    await sql(environment, a, 'CREATE TABLE notes (id serial PRIMARY KEY, note text); INSERT INTO notes (note) VALUES (\'seeded\')');
    [b, c] = await Promise.all([member('b', slottedReplicaOf(a, 'b')), member('c', slottedReplicaOf(a, 'c'))]);
    await shows(b, 'seeded');
    await shows(c, 'seeded');
    assert.equal((await position(a)).role, 'primary');
    // Asked its position, b ends its WAL receiver (as a failover asks it to) and streams again within moments.
    assert.equal((await position(b)).role, 'replica');
    await waitFor('both replicas streaming', async () =>
      await sql(environment, a, 'SELECT count(*) FROM pg_stat_replication') === '2');
    // Each streams through a slot of its own, made on the primary before it cloned.
    await waitFor('both slots in use', async () => (await slots(a)) === 'b:true\nc:true');
    assert.equal(await ready(a), 'ready');
    await waitFor('b ready', async () => (await ready(b)) === 'ready');
  });

  it('serves the statistics of the primary and of a replica as their agents do', async () => {
    await sql(environment, a, 'ALTER SYSTEM SET synchronous_standby_names = \'ANY 1 (*)\'');
    await sql(environment, a, 'SELECT pg_reload_conf()');
    const errors: string[] = [];
    const scrape = async (m: Member) => {
      const server = await serveMetrics('127.0.0.1', { socketDir: environment.socketDir, port: m.port,
        onError: (error, query) => errors.push(`${m.name} ${query ?? ''}: ${error.message}`) }, 0);
      try {
        const { port } = server.address() as AddressInfo;
        return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      } finally {
        server.close();
      }
    };
    const value = (text: string, series: string) =>
      Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.split(' ')[1]);
    await waitFor('a to count both standbys towards its quorum', async () =>
      value(await scrape(a), 'keelson_postgres_synchronous_standbys_connected') === 2);
    const primary = await scrape(a);
    assert.equal(value(primary, 'keelson_postgres_up'), 1);
    assert.equal(value(primary, 'keelson_postgres_in_recovery'), 0);
    assert.equal(value(primary, 'keelson_postgres_synchronous_standbys_required'), 1);
    // One per standby (known by application_name: here both are this machine's host name).
    assert.equal(primary.match(/^keelson_postgres_replication_lag_bytes\{standby="[^"]+",stage="replayed"\} \d+$/gm)?.length, 2);
    assert.equal(value(primary, 'keelson_postgres_replication_slot_active{slot="c"}'), 1);
    assert.ok(value(primary, 'keelson_postgres_database_size_bytes{datname="postgres"}') > 0);
    assert.match(primary, /^# TYPE keelson_postgres_transactions_total counter$/m);
    const replica = await scrape(b);
    assert.equal(value(replica, 'keelson_postgres_in_recovery'), 1);
    assert.equal(value(replica, 'keelson_postgres_wal_receiver_up'), 1);
    assert.ok(value(replica, 'keelson_postgres_wal_position_bytes') > 0);
    assert.deepEqual(errors, []);
    await sql(environment, a, 'ALTER SYSTEM RESET synchronous_standby_names');
    await sql(environment, a, 'SELECT pg_reload_conf()');
  });

  it('promotes a replica with all the WAL it received, replayed or not, and its commits wait for c', async () => {
    // b stops replaying but goes on receiving: it holds the last write without showing it.
    await sql(environment, b, 'SELECT pg_wal_replay_pause()');
    await sql(environment, a, 'INSERT INTO notes (note) VALUES (\'last write\')');
    const written = lsnValue(await sql(environment, a, 'SELECT pg_current_wal_lsn()'));
    await shows(c, 'last write');
    await waitFor('b to receive the last write', async () =>
      lsnValue(await sql(environment, b, 'SELECT pg_last_wal_receive_lsn()')) >= written);
    await a.kill();
    const [pb, pc] = await Promise.all([position(b), position(c)]);
    assert.equal(pb.lsn, pc.lsn, 'both hold the same WAL');
    assert.ok(pb.replayed < pb.lsn, 'b has not replayed all it holds');
    assert.deepEqual((await rows(b)).split('\n'), ['seeded']);

    assert.match(await ready(c), /not streaming from the primary/);
    await promote(b, { SYNCHRONOUS_STANDBY_NAMES: 'ANY 1 ("c")', SLOTS: 'a c' });
    assert.equal((await position(b)).role, 'primary');
    // Made before b took writes, and none kept from when b was a replica.
    assert.equal(await slots(b), 'a:false\nc:false');
    assert.deepEqual((await rows(b)).split('\n'), ['seeded', 'last write']);
    // In force before b took writes: its first commit waits for c, which does not stream from it yet.
    assert.equal(await sql(environment, b, 'SHOW synchronous_standby_names'), 'ANY 1 ("c")');
    let committed = false;
    const commit = sql(environment, b, 'INSERT INTO notes (note) VALUES (\'after failover\')').then(() => { committed = true; });
    await waitFor('the commit on b to wait for c', async () =>
      await sql(environment, b, 'SELECT count(*) FROM pg_stat_activity WHERE wait_event = \'SyncRep\'') === '1');
    assert.equal(committed, false);
    await follow(c, b);
    await waitFor('the commit on b to return once c has it', () => committed, { timeoutMs: 60_000 });
    await commit;
    await shows(c, 'after failover');
    assert.deepEqual((await rows(c)).split('\n'), ['seeded', 'last write', 'after failover']);
  });

  it('fails a promotion that does not finish in time, and finishes it when run again', async () => {
    const e = await member('e', replicaOf(b));
    const startup = Number(await sql(environment, e, 'SELECT pid FROM pg_stat_activity WHERE backend_type = \'startup\''));
    // Recovery ends in the startup process: stopped, it cannot.
    process.kill(startup, 'SIGSTOP');
    try {
      await assert.rejects(promote(e, { PROMOTE_TIMEOUT: '1' }),
        (error: { stderr?: string }) => /did not finish promoting within 1 s/.test(error.stderr ?? ''));
    } finally {
      process.kill(startup, 'SIGCONT');
    }
    await promote(e);
    assert.equal((await position(e)).role, 'primary');
    // What a promotion cut short after pg_promote has left to do.
    await promote(e, { SYNCHRONOUS_STANDBY_NAMES: 'ANY 1 ("b")' });
    assert.equal(await sql(environment, e, 'SHOW synchronous_standby_names'), 'ANY 1 ("b")');
    await e.kill();
  });

  it('rewinds the old primary and brings it back as a replica of the new one', async () => {
    members.splice(members.indexOf(a), 1);
    a = await member('a', replicaOf(b));
    assert.match(a.output(), /rewinding onto 127\.0\.0\.1[^]*pg_rewind: Done!/);
    await shows(a, 'after failover');
    assert.equal((await position(a)).role, 'replica');
    await hasNoSynchronousStandbys(a);
  });

  it('clones a replica without the primary\'s synchronous standbys', async () => {
    assert.equal(await sql(environment, b, 'SHOW synchronous_standby_names'), 'ANY 1 ("c")');
    const d = await member('d', replicaOf(b));
    await shows(d, 'after failover');
    await hasNoSynchronousStandbys(d);
  });

  it('clones afresh a member that pg_rewind cannot rewind', async () => {
    // Another initdb's data, from a primary of its own: pg_rewind refuses to rewind it onto b.
    const x = await member('x', { MEMBER_ROLE: 'primary' });
    await x.kill();
    members.splice(members.indexOf(x), 1);
    const again = await member('x', replicaOf(b));
    assert.match(again.output(), /from different systems[^]*pg_rewind failed[^]*cloning from 127\.0\.0\.1/);
    await shows(again, 'after failover');
  });

  it('clones over what a clone cut short left', async () => {
    // Beside the data directory, where a clone is made now; in it, where it was made before.
    for (const leftover of ['y.new', 'y']) {
      await mkdir(join(dir, leftover));
      await writeFile(join(dir, leftover, 'backup_label'), '');
      await chown(join(dir, leftover), environment.user.uid, environment.user.gid);
    }
    const y = await member('y', replicaOf(b));
    await shows(y, 'after failover');
    assert.ok(!(await readdir(dir)).includes('y.new'));
  });

  it('clones afresh a replica whose data is of another major version, and starts no primary on such data', async () => {
    // What a major upgrade leaves on a replica's volume: the old major's data, which the upgraded primary's is not.
    const olderMajor = async (name: string) => {
      await mkdir(join(dir, name));
      await writeFile(join(dir, name, 'PG_VERSION'), '14\n');
      for (const path of [join(dir, name), join(dir, name, 'PG_VERSION')]) {
        await chown(path, environment.user.uid, environment.user.gid);
      }
    };
    await olderMajor('z');
    const z = await member('z', replicaOf(b));
    await shows(z, 'after failover');
    assert.match(z.output(), /data is PostgreSQL 14's and this server is 15: cloned afresh/);
    await olderMajor('older');
    await assert.rejects(startMember(environment, 'older', join(dir, 'older'), memberScript, { MEMBER_ROLE: 'primary' }),
      /data is PostgreSQL 14's and this server is 15: it is not started/);
    assert.equal(await readFile(join(dir, 'older', 'PG_VERSION'), 'utf8'), '14\n');
  });

  it('keeps on the primary the slots of the members named, and drops those no member streams from', async () => {
    const configure = (slotNames: string) => runScript(environment, synchronousScript,
      { PGPORT: String(b.port), SYNCHRONOUS_STANDBY_NAMES: 'ANY 1 ("c")', SLOTS: slotNames, SLOT_PATTERN: '^[a-z]$' });
    assert.equal(await slots(b), 'a:false\nc:true');
    // A slot that is not the cluster's is never dropped.
    await sql(environment, b, 'SELECT pg_create_physical_replication_slot(\'users_own\')');
    assert.equal(await configure('c z'), 'c\nusers_own\nz');
    await sql(environment, b, 'SELECT pg_drop_replication_slot(\'users_own\')');
    assert.equal(await configure('c'), 'c');
    // c streams through its slot: it stays until c stops.
    assert.equal(await configure(''), 'c');
    assert.equal(await sql(environment, b, 'SHOW synchronous_standby_names'), 'ANY 1 ("c")');
  });

  it('clones afresh a replica whose WAL its primary no longer keeps, which is not ready meanwhile', async () => {
    const roleFile = join(dir, 'w.role');
    await writeFile(roleFile, 'replica\n', { mode: 0o644 });
    const w = await member('w', { ...slottedReplicaOf(b, 'w'), ROLE_FILE: roleFile, RECLONE_AFTER: '10' });
    await waitFor('w ready', async () => (await ready(w)) === 'ready', { timeoutMs: 30_000 });
    const settings = async (m: Member, values: Record<string, string>) => {
      for (const [name, value] of Object.entries(values)) await sql(environment, m, `ALTER SYSTEM SET ${name} = '${value}'`);
      await sql(environment, m, 'SELECT pg_reload_conf()');
    };
    // While w is disconnected, b writes past what one slot may keep, and a checkpoint removes that WAL.
    await sql(environment, b, 'CREATE TABLE away (id int)');
    const conninfo = await sql(environment, w, 'SHOW primary_conninfo');
    await settings(b, { max_slot_wal_keep_size: '32MB', wal_keep_size: '0' });
    await settings(w, { primary_conninfo: '' });
    try {
      await waitFor('w disconnected', async () => (await slots(b)).includes('w:false'));
      for (let i = 0; i < 4; i++) {
        await sql(environment, b, `INSERT INTO away VALUES (${i})`);
        await sql(environment, b, 'SELECT pg_switch_wal()');
      }
      await sql(environment, b, 'CHECKPOINT');
      assert.equal(await sql(environment, b, 'SELECT wal_status FROM pg_replication_slots WHERE slot_name = \'w\''), 'lost');
    } finally {
      await settings(w, { primary_conninfo: conninfo });
      await settings(b, { max_slot_wal_keep_size: '-1', wal_keep_size: '0' });
    }
    await waitFor('w not ready', async () => /not streaming from the primary/.test(await ready(w)),
      { timeoutMs: 30_000, intervalMs: 200 });
    await waitFor('w cloned afresh', async () => /cloning afresh/.test(w.output()), { timeoutMs: 60_000 });
    await waitFor('w to hold what was written while it was away', async () =>
      await sql(environment, w, 'SELECT count(*) FROM away').catch(() => '') === '4', { timeoutMs: 60_000 });
    await waitFor('w ready again', async () => (await ready(w)) === 'ready', { timeoutMs: 30_000 });
    assert.match(await slots(b), /w:true/);
    // Stopped as its pod's deletion would: PostgreSQL ends, and the script with it.
    await runScript(environment, 'pg_ctl -D "$PGDATA" -m fast -w stop', { PGDATA: w.dataDir });
    members.splice(members.indexOf(w), 1);
  });

  it('recovers a new primary from a backup volume pgBackRest filled: every row archived, or a backup named, to its end',
    async () => {
      // An archiving member as pods run one (PGBACKREST_STANZA set), into a repository on this machine's disk.
      await mkdir(backups());
      await chown(backups(), environment.user.uid, environment.user.gid);
      const pgBackRest = { PGBACKREST_STANZA: 'orders', PGBACKREST_REPO1_PATH: backups(),
        PGBACKREST_LOCK_PATH: join(dir, 'locks'), PGBACKREST_LOG_LEVEL_FILE: 'off', PGBACKREST_LOG_LEVEL_CONSOLE: 'warn',
        PGBACKREST_PG1_SOCKET_PATH: environment.socketDir, PGBACKREST_PG1_USER: 'postgres', PGBACKREST_START_FAST: 'y' };
      const archived = await member('archived', { MEMBER_ROLE: 'primary', ...pgBackRest,
        PGBACKREST_PG1_PATH: join(dir, 'archived') });
      const onArchived = { ...pgBackRest, PGBACKREST_PG1_PATH: archived.dataDir, PGBACKREST_PG1_PORT: String(archived.port) };
      await sql(environment, archived, 'CREATE TABLE notes (id serial PRIMARY KEY, note text); ' +
        'INSERT INTO notes (note) VALUES (\'seeded\')');
      await runScript(environment, 'pgbackrest stanza-create && pgbackrest backup --type=full', onArchived);
      const [label] = JSON.parse(await runScript(environment, 'pgbackrest info --output=json', onArchived))[0].backup
        .map((b: { label: string }) => b.label);
      await sql(environment, archived, 'INSERT INTO notes (note) VALUES (\'after the backup\')');
      const segment = await sql(environment, archived, 'SELECT pg_walfile_name(pg_switch_wal())');
      await waitFor(`${segment} archived`, async () => await sql(environment, archived,
        'SELECT last_archived_wal FROM pg_stat_archiver') >= segment, { timeoutMs: 60_000 });
      await archived.kill();
      members.splice(members.indexOf(archived), 1);

      // As a new cluster's seed recovers from another's volume: read as a directory, though its own repository host
      // is set (pgBackRest would reach for that one: here, a loopback port nothing serves).
      const fresh = { POSTGRES_PASSWORD: 'otherSecret2', REPLICATION_PASSWORD: 'otherRepl2' };
      const fromVolume = { MEMBER_ROLE: 'primary', ...fresh, RECOVER_STANZA: 'orders', RECOVER_PATH: backups(),
        RECOVER_FROM_VOLUME: 'true', ...Object.fromEntries(['HOST=127.0.0.1', 'HOST_PORT=9', 'HOST_TYPE=tls',
          'HOST_CA_FILE=/nowhere/ca.crt', 'HOST_CERT_FILE=/nowhere/tls.crt', 'HOST_KEY_FILE=/nowhere/tls.key']
          .map((setting) => [`PGBACKREST_REPO1_${setting.split('=')[0]}`, setting.split('=')[1]])),
        PGBACKREST_LOCK_PATH: join(dir, 'locks'), PGBACKREST_LOG_LEVEL_FILE: 'off' };
      const named = await member('named', { ...fromVolume, RECOVER_SET: label });
      assert.match(named.output(), new RegExp(`recovering orders from .*backups, backup ${label}`));
      assert.deepEqual((await rows(named)).split('\n'), ['seeded'], 'the backup named, to its end only');
      await named.kill();
      members.splice(members.indexOf(named), 1);
      const restored = await member('restored', fromVolume);
      assert.deepEqual((await rows(restored)).split('\n'), ['seeded', 'after the backup'], 'all of the archive');
      assert.equal((await position(restored)).role, 'primary');
      // The restored member has this cluster's passwords, not the backed-up one's: a replica clones with them.
      const replica = await member('restored-replica', { ...replicaOf(restored), ...fresh });
      await sql(environment, restored, 'INSERT INTO notes (note) VALUES (\'restored\')');
      await shows(replica, 'restored');

      // A promoted member whose pod still says replica in its environment restarts as what its agent says the Lease
      // says.
      await restored.kill();
      members.splice(members.indexOf(restored), 1);
      const roleFile = join(dir, 'role');
      await writeFile(roleFile, 'primary\n', { mode: 0o644 });
      const again = await member('restored', { ...replicaOf(replica), ROLE_FILE: roleFile, ...fresh });
      assert.doesNotMatch(again.output(), /rewinding|cloning/);
      assert.equal((await position(again)).role, 'primary');
    });

  it('recovers nothing, and makes no data directory, from a volume with no backup of the stanza', async () => {
    // pgBackRest's own word that the volume holds no such stanza: it looked there, not at the repository host.
    await assert.rejects(member('orphan', { MEMBER_ROLE: 'primary', RECOVER_STANZA: 'elsewhere', RECOVER_PATH: backups(),
      RECOVER_FROM_VOLUME: 'true', PGBACKREST_REPO1_HOST: '127.0.0.1', PGBACKREST_REPO1_HOST_PORT: '9',
      PGBACKREST_LOCK_PATH: join(dir, 'locks'), PGBACKREST_LOG_LEVEL_FILE: 'off' }),
    /recovering elsewhere from[^]*unable to load info file '[^']*backups\/backup\/elsewhere\/backup\.info'/);
    await assert.rejects(readFile(join(dir, 'orphan', 'PG_VERSION')), /ENOENT/);
  });

  it('never initialises a primary with no data once the cluster\'s data exists, and touches nothing', async () => {
    const empty = join(dir, 'emptied');
    await assert.rejects(startMember(environment, 'emptied', empty, memberScript,
      { MEMBER_ROLE: 'primary', BOOTSTRAPPED: 'true' }), /its volume has no data and the cluster's data exists/);
    await assert.rejects(readdir(empty), { code: 'ENOENT' });
  });
});

describe('the member script as PID 1, fencing on its agent\'s word', () => {
  // Counted in whole seconds, so a primary may go up to a second early: 3 s tolerates a writer starved for 2.
  const fence = { FENCE_AFTER: '3' };
  let roleFile: string;
  let refresh: NodeJS.Timeout | undefined;
  let spoken: Promise<void> = Promise.resolve();
  // As the agent writes it: whole, by a rename, so the member never reads a file being written (an empty word fences).
  // One word at a time, in order: a word the test says must not cross one its writer is still renaming.
  const say = (word: string) => (spoken = spoken.catch(() => {}).then(async () => {
    await writeFile(`${roleFile}.new`, `${word}\n`);
    await rename(`${roleFile}.new`, roleFile);
  }));
  // One writer at a time: a test that failed while its writer ran must not go on speaking into the next.
  const keepSaying = (word: string) => {
    clearInterval(refresh);
    refresh = setInterval(() => void say(word).catch(() => {}), 300);
  };
  /** Stops the writer, once its last word is written. */
  const silence = async () => {
    clearInterval(refresh);
    await spoken.catch(() => {});
  };
  const answers = (m: Member) => sql(environment, m, 'SELECT 1').then(() => true, () => false);
  const stoppedAt = (m: Member) => waitFor(`${m.name} to stop answering`, async () => !(await answers(m)) && Date.now(),
    { timeoutMs: 15_000, intervalMs: 100 });
  after(silence);

  it('keeps a primary running while its agent says "primary" afresh, and stops it once the word goes stale', async () => {
    roleFile = join(dir, 'fence.role');
    await say('primary');
    keepSaying('primary');
    const primary = await member('fence', { MEMBER_ROLE: 'primary', ROLE_FILE: roleFile, ...fence });
    // Twice the bound, looked at every quarter second: up all along.
    for (const until = Date.now() + 6_000; Date.now() < until; await sleep(250)) {
      assert.ok(await answers(primary), `a primary its agent confirms stopped: ${primary.output().slice(-300)}`);
    }
    await silence();
    const quiet = Date.now();
    const stopped = await stoppedAt(primary);
    assert.ok(stopped - quiet <= 3_000 + 1_500, `stopped ${stopped - quiet} ms after the last word: past the bound`);
    assert.match(primary.output(), /stopping PostgreSQL: the member agent says primary, unchanged for [34]s/);
    members.splice(members.indexOf(primary), 1);
  });

  it('stops at once a primary its agent says is a replica', async () => {
    await say('primary');
    keepSaying('primary');
    const primary = await member('fence', { MEMBER_ROLE: 'primary', ROLE_FILE: roleFile, ...fence });
    await silence();
    await say('replica');
    const said = Date.now();
    assert.ok((await stoppedAt(primary)) - said <= 1_500, 'not stopped within a second of the word');
    assert.match(primary.output(), /stopping PostgreSQL: the member agent says replica/);
    members.splice(members.indexOf(primary), 1);
  });

  it('sets the passwords it is given on a primary starting on its data, though its standbys cannot log in yet', async () => {
    await appendFile(join(dir, 'fence', 'postgresql.auto.conf'), "synchronous_standby_names = 'ANY 1 (nobody)'\n");
    await say('primary');
    keepSaying('primary');
    const given = { POSTGRES_PASSWORD: 'madeAgain2', REPLICATION_PASSWORD: 'madeAgain3' };
    const primary = await member('fence', { MEMBER_ROLE: 'primary', ROLE_FILE: roleFile, ...fence, ...given });
    const login = (user: string, password: string) => runScript(environment,
      `psql -X -h 127.0.0.1 -p ${primary.port} -U ${user} -d postgres -Atc 'SELECT 1'`, { PGPASSWORD: password })
      .then(() => true, () => false);
    await waitFor('the new passwords taken', async () => await login('postgres', given.POSTGRES_PASSWORD) &&
      await login('replicator', given.REPLICATION_PASSWORD), { timeoutMs: 15_000, intervalMs: 250 });
    assert.equal(await login('postgres', passwords.POSTGRES_PASSWORD), false);
    await silence();
  });

  it('serves TLS, streams to a replica that verifies it, and takes up a new certificate without a restart', async () => {
    // As kubelet mounts a Secret: each file a link into ..data, itself a link to a directory of them all, swapped whole.
    let version = 0;
    const mounted = async (name: string, files: { cert: string; key: string; ca: string }) => {
      const at = join(dir, name);
      const snapshot = `..${++version}`;
      await mkdir(join(at, snapshot), { recursive: true });
      for (const [file, text] of [['tls.crt', files.cert], ['tls.key', files.key], ['ca.crt', files.ca]] as const) {
        await writeFile(join(at, snapshot, file), text);
        await symlink(join('..data', file), join(at, file)).catch(() => {});
      }
      await symlink(snapshot, join(at, '..data_tmp'));
      await rename(join(at, '..data_tmp'), join(at, '..data'));
      return at;
    };
    const copyDir = async (name: string) => {
      await mkdir(join(dir, name));
      await chown(join(dir, name), environment.user.uid, environment.user.gid);
      return join(dir, name);
    };
    const ca = await issueCa('member test CA');
    const first = await issueServer(ca, ['localhost']);
    const source = await mounted('tls-source', { ...first, ca: ca.cert });
    await say('primary');
    keepSaying('primary');
    const primary = await member('tls-a', { MEMBER_ROLE: 'primary', ROLE_FILE: roleFile, ...fence, TLS_SOURCE: source,
      TLS_DIR: await copyDir('tls-a-copy') });
    const served = () => servedCertificate('127.0.0.1', primary.port, ca.cert, 'localhost');
    assert.equal((await served()).serialNumber, new X509Certificate(first.cert).serialNumber);
    const replicaEnv = { MEMBER_ROLE: 'replica', PRIMARY_HOST: 'localhost', PRIMARY_PORT: String(primary.port),
      PRIMARY_SSLMODE: 'verify-full', TLS_SOURCE: source };
    const replica = await member('tls-b', { ...replicaEnv, TLS_DIR: await copyDir('tls-b-copy') });
    await waitFor('the replica streaming over TLS', async () => (await sql(environment, primary,
      'SELECT string_agg(s.ssl::text, \',\') FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid)')) === 'true');
    // What the replica's connections to its primary verify with is theirs alone: none of PostgreSQL's own
    // connections elsewhere (a subscription, postgres_fdw) is made to verify against this cluster's CA.
    const postmaster = (await readFile(join(replica.dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0];
    assert.doesNotMatch(await readFile(`/proc/${postmaster}/environ`, 'utf8'), /(^|\0)PGSSL/);
    assert.equal(await runScript(environment, `psql -X -Atc 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()' ` +
      `"host=localhost port=${primary.port} user=postgres dbname=postgres sslmode=verify-full sslrootcert=${source}/ca.crt"`,
    { PGPASSWORD: passwords.POSTGRES_PASSWORD }), 't');
    // A replica given another CA refuses the primary rather than stream from a server it cannot verify.
    const stranger = await mounted('tls-stranger', { ...first, ca: (await issueCa('another CA')).cert });
    await assert.rejects(member('tls-c', { ...replicaEnv, TLS_SOURCE: stranger, TLS_DIR: await copyDir('tls-c-copy') }),
      /certificate verify failed/);
    // And one that reaches it by a name its certificate does not give.
    await assert.rejects(member('tls-d', { ...replicaEnv, PRIMARY_HOST: '127.0.0.1', TLS_DIR: await copyDir('tls-d-copy') }),
      /server certificate for "localhost".* does not match host name "127.0.0.1"/);
    const started = await sql(environment, primary, 'SELECT pg_postmaster_start_time()');
    const second = await issueServer(ca, ['localhost']);
    await mounted('tls-source', { ...second, ca: ca.cert });
    const renewed = new X509Certificate(second.cert).serialNumber;
    await waitFor('the new certificate served', async () => (await served()).serialNumber === renewed,
      { timeoutMs: 20_000, intervalMs: 500 });
    assert.equal(await sql(environment, primary, 'SELECT pg_postmaster_start_time()'), started, 'PostgreSQL restarted');
    assert.match(primary.output(), /reloading PostgreSQL: its server certificate changed/);
    await silence();
  });
});

describe('a replica asked how far its WAL goes, as a failover asks', () => {
  it('hangs up on its primary before it answers, so WAL a partition held back cannot reach it after', async () => {
    const primary = await member('cut', { MEMBER_ROLE: 'primary' });
    const link = await heldLink(primary.port);
    try {
      const replica = await member('beyond', { MEMBER_ROLE: 'replica', PRIMARY_HOST: '127.0.0.1',
        PRIMARY_PORT: String(link.port), REPLICATION_SLOT: 'beyond' });
      await sql(environment, primary, 'CREATE TABLE cut (id int)');
      await waitFor('the replica streaming', async () =>
        await sql(environment, replica, 'SELECT status FROM pg_stat_wal_receiver') === 'streaming');
      const started = await sql(environment, replica, 'SELECT pg_postmaster_start_time()');
      link.partition();
      await sql(environment, primary, 'INSERT INTO cut VALUES (1)');
      const written = lsnValue(await sql(environment, primary, 'SELECT pg_current_wal_lsn()'));
      await waitFor('WAL held back on its way to the replica', async () => link.heldBytes > 0);
      await primary.kill();
      const answered = await position(replica);
      await waitFor('the replica to hang up on its old primary', async () => link.clientHungUp, { timeoutMs: 5000 });
      assert.ok(answered.lsn < written, 'the held-back WAL reached the replica before it answered');
      assert.equal(await sql(environment, replica, 'SELECT pg_postmaster_start_time()'), started,
        'ending its WAL receiver restarted the replica');
    } finally {
      await link.close();
    }
  });
});

describe('WAL positions', () => {
  it('orders log sequence numbers across the 32-bit boundary', () => {
    assert.ok(lsnValue('1/0') > lsnValue('0/FFFFFFFF'));
    assert.deepEqual(parsePosition('replica 0/3000148 0/3000000\n'), { role: 'replica', lsn: 0x3000148n, replayed: 0x3000000n });
    assert.deepEqual(parsePosition('replica 0/3000148\n'), { role: 'replica', lsn: 0x3000148n, replayed: 0x3000148n });
    assert.throws(() => parsePosition('error'), /unexpected member position/);
  });
});
