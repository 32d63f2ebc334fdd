import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dueScheduledToken, lastBackupStatus, parseRepositoryInfo, startBackupScript, StoreBackups, tokenProblem }
  from './backups.ts';

// `pgbackrest info --output=json` as pgBackRest prints it, trimmed to what is read (2.45 gives no percentage; later
// releases add pct-cplt to the lock).
const info = (lock: object, backups: object[]) => JSON.stringify([{ name: 'shop', status: { code: 0, message: 'ok', lock },
  backup: backups }]);
const full = {
  label: '20261126-021500F', type: 'full', annotation: { 'keelson.dev/request': 'before-t' },
  archive: { start: '000000010000000000000004', stop: '000000010000000000000004' },
  lsn: { start: '0/4000028', stop: '0/4000138' },
  timestamp: { start: 1795659300, stop: 1795659307 },
  info: { size: 30_000_000, delta: 30_000_000, repository: { size: 4_000_000, delta: 4_000_000 } },
};

describe('backups into the object store', () => {
  it('reads a backup, its WAL range and sizes from pgBackRest\'s repository', () => {
    const parsed = parseRepositoryInfo(info({ backup: { held: false } }, [full]));
    assert.equal(parsed.running, false);
    assert.equal(parsed.backups[0]!.request, 'before-t');
    assert.deepEqual(lastBackupStatus(parsed.backups[0]!), { name: '20261126-021500F', time: '2026-11-26T02:15:07Z',
      type: 'full', beginWal: '000000010000000000000004', endWal: '000000010000000000000004', beginLSN: '0/4000028',
      endLSN: '0/4000138', sizeBytes: 30_000_000, repositorySizeBytes: 4_000_000, durationSeconds: 7 });
  });

  it('says which PostgreSQL major version a backup is of, as the stanza\'s database history says', () => {
    const history = JSON.stringify([{ name: 'shop', status: { code: 0, lock: { backup: { held: false } } },
      db: [{ id: 1, version: '15' }, { id: 2, version: '17' }],
      backup: [{ ...full, database: { id: 1 } }, { ...full, label: '20261127-021500F', database: { id: 2 } }] }]);
    assert.deepEqual(parseRepositoryInfo(history).backups.map((b) => lastBackupStatus(b).postgresVersion), ['15', '17']);
  });

  it('sees a backup under way, with its progress, and a stanza with nothing yet', () => {
    const running = parseRepositoryInfo(info({ backup: { held: true, 'pct-cplt': 4250 } }, []));
    assert.deepEqual(running, { running: true, percentComplete: 42.5, backups: [] });
    assert.deepEqual(parseRepositoryInfo('[]'), { backups: [], running: false });
  });

  it('is due on schedule once per fire time, counting from the last one taken or from the cluster\'s creation', () => {
    const now = new Date('2026-11-26T03:10:00Z');
    assert.equal(dueScheduledToken('0 3 * * *', undefined, '2026-11-25T12:00:00Z', now), 'scheduled-20261126T0300Z');
    assert.equal(dueScheduledToken('0 3 * * *', 'scheduled-20261126T0300Z', '2026-11-25T12:00:00Z', now), undefined);
    assert.equal(dueScheduledToken('0 3 * * *', undefined, '2026-11-26T03:05:00Z', now), undefined);
    // One the operator took for itself (before a major upgrade) counts as taken when it started.
    assert.equal(dueScheduledToken('0 3 * * *', 'before-postgresql-17-20261126031000', '2026-11-01T00:00:00Z', now,
      '2026-11-26T03:10:00Z'), undefined);
    // Missed times are one backup, the latest: a controller down for two days takes one.
    assert.equal(dueScheduledToken('0 3 * * *', 'scheduled-20261124T0300Z', '2026-11-01T00:00:00Z', now),
      'scheduled-20261126T0300Z');
    assert.equal(tokenProblem('scheduled-20261126T0300Z'), undefined);
  });

  it('takes only tokens that are safe in a shell and a file name', () => {
    assert.equal(tokenProblem('nightly-2026.11.26_1'), undefined);
    assert.match(tokenProblem('x; rm -rf /')!, /must be 1-63 letters/);
    assert.match(tokenProblem('')!, /must be 1-63 letters/);
    assert.match(startBackupScript('before-t', '2026-11-26T03:15:40Z', { retain: 3 }),
      /--repo1-retention-full=3 \\\n {2}--annotation=keelson.dev\/request=before-t .*\n.*started=2026-11-26T03:15:40Z .*\n.*backup-before-t.log/);
    assert.match(startBackupScript('aged', '2026-11-26T03:15:40Z', { retain: 3, retainDays: 30 }),
      / --repo1-retention-full-type=time --repo1-retention-full=30 \\\n/);
  });
});

