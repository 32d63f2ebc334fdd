// Base backups into the cluster's repository (the object store, or the backup volume through the repository host), on
// request and on backup.schedule: annotating a PostgresCluster with keelson.dev/backup-request=<token> asks for one
// full backup (a new token, another). pgBackRest copies the data files from a streaming replica where
// standby-backups.ts finds one, else from the primary; it runs there, or on the repository host, started detached, so
// no reconcile waits for it; the backup carries the token as an annotation, and what pgBackRest's repository says of it
// (its WAL range, size, times) becomes status.lastBackup. A backup that ends without reaching the repository is
// reported Failed with the end of its log.
import { podReady, type Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import { timelineOf } from './archiving.ts';
import { repositoryHostContainer, repositoryHostName } from './repository-host.ts';
import { majorOf } from './plan.ts';
import { parseSchedule, previousFire } from './cron.ts';
import { backupRequestAnnotation, type PostgresClusterResource, type PostgresClusterStatus } from './schema.ts';
import { forgetUid } from '../../runtime/memos.ts';

const tokenPattern = /^[-._a-zA-Z0-9]{1,63}$/;
const logDir = '/tmp/pgbackrest';

export interface StoreBackup {
  label: string;
  type: string;
  request?: string;
  /** When the operator asked for it: the one it follows, of several with a token. */
  started?: string;
  startTime: string;
  stopTime: string;
  beginWal: string;
  endWal: string;
  beginLSN?: string;
  endLSN?: string;
  sizeBytes: number;
  repositorySizeBytes: number;
  /** The PostgreSQL major version it is of. */
  postgresVersion?: string;
}

export interface RepositoryInfo {
  backups: StoreBackup[];
  /** A backup runs: pgBackRest holds its lock. */
  running: boolean;
  percentComplete?: number;
}

/** Why a request token cannot be used, or undefined. */
export function tokenProblem(token: string): string | undefined {
  return tokenPattern.test(token) ? undefined
    : `${backupRequestAnnotation} must be 1-63 letters, digits, '-', '.' or '_', not "${token.slice(0, 80)}"`;
}

/**
 * Starts a full backup for `token` in a session of its own, which outlives the exec, and returns at once; `startedAt`
 * tells it from earlier ones of that token (one asked again, a schedule's minute reused by a promotion). pgBackRest
 * then expires what is past `retain` full backups, or past `retainDays` days (given here, not to the members: a
 * change restarts none).
 */
export function startBackupScript(token: string, startedAt: string,
  { retain, retainDays }: { retain: number; retainDays?: number }, type: 'full' | 'incr' = 'full',
  standbyOptions?: string): string {
  const retention = retainDays === undefined ? `--repo1-retention-full=${retain}`
    : `--repo1-retention-full-type=time --repo1-retention-full=${retainDays}`;
  return `mkdir -p ${logDir}
setsid pgbackrest backup --type=${type} ${retention}${standbyOptions ? ` ${standbyOptions}` : ''} \\
  --annotation=keelson.dev/request=${token} \\
  --annotation=keelson.dev/started=${startedAt} \\
  > ${logDir}/backup-${token}.log 2>&1 < /dev/null &`;
}

/**
 * Ends the backup of `token` this member runs: SIGTERM, which pgBackRest answers by stopping its workers, then
 * SIGKILL after 10 s. The image has no pkill: processes are found by their command line in /proc. (The quotes split
 * the pattern, so that it never matches the shell that runs this.)
 */
export function stopBackupScript(token: string): string {
  return `backups() { for p in /proc/[0-9]*; do
  case "$({ tr '\\0' ' ' < "$p/cmdline"; } 2>/dev/null)" in *"keelson.dev/reque""st=${token} "*) echo "\${p#/proc/}";; esac
done; }
pids=$(backups); [ -z "$pids" ] || kill -TERM $pids 2>/dev/null || :
for i in 1 2 3 4 5 6 7 8 9 10; do pids=$(backups); [ -n "$pids" ] || exit 0; sleep 1; done
kill -KILL $pids 2>/dev/null || :`;
}

export const backupLogScript = (token: string) => `tail -n 5 ${logDir}/backup-${token}.log 2>/dev/null || :`;

export const infoScript = 'timeout 25 pgbackrest info --output=json';

const iso = (seconds: number) => new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');

/** pgBackRest's `info --output=json` for the member's stanza. */
export function parseRepositoryInfo(json: string): RepositoryInfo {
  const stanzas = JSON.parse(json) as any[];
  const stanza = stanzas[0];
  if (!stanza) return { backups: [], running: false };
  const lock = stanza.status?.lock?.backup;
  const versions = new Map<unknown, string>((stanza.db ?? []).map((db: any) => [db.id, String(db.version)]));
  return {
    running: Boolean(lock?.held),
    ...(typeof lock?.['pct-cplt'] === 'number' ? { percentComplete: lock['pct-cplt'] / 100 } : {}),
    backups: (stanza.backup ?? []).map((b: any): StoreBackup => ({
      label: b.label, type: b.type,
      ...(b.annotation?.['keelson.dev/request'] ? { request: b.annotation['keelson.dev/request'] } : {}),
      ...(b.annotation?.['keelson.dev/started'] ? { started: b.annotation['keelson.dev/started'] } : {}),
      startTime: iso(b.timestamp.start), stopTime: iso(b.timestamp.stop),
      beginWal: b.archive.start, endWal: b.archive.stop,
      ...(b.lsn ? { beginLSN: b.lsn.start, endLSN: b.lsn.stop } : {}),
      sizeBytes: b.info.size, repositorySizeBytes: b.info.repository.size,
      ...(versions.has(b.database?.id) ? { postgresVersion: versions.get(b.database.id) } : {}),
    })),
  };
}

/** status.lastBackup for a backup in the store. */
export function lastBackupStatus(backup: StoreBackup): NonNullable<PostgresClusterStatus['lastBackup']> {
  return {
    name: backup.label, time: backup.stopTime, type: backup.type, beginWal: backup.beginWal, endWal: backup.endWal,
    ...(backup.beginLSN ? { beginLSN: backup.beginLSN, endLSN: backup.endLSN } : {}),
    sizeBytes: backup.sizeBytes, repositorySizeBytes: backup.repositorySizeBytes,
    durationSeconds: Math.round((Date.parse(backup.stopTime) - Date.parse(backup.startTime)) / 1000),
    ...(backup.postgresVersion ? { postgresVersion: backup.postgresVersion } : {}),
  };
}

type Slot = 'backupRequest' | 'scheduledBackup';
/**
 * A replica to take a backup from, and pgBackRest's options where the backup runs: on the replica, those that reach
 * the primary; on the repository host, those that reach both.
 */
export interface Standby {
  pod: Pod;
  options: string;
}
/** The repository host (repository-host.ts), where a backup into the backup volume runs, and the options that reach
 * the primary alone from there. */
export interface RepositoryHost {
  pod: Pod;
  options: string;
}
type Tracked = NonNullable<PostgresClusterStatus['backupRequest']>;
type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];