describe('following backups into the object store', () => {
  const pod = (name: string, uid = `${name}-uid`) => ({ metadata: { name, namespace: 'shop', uid },
    status: { conditions: [{ type: 'Ready', status: 'True' }] } }) as any;
  const primary = pod('db-0000');
  const spec = { backup: { schedule: '0 3 * * *', retain: 2, objectStore: { endpoint: 'https://s3.example' } } } as any;
  /** A cluster as the cache would show it after the status written, with the annotation given. */
  const clusterWith = (status: object, annotation?: string) => ({ metadata: { name: 'db', namespace: 'shop', uid: 'c-1',
    creationTimestamp: new Date(Date.now() - 60_000).toISOString(),
    annotations: annotation ? { 'keelson.dev/backup-request': annotation } : {} }, status }) as any;

  function harness(repository: () => string) {
    const scripts: string[] = [];
    const backups = new StoreBackups({
      run: async (_ns, _pod, script) => {
        scripts.push(script);
        return script.includes('pgbackrest info') ? repository() : '';
      },
      pod: (_ns, name) => (name === 'db-0000' ? primary : undefined),
      record: async () => undefined,
    }, { checkEveryMs: 0, startGraceMs: 0 });
    /** follow() until its look under way has ended, writing what it returns into the status, as reconcile does. */
    const step = async (status: any, annotation?: string, timeline?: number, asked?: string) => {
      let result = await backups.follow(clusterWith(status, annotation), spec, true, primary, { timeline, asked });
      await new Promise((resolve) => setTimeout(resolve, 5));
      result = await backups.follow(clusterWith({ ...status, ...result }, annotation), spec, true, primary,
        { timeline, asked });
      return { ...status, ...result };
    };
    return { scripts, step, started: () => scripts.filter((s) => s.includes('pgbackrest backup')) };
  }

  it('starts one backup at a time, follows it to its end though the annotation is removed, then the schedule\'s', async () => {
    let listed: object[] = [];
    let held = true;
    const { step, started } = harness(() => info({ backup: { held } }, listed));
    // A store backup already exists, so no first backup is due; the annotation asks for one.
    let status: any = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full' } };
    status = await step(status, 'one');
    assert.equal(status.backupRequest.phase, 'Running');
    assert.equal(started().length, 1);
    assert.match(started()[0]!, /--repo1-retention-full=2 /);
    // Another token and the removal of the annotation start nothing while it runs.
    status = await step(status, 'two');
    status = await step(status);
    assert.equal(started().length, 1);
    assert.equal(status.backupRequest.token, 'one');
    listed = [{ ...full, annotation: { 'keelson.dev/request': 'one', 'keelson.dev/started': status.backupRequest.startTime } }];
    // Listed while its process still holds the lock, expiring older ones: not ended, or the next would find it locked.
    status = await step(status);
    assert.deepEqual([status.backupRequest.phase, status.backupRequest.message],
      ['Running', '20261126-021500F in the repository; expiring older backups']);
    held = false;
    status = await step(status);
    assert.equal(status.backupRequest.phase, 'Completed');
    assert.equal(status.lastBackup.name, '20261126-021500F');
  });

  /** Backups of a cluster whose members are `pods`, each answering `pgbackrest info` with its own lock and list. */
  function onMembers(pods: Record<string, any>) {
    const ran: { pod: string; script: string }[] = [];
    const events: string[] = [];
    const repository = { listed: [] as object[], heldOn: new Set<string>() };
    const backups = new StoreBackups({
      run: async (_ns, on, script) => {
        ran.push({ pod: on, script });
        return script.includes('pgbackrest info') ? info({ backup: { held: repository.heldOn.has(on) } }, repository.listed) : '';
      },
      pod: (_ns, name) => pods[name],
      record: async (_c, _t, reason, note) => events.push(`${reason}: ${note}`),
    }, { checkEveryMs: 0, startGraceMs: 0 });
    const last = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full' } };
    /** follow() twice (a look under way ends between), the status written as reconcile does. */
    const step = async (status: any, token: string, primaryPod: any, standby?: { pod: any; options: string },
      steady = true) => {
      for (let i = 0; i < 2; i++) {
        status = { ...status, ...await backups.follow(clusterWith(status, token), spec, steady, primaryPod, { standby }) };
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      return status;
    };
    return { ran, events, repository, last, step, read: () => ran.filter((r) => r.script.includes('pgbackrest info')) };
  }
  const standbyOf = (replica: any) => ({ pod: replica, options: '--backup-standby --pg2-host=db-0000.db-members.shop.svc' });

  it('takes a backup into the volume on the repository host, from the standby given, and reads it there', async () => {
    const replica = pod('db-0001');
    const host = { ...pod('db-repo'), status: { conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [{ name: 'repository', state: { running: {} } }] } };
    const ran: { pod: string; container: string; script: string }[] = [];
    const events: string[] = [];
    let listed: object[] = [];
    const backups = new StoreBackups({
      run: async (_ns, on, script, container) => {
        ran.push({ pod: on, container, script });
        return script.includes('pgbackrest info') ? info({ backup: { held: listed.length === 0 } }, listed) : '';
      },
      pod: (_ns, name) => ({ 'db-0000': primary, 'db-0001': replica, 'db-repo': host } as any)[name],
      record: async (_c, _t, reason, note) => events.push(`${reason}: ${note}`),
    }, { checkEveryMs: 0, startGraceMs: 0 });
    const intoVolume = { backup: { schedule: '0 3 * * *', retain: 2 } } as any;
    const standby = { pod: replica, options: '--pg1-host=db-0000.db-members.shop.svc --pg2-host=db-0001.db-members.shop.svc ' +
      '--backup-standby' };
    const repositoryHost = { pod: host, options: '--pg1-host=db-0000.db-members.shop.svc' };
    const last = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full' } };
    assert.deepEqual(await backups.follow(clusterWith(last, 'one'), intoVolume, true, primary, { standby }), {},
      'no repository host serving: nothing starts');
    assert.equal(ran.length, 0);
    let status: any = { ...last, ...await backups.follow(clusterWith(last, 'one'), intoVolume, true, primary,
      { standby, repositoryHost }) };
    assert.deepEqual([status.backupRequest.member, status.backupRequest.standbyOf], ['db-repo', 'db-0000']);
    const start = ran.find((r) => r.script.includes('pgbackrest backup'))!;
    assert.deepEqual([start.pod, start.container], ['db-repo', 'repository']);
    assert.match(start.script, / --pg1-host=db-0000\S* --pg2-host=db-0001\S* --backup-standby \\\n/);
    assert.match(events.join('\n'), /started on db-repo, into the backup volume, from the standby db-0001 copying/);
    listed = [{ ...full, annotation: { 'keelson.dev/request': 'one', 'keelson.dev/started': status.backupRequest.startTime } }];
    for (let i = 0; i < 2 && status.backupRequest.phase === 'Running'; i++) {
      status = { ...status, ...await backups.follow(clusterWith(status, 'one'), intoVolume, true, primary,
        { standby, repositoryHost }) };
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(status.backupRequest.phase, 'Completed');
    assert.ok(ran.filter((r) => r.script.includes('pgbackrest info'))
      .every((r) => r.pod === 'db-repo' && r.container === 'repository'));
    // From the primary, by the repository host: a failover meanwhile stops it there, and it fails.
    listed = [];
    status = { ...status, ...await backups.follow(clusterWith(status, 'two'), intoVolume, true, primary,
      { repositoryHost }) };
    assert.deepEqual([status.backupRequest.member, status.backupRequest.primary], ['db-repo', 'db-0000']);
    const promoted = pod('db-0001');
    for (let i = 0; i < 2 && status.backupRequest.phase === 'Running'; i++) {
      status = { ...status, ...await backups.follow(clusterWith(status, 'two'), intoVolume, false, promoted,
        { repositoryHost }) };
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(status.backupRequest.phase, 'Failed');
    assert.match(status.backupRequest.message, /the primary changed from db-0000 to db-0001 while db-repo took it; stopped/);
    assert.ok(ran.some((r) => r.pod === 'db-repo' && /keelson.dev\/reque""st=two /.test(r.script)), 'stopped there');
  });

  it('takes a backup on the standby it is given, follows it there, and says so', async () => {
    const replica = pod('db-0001');
    const { ran, events, repository, last, step, read } = onMembers({ 'db-0000': primary, 'db-0001': replica });
    repository.heldOn.add('db-0001');
    let status: any = await step(last, 'one', primary, standbyOf(replica));
    assert.deepEqual([status.backupRequest.member, status.backupRequest.standbyOf], ['db-0001', 'db-0000']);
    const start = ran.find((r) => r.script.includes('pgbackrest backup'))!;
    assert.equal(start.pod, 'db-0001');
    assert.match(start.script, /pgbackrest backup --type=full --repo1-retention-full=2 --backup-standby --pg2-host=db-0000\./);
    assert.match(events.join('\n'), /started on db-0001, into the object store, from the standby db-0001 copying the data files, the primary db-0000 starting/);
    repository.listed = [{ ...full, annotation: { 'keelson.dev/request': 'one', 'keelson.dev/started': status.backupRequest.startTime } }];
    repository.heldOn.clear();
    status = await step(status, 'one', primary, standbyOf(replica));
    assert.equal(status.backupRequest.phase, 'Completed');
    assert.ok(read().every((r) => r.pod === 'db-0001'));
    // One that ends there without a backup while the cluster is not steady (a failover under way, say) fails: the next
    // is taken on the primary.
    repository.listed = [full];
    const notSteady = (status: any, token: string) => step(status, token, primary, standbyOf(replica), false);
    status = await step(status, 'two', primary, standbyOf(replica));
    status = await notSteady(status, 'two');
    assert.deepEqual([status.backupRequest.token, status.backupRequest.phase, status.backupRequest.member],
      ['two', 'Failed', 'db-0001']);
    const next = await step(status, 'three', primary, standbyOf(replica));
    assert.equal(next.backupRequest?.member, 'db-0000');
  });

  it('takes again on the primary a backup whose standby\'s postgres container ended since it started, though its pod stays', async () => {
    const crashing = pod('db-0001');
    const { repository, last, step } = onMembers({ 'db-0000': primary, 'db-0001': crashing });
    repository.heldOn.add('db-0001');
    let status: any = await step(last, 'one', primary, standbyOf(crashing));
    assert.equal(status.backupRequest.member, 'db-0001');
    const later = new Date(Date.parse(status.backupRequest.startTime) + 5_000).toISOString();
    crashing.status = { conditions: [{ type: 'Ready', status: 'False' }], containerStatuses: [{ name: 'postgres',
      state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, finishedAt: later } } }] };
    status = await step(status, 'one', primary);
    assert.deepEqual([status.backupRequest.phase, status.backupRequest.member], ['Running', 'db-0000']);
    assert.match(status.backupRequest.message, /on the standby db-0001, db-0001, which was taking it, restarted before it finished/);
  });

  it('takes a backup that failed on a standby again at once on the primary, under the same token', async () => {
    const replica = pod('db-0001');
    const { ran, events, repository, last, step } = onMembers({ 'db-0000': primary, 'db-0001': replica });
    let status: any = await step(last, 'before-upgrade', primary, standbyOf(replica));
    assert.equal(status.backupRequest.member, 'db-0001');
    // pgBackRest on the standby ended without a backup (its primary's server did not answer, say).
    status = await step(status, 'before-upgrade', primary, standbyOf(replica));
    assert.deepEqual([status.backupRequest.token, status.backupRequest.phase, status.backupRequest.member,
      status.backupRequest.standbyOf], ['before-upgrade', 'Running', 'db-0000', undefined]);
    assert.match(status.backupRequest.message, /^started again on the primary: on the standby db-0001, pgBackRest ended/);
    const starts = ran.filter((r) => r.script.includes('pgbackrest backup'));
    assert.deepEqual(starts.map((r) => r.pod), ['db-0001', 'db-0000']);
    assert.doesNotMatch(starts[1]!.script, /--backup-standby/);
    assert.match(events.join('\n'), /BackupRetriedOnPrimary: Backup before-upgrade failed on the standby db-0001 \(pgBackRest ended/);
    assert.doesNotMatch(events.join('\n'), /BackupFailed/);
    // Failing on the primary too, it is Failed: it is tried on the primary once, not again and again.
    status = await step(status, 'before-upgrade', primary, standbyOf(replica));
    assert.deepEqual([status.backupRequest.phase, status.backupRequest.member], ['Failed', 'db-0000']);
    assert.equal(ran.filter((r) => r.script.includes('pgbackrest backup')).length, 2);
    assert.equal(repository.listed.length, 0);
  });

  it('follows a backup on a standby that falls behind (not ready) where it runs, never failing it from the primary', async () => {
    const replica = pod('db-0001');
    const { repository, last, step, read } = onMembers({ 'db-0000': primary, 'db-0001': replica });
    repository.heldOn.add('db-0001');
    let status: any = await step(last, 'one', primary, standbyOf(replica));
    replica.status = { conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [{ name: 'postgres', state: { running: {} } }] };
    for (let i = 0; i < 3; i++) status = await step(status, 'one', primary, standbyOf(replica));
    assert.equal(status.backupRequest.phase, 'Running');
    assert.ok(read().every((r) => r.pod === 'db-0001'), 'the primary, which holds no lock of it, was asked');
  });

  it('stops a backup on a standby once another member is the primary, and says Failed', async () => {
    const replica = pod('db-0001');
    const promoted = pod('db-0002');
    const { ran, repository, last, step } = onMembers({ 'db-0000': primary, 'db-0001': replica, 'db-0002': promoted });
    repository.heldOn.add('db-0001');
    let status: any = await step(last, 'one', primary, standbyOf(replica));
    status = await step(status, 'one', promoted, undefined, false);
    assert.equal(status.backupRequest.phase, 'Failed');
    assert.match(status.backupRequest.message, /the primary changed from db-0000 to db-0002 while db-0001 took it/);
    assert.ok(ran.some((r) => r.pod === 'db-0001' && r.script.includes('"keelson.dev/reque""st=one "')));
    // Once the new primary is steady, the one after is taken there.
    status = await step(status, 'two', promoted, { pod: replica, options: '--backup-standby --pg2-host=db-0002.db-members.shop.svc' });
    assert.equal(status.backupRequest.member, 'db-0002');
  });

  it('takes a first backup at once when the store holds none of the cluster, and none while another runs', async () => {
    const { step, started } = harness(() => info({ backup: { held: true } }, []));
    let status: any = {};
    status = await step(status, 'manual');
    assert.equal(status.backupRequest.phase, 'Running');
    assert.equal(status.scheduledBackup, undefined, 'the first backup waits for the running one');
    assert.equal(started().length, 1);
  });

  it('takes a backup once a promotion put the primary on a newer timeline than the last backup\'s', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-26T03:15:10Z') });
    let listed: object[] = [];
    const { step, started } = harness(() => info({ backup: { held: listed.length === 0 } }, listed));
    const onFirst = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full', beginWal: full.archive.start } };
    let status: any = await step(onFirst, undefined, 1);
    assert.equal(started().length, 0);
    status = await step(status, undefined, 2);
    assert.equal(status.scheduledBackup.phase, 'Running');
    const onSecond = { ...full, label: '20261126-031500F', archive: { start: '000000020000000000000007', stop: '000000020000000000000007' },
      annotation: { 'keelson.dev/request': status.scheduledBackup.token, 'keelson.dev/started': status.scheduledBackup.startTime } };
    listed = [full, onSecond];
    status = await step(status, undefined, 2);
    assert.equal(status.lastBackup.beginWal, '000000020000000000000007');
    status = await step(status, undefined, 2);
    // Once per timeline: a status read a minute later, from before the backup's end was written, starts no other.
    t.mock.timers.setTime(Date.parse('2026-11-26T03:16:10Z'));
    await step({ ...onFirst, scheduledBackup: status.scheduledBackup }, undefined, 2);
    assert.equal(started().length, 1);
    assert.match(started()[0]!, /--type=incr /);
  });

  it('takes a full backup once the cluster runs another major version than its last backup\'s, and one asked for',
    async () => {
      const { step, started } = harness(() => info({ backup: { held: true } }, []));
      const last = { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full', beginWal: full.archive.start,
        postgresVersion: '15' };
      await step({ lastBackup: last, currentVersion: '15' });
      assert.equal(started().length, 0);
      const status = await step({ lastBackup: last, currentVersion: '17' });
      assert.equal(status.scheduledBackup.phase, 'Running');
      assert.match(started()[0]!, /--type=full /);
      const other = harness(() => info({ backup: { held: true } }, []));
      const asked = await other.step({ lastBackup: last, currentVersion: '15' }, undefined, undefined, 'before-17');
      assert.equal(asked.scheduledBackup.token, 'before-17');
      assert.match(other.started()[0]!, /--type=full .*keelson.dev\/request=before-17/s);
    });

  it('never takes an older backup of a token asked for again for the one it started', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-26T03:15:40Z') });
    const earlier = { ...full, annotation: { 'keelson.dev/request': 'nightly' } };
    let listed: object[] = [earlier];
    let held = true;
    const { step, started } = harness(() => info({ backup: { held } }, listed));
    // "nightly", then "other", then "nightly" again: a new backup, though the store holds one of that token.
    let status: any = { lastBackup: lastBackupStatus(parseRepositoryInfo(info({}, [earlier])).backups[0]!),
      backupRequest: { token: 'other', phase: 'Completed' } };
    status = await step(status, 'nightly');
    assert.equal(status.backupRequest.phase, 'Running');
    assert.match(started()[0]!, / --annotation=keelson.dev\/started=2026-11-26T03:15:40Z /);
    status = await step(status, 'nightly');
    assert.equal(status.backupRequest.phase, 'Running', 'the older backup of that token is not the one under way');
    listed = [earlier, { ...full, label: '20261126-031540F', annotation: { 'keelson.dev/request': 'nightly',
      'keelson.dev/started': '2026-11-26T03:15:40Z' }, timestamp: { start: 1795662940, stop: 1795662950 } }];
    held = false;
    status = await step(status, 'nightly');
    assert.equal(status.backupRequest.phase, 'Completed');
    assert.equal(status.lastBackup.name, '20261126-031540F');
  });

  it('asks again, later each time, for a backup the cluster needs that failed', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: Date.parse('2026-11-26T03:15:10Z') });
    const { step, started } = harness(() => info({ backup: { held: false } }, []));
    const onFirst = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full', beginWal: full.archive.start } };
    const failedAfter = async (status: any) => {
      for (let i = 0; i < 3 && status.scheduledBackup?.phase !== 'Failed'; i++) {
        t.mock.timers.setTime(Date.now() + 1000);
        status = await step(status, undefined, 2);
      }
      assert.equal(status.scheduledBackup.phase, 'Failed');
      return status;
    };
    let status = await failedAfter(onFirst);
    assert.equal(started().length, 1);
    t.mock.timers.setTime(Date.parse('2026-11-26T03:16:05Z'));
    status = await step(status, undefined, 2);
    assert.equal(started().length, 1, 'not within a minute of the first try');
    t.mock.timers.setTime(Date.parse('2026-11-26T03:16:15Z'));
    status = await failedAfter(await step(status, undefined, 2));
    assert.equal(started().length, 2);
    assert.match(started()[1]!, /--type=incr .*request=scheduled-20261126T0316Z /s);
    t.mock.timers.setTime(Date.parse('2026-11-26T03:17:20Z'));
    status = await step(status, undefined, 2);
    assert.equal(started().length, 2, 'two minutes after the second');
    t.mock.timers.setTime(Date.parse('2026-11-26T03:18:20Z'));
    await step(status, undefined, 2);
    assert.equal(started().length, 3);
  });

  it('says Failed, with the end of pgBackRest\'s log, when the backup ends without reaching the repository', async () => {
    const { step } = harness(() => info({ backup: { held: false } }, []));
    let status: any = { lastBackup: { name: 'old', time: '2026-11-20T00:00:00Z', type: 'full' } };
    status = await step(status, 'doomed');
    status = await step(status, 'doomed');
    status = await step(status, 'doomed');
    assert.equal(status.backupRequest.phase, 'Failed');
    assert.match(status.backupRequest.message, /^pgBackRest ended without a backup/);
  });
});