export interface StoreBackupsDeps {
  run(namespace: string, pod: string, script: string, container: string): Promise<string>;
  pod(namespace: string, name: string): Pod | undefined;
  record(cluster: Cluster, type: 'Normal' | 'Warning', reason: string, note: string): void;
}

/** How often a running backup is looked at, and how long one may take to show in pgBackRest's lock. */
const defaultTiming = { checkEveryMs: 5_000, startGraceMs: 30_000 };

/** The container a backup runs in: on the repository host its own, on a member PostgreSQL's. */
const containerOf = (cluster: Cluster, pod: string) =>
  pod === repositoryHostName(cluster.metadata.name) ? repositoryHostContainer : 'postgres';
const running = (pod: Pod, container: string) => podReady(pod) ||
  (pod.status?.containerStatuses ?? []).some((c) => c.name === container && c.state?.running !== undefined);
/**
 * Whether the container the backup ran in ended since it started (`since`, to the second): one crashing again and
 * again keeps its pod and never runs the backup again.
 */
const endedSince = (pod: Pod, container: string, since: string | undefined) => {
  const status = (pod.status?.containerStatuses ?? []).find((c) => c.name === container);
  const after = (time: unknown) => time !== undefined && since !== undefined &&
    Date.parse(String(time)) > Date.parse(since);
  return after(status?.state?.terminated?.finishedAt) || after(status?.lastState?.terminated?.finishedAt);
};
const minuteStamp = (date: Date) => date.toISOString().replace(/[-:]/g, '').slice(0, 13) + 'Z';

/**
 * The token of the scheduled backup due now (scheduled-<UTC minute>), if one is: the schedule's last time, when that
 * is later than the last one taken (or than the cluster's creation). Times missed meanwhile make one backup.
 */
export function dueScheduledToken(schedule: string, last: string | undefined, created: string, now: Date,
  lastStarted?: string): string | undefined {
  const previous = /^scheduled-(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})Z$/.exec(last ?? '');
  // The slot's last backup was the operator's own (one before a major upgrade): it counts from when it started.
  const since = previous ? new Date(`${previous[1]}-${previous[2]}-${previous[3]}T${previous[4]}:${previous[5]}:00Z`)
    : new Date(lastStarted ?? created);
  const fire = previousFire(parseSchedule(schedule), now);
  return fire && fire > since ? `scheduled-${minuteStamp(fire)}` : undefined;
}

/**
 * Backups into the repository, each followed in status by the slot it was asked in: backupRequest for the
 * annotation's, scheduledBackup for the schedule's (missed times are one backup, as for a CronJob that was down). One
 * is started only while the cluster is steady and no other runs; once started it is followed, without waiting, in
 * pgBackRest's repository until it is there or has failed.
 */
export class StoreBackups {
  /** By cluster uid and slot: what is known, on which pod it runs, when last looked at, and the look under way. */
  private readonly checks = new Map<string, { status: Partial<PostgresClusterStatus>; memberUid: string; at: number;
    unseen: number; running?: Promise<void> }>();
  /** By cluster uid: the backup this process last asked for because the cluster needed one, and how often. */
  private readonly asked = new Map<string, { reason: string; token: string; at: number; tries: number }>();

  constructor(private readonly deps: StoreBackupsDeps, private readonly timing = defaultTiming) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.checks, uid);
    forgetUid(this.asked, uid);
  }

  /**
   * What the status should say of the cluster's backups; `timeline`, the primary's, where known; `asked`, the token
   * of a full backup the operator wants now (one before a major upgrade); `standby`, a replica to take a backup on
   * instead of the primary, with the options that reach the primary from there (standby-backups.ts).
   */
  async follow(cluster: Cluster, spec: Spec, steady: boolean, primary: Pod | undefined,
    { timeline, asked, standby, repositoryHost }: { timeline?: number; asked?: string; standby?: Standby;
      repositoryHost?: RepositoryHost } = {}): Promise<Partial<PostgresClusterStatus>> {
    if (!spec.backup) return {};
    // Into the backup volume, a backup runs on the repository host: none starts while it is not there.
    if (!spec.backup.objectStore && !repositoryHost) steady = false;
    let due: string | undefined;
    try {
      due = dueScheduledToken(spec.backup.schedule, cluster.status?.scheduledBackup?.token,
        cluster.metadata.creationTimestamp ?? new Date().toISOString(), new Date(), cluster.status?.scheduledBackup?.startTime);
    } catch (error) {
      const message = `backup.schedule "${spec.backup.schedule}": ${(error as Error).message}`;
      if (cluster.status?.scheduledBackup?.message !== message) {
        this.deps.record(cluster, 'Warning', 'BackupScheduleInvalid', message);
      }
      return { scheduledBackup: { token: cluster.status?.scheduledBackup?.token ?? 'none', phase: 'Failed', message } };
    }
    const need = due === undefined && asked === undefined ? this.neededBackup(cluster, timeline) : undefined;
    const at = { primary, standby, repositoryHost };
    const manual = await this.followSlot(cluster, spec, steady, at, 'backupRequest',
      cluster.metadata.annotations?.[backupRequestAnnotation]);
    const scheduled = await this.followSlot(cluster, spec, steady, at, 'scheduledBackup',
      due ?? asked ?? need?.token, need?.type);
    const before = this.asked.get(cluster.metadata.uid);
    if (need && scheduled.scheduledBackup?.token === need.token && scheduled.scheduledBackup.phase === 'Running' &&
      before?.token !== need.token) {
      this.asked.set(cluster.metadata.uid, { reason: need.reason, token: need.token, at: Date.now(),
        tries: before?.reason === need.reason ? before.tries + 1 : 1 });
    }
    return { ...manual, ...scheduled, ...(manual.lastBackup && scheduled.lastBackup
      ? { lastBackup: [manual.lastBackup, scheduled.lastBackup].sort((a, b) => a.time.localeCompare(b.time))[1] } : {}) };
  }

  /**
   * The backup the cluster needs now, if any. A cluster whose store holds no backup of it takes one at once: a
   * recovery needs one to start from. So does one promoted onto a new timeline since its last backup: the segments
   * its old primary completed but had not pushed when it was lost are in no archive, and a recovery could not replay
   * past them. That one is incremental (what a recovery replays starts at it, in the new timeline), so that
   * switchovers do not cycle full backups out. So does one upgraded to another major version: its backups of the
   * old one restore only that (a full one). Each is asked once; one that failed, again after 1, 2, 4 ... 60 minutes.
   */
  private neededBackup(cluster: Cluster, timeline: number | undefined):
  { reason: string; token: string; type: 'full' | 'incr' } | undefined {
    const last = cluster.status?.lastBackup;
    const running = cluster.status?.currentVersion;
    const reason = last?.type === undefined ? 'first'
      : last.postgresVersion !== undefined && running !== undefined && majorOf(last.postgresVersion) !== majorOf(running)
        ? `PostgreSQL ${majorOf(running)}`
        : last.beginWal !== undefined && timeline !== undefined && timelineOf(last.beginWal) < timeline ? `timeline ${timeline}`
          : undefined;
    if (!reason) return undefined;
    const asked = this.asked.get(cluster.metadata.uid);
    if (asked?.reason === reason) {
      const slot = this.tracked(cluster, 'scheduledBackup');
      const failed = slot?.token === asked.token && slot.phase === 'Failed';
      if (!failed || Date.now() - asked.at < Math.min(60_000 * 2 ** (asked.tries - 1), 3_600_000)) return undefined;
    }
    return { reason, token: `scheduled-${minuteStamp(new Date())}`, type: reason.startsWith('timeline') ? 'incr' : 'full' };
  }

  /**
   * Starts pgBackRest for `token` on the repository host, if there is one, else on the standby given, else on the
   * primary, copying from the standby given, else from the primary; and says so in an Event.
   */
  private async begin(cluster: Cluster, spec: Spec, slot: Slot, token: string, type: 'full' | 'incr', primary: Pod,
    standby?: Standby, repositoryHost?: RepositoryHost):
    Promise<{ status: Partial<PostgresClusterStatus>; memberUid: string }> {
    const on = repositoryHost?.pod ?? standby?.pod ?? primary;
    const startTime = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await this.deps.run(cluster.metadata.namespace!, on.metadata.name,
      startBackupScript(token, startTime, spec.backup!, type, standby?.options ?? repositoryHost?.options),
      containerOf(cluster, on.metadata.name));
    const from = standby ? `the standby ${standby.pod.metadata.name} copying the data files, the primary ` +
      `${primary.metadata.name} starting and stopping it` : `the primary ${primary.metadata.name}`;
    this.deps.record(cluster, 'Normal', 'BackupStarted', `${type === 'full' ? 'Full' : 'Incremental'} backup ` +
      `${token} started on ${on.metadata.name}, into ${spec.backup!.objectStore ? 'the object store' : 'the backup ' +
      'volume'}, from ${from}`);
    return { memberUid: on.metadata.uid!, status: { [slot]: { token, phase: 'Running' as const, member: on.metadata.name,
      ...standby ? { standbyOf: primary.metadata.name } : repositoryHost ? { primary: primary.metadata.name } : {},
      startTime, message: 'started' } } };
  }

  /** Whether a backup runs on the pod `pod`, as this process last found it, else as the status says. */
  runsOn(cluster: Cluster, pod: string): boolean {
    return (['backupRequest', 'scheduledBackup'] as const).some((slot) => {
      const tracked = this.tracked(cluster, slot);
      return tracked?.phase === 'Running' && tracked.member === pod;
    });
  }

  /** What the slot is known to be: as this process last found it, else as the status says. */
  private tracked(cluster: Cluster, slot: Slot): Tracked | undefined {
    return this.checks.get(`${cluster.metadata.uid}/${slot}`)?.status[slot] ?? cluster.status?.[slot];
  }

  private async followSlot(cluster: Cluster, spec: Spec, steady: boolean,
    { primary, standby, repositoryHost }: { primary: Pod | undefined; standby?: Standby; repositoryHost?: RepositoryHost },
    slot: Slot,
    wanted: string | undefined, type: 'full' | 'incr' = 'full'): Promise<Partial<PostgresClusterStatus>> {
    const key = `${cluster.metadata.uid}/${slot}`;
    const request = this.tracked(cluster, slot);
    // A backup under way is followed to its end, whatever is asked meanwhile (an annotation removed, a newer time),
    // and its end written.
    const token = request?.phase === 'Running' ? request.token : wanted ?? request?.token;
    if (!token) return {};
    const ns = cluster.metadata.namespace!;
    const event = (type: 'Normal' | 'Warning', reason: string, note: string) =>
      this.deps.record(cluster, type, reason, note);
    if (request?.token !== token) {
      const problem = tokenProblem(token);
      if (problem) {
        if (request?.message !== problem) event('Warning', 'BackupRequestInvalid', problem);
        return { [slot]: { token: token.slice(0, 63), phase: 'Failed', message: problem } };
      }
      const busy = this.tracked(cluster, 'backupRequest')?.phase === 'Running' ||
        this.tracked(cluster, 'scheduledBackup')?.phase === 'Running';
      if (!steady || busy || !primary || !podReady(primary)) return {};
      // One that failed on a standby, and could not be taken again at once on the primary, is taken next there: a
      // standby that cannot serve one (too far behind to reach its start, say) never leaves the cluster without backups.
      const failedOnStandby = request?.phase === 'Failed' && request.standbyOf !== undefined;
      const on = standby && podReady(standby.pod) && !failedOnStandby ? standby : undefined;
      const started = await this.begin(cluster, spec, slot, token, type, primary, on, repositoryHost);
      this.checks.set(key, { ...started, at: performance.now(), unseen: 0 });
      return started.status;
    }
    const check = this.checks.get(key);
    if (request.phase !== 'Running') {
      if (check && cluster.status?.[slot]?.phase === request.phase) this.checks.delete(key);
      return check?.status ?? {};
    }
    const entry = check ?? { status: { [slot]: request }, memberUid: '', at: 0, unseen: 0 };
    this.checks.set(key, entry);
    if (entry.running || performance.now() - entry.at < this.timing.checkEveryMs) return entry.status;
    entry.at = performance.now();
    const member = request.member!;
    const container = containerOf(cluster, member);
    const pod = this.deps.pod(ns, member);
    // The backup runs in the process that started it: a member restarted since has lost it.
    const restarted = !pod || pod.metadata.deletionTimestamp !== undefined ||
      (entry.memberUid !== '' && pod.metadata.uid !== entry.memberUid) || endedSince(pod, container, request.startTime);
    // pgBackRest's lock is the member's own: only there does "not running" mean it ended. A member that is not
    // ready (a standby behind while it copies, say) still runs it, and is read all the same.
    const onMember = !restarted && running(pod, container);
    const reader = onMember ? member : primary && podReady(primary) ? primary.metadata.name : undefined;
    if (!reader) return entry.status;
    // Taken on a standby or the repository host, it reaches the primary it started on: once another is, it cannot
    // finish; stopped there, so that it never runs beside the next one (pgBackRest's lock is per host).
    const startedOn = request.standbyOf ?? request.primary;
    const failedOver = startedOn !== undefined && primary !== undefined && primary.metadata.name !== startedOn;
    entry.running = (async () => {
      const ended = (phase: 'Completed' | 'Failed', message: string, extra: Partial<PostgresClusterStatus> = {}) => {
        entry.status = { ...extra, [slot]: { ...request, phase, message } };
        return event(phase === 'Completed' ? 'Normal' : 'Warning', `Backup${phase}`, `Backup ${token}: ${message}`);
      };
      // One that failed on a standby is taken again at once on the primary, if the cluster is steady: a backup asked
      // for (the one before a major upgrade among them) does not fail for want of a standby.
      const failed = async (why: string) => {
        if (request.standbyOf === undefined || !steady || !primary || !podReady(primary) ||
          (!spec.backup!.objectStore && !repositoryHost)) return ended('Failed', why);
        event('Warning', 'BackupRetriedOnPrimary', `Backup ${token} failed on the standby ${member} (${why}); ` +
          `taken again on the primary ${primary.metadata.name}`);
        Object.assign(entry, await this.begin(cluster, spec, slot, token, type, primary, undefined, repositoryHost),
          { at: performance.now(),
          unseen: 0 });
        entry.status[slot]!.message = `started again on the primary: on the standby ${member}, ${why}`.slice(0, 2000);
      };
      try {
        const info = parseRepositoryInfo(await this.deps.run(ns, reader, infoScript, containerOf(cluster, reader)));
        // Its own backup, not an older one of that token (one from before backups were marked: begun after it was
        // asked).
        const found = info.backups.filter((b) => b.request === token && (b.started === undefined
          ? Date.parse(b.startTime) >= Date.parse(request.startTime ?? '') : b.started === request.startTime)).at(-1);
        // pgBackRest writes a backup into the repository's list a moment before it lets go of its lock: seen
        // neither listed nor locked twice running, it has ended without a backup.
        entry.unseen = found || info.running ? 0 : entry.unseen + 1;
        // Listed, it still holds the lock while it expires what retention lets go: the next one waits for that.
        if (found && info.running && onMember) {
          entry.status = { [slot]: { ...request, message: `${found.label} in the repository; expiring older backups` } };
        } else if (found) {
          await ended('Completed', `${found.label} in the repository`, { lastBackup: lastBackupStatus(found) });
        } else if (failedOver && onMember) {
          await this.deps.run(ns, member, stopBackupScript(token), container);
          await failed(`the primary changed from ${startedOn} to ${primary!.metadata.name} while ${member} ` +
            `took it; stopped`);
        } else if (restarted) {
          await failed(`${member}, which was taking it, restarted before it finished`);
        } else if (!onMember) {
          entry.status = { [slot]: { ...request, message: `${member} cannot be read; waiting for it` } };
        } else if (info.running) {
          entry.status = { [slot]: { ...request, message: info.percentComplete === undefined ? 'running'
            : `${Math.floor(info.percentComplete)}% copied` } };
        } else if (entry.unseen >= 2 && Date.now() - Date.parse(request.startTime ?? '') > this.timing.startGraceMs) {
          const log = (await this.deps.run(ns, member, backupLogScript(token), container)).trim();
          await failed(`pgBackRest ended without a backup: ${log.slice(-1500) || 'no log'}`);
        }
      } catch (error) {
        entry.status = { [slot]: { ...request, message: `cannot read the repository: ${(error as Error).message.slice(0, 500)}` } };
      } finally {
        delete entry.running;
      }
    })();
    return entry.status;
  }
}
