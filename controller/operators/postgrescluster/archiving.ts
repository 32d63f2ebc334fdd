// Whether a cluster's WAL reaches its archive, as the ContinuousArchiving condition says: pgBackRest's stanza made on
// the primary once (idempotent, so again after a restart of this process or of the primary) and one WAL switch, then
// PostgreSQL's own archiver statistics read at most every archiveCheckMs. A failure shows with the segment it is
// stuck on, and archiving resumes by itself when the store is back: PostgreSQL keeps a segment until it is pushed, so
// none is lost meanwhile.
import type { Condition } from '../../runtime/status.ts';

type Pending = Omit<Condition, 'lastTransitionTime'>;

/** How long a completed segment may wait to be archived before archiving counts as failing: two archive_timeouts. */
export const stalledAfterSeconds = 120;

export interface ArchiverStats {
  /** Completed segments not archived yet, and how long the oldest has waited. */
  waitingCount: number;
  oldestWaitingSeconds?: number;
  archivedCount: number;
  lastArchivedWal?: string;
  lastArchivedTime?: string;
  failedCount: number;
  lastFailedWal?: string;
  lastFailedTime?: string;
  /** The primary's timeline: each promotion starts a new one. */
  timeline: number;
}

/**
 * One line from PostgreSQL: archived_count|last_archived_wal|last_archived_time|failed_count|last_failed_wal|
 * last_failed_time|waiting segments|seconds the oldest has waited|the timeline (hexadecimal, as in WAL file names).
 */
export const archiverQuery = `psql -X -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -d postgres -Atc "SELECT
  archived_count, coalesce(last_archived_wal, ''), coalesce(to_char(last_archived_time AT TIME ZONE 'UTC',
  'YYYY-MM-DD\\"T\\"HH24:MI:SS\\"Z\\"'), ''), failed_count, coalesce(last_failed_wal, ''),
  coalesce(to_char(last_failed_time AT TIME ZONE 'UTC', 'YYYY-MM-DD\\"T\\"HH24:MI:SS\\"Z\\"'), ''),
  (SELECT count(*) || '|' || coalesce(extract(epoch FROM now() - min(modification))::bigint::text, '')
    FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') || '|' ||
  substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) FROM pg_stat_archiver"`;

export const switchWalScript = 'psql -X -v ON_ERROR_STOP=1 -h /var/run/postgresql -U postgres -d postgres -Atc ' +
  '"SELECT pg_switch_wal()"';

export function parseArchiverStats(line: string): ArchiverStats {
  const fields = line.trim().split('|');
  if (fields.length !== 9) throw new Error(`unexpected archiver statistics: "${line.trim()}"`);
  const [archived, lastArchivedWal, lastArchivedTime, failed, lastFailedWal, lastFailedTime, waiting, oldest, timeline] =
    fields;
  const optional = (key: string, value: string | undefined) => (value ? { [key]: value } : {});
  return { timeline: timelineOf(timeline!), waitingCount: Number(waiting),
    ...(oldest ? { oldestWaitingSeconds: Number(oldest) } : {}),
    archivedCount: Number(archived), failedCount: Number(failed), ...optional('lastArchivedWal', lastArchivedWal),
    ...optional('lastArchivedTime', lastArchivedTime), ...optional('lastFailedWal', lastFailedWal),
    ...optional('lastFailedTime', lastFailedTime) };
}

/** The timeline a WAL file name (or its first 8 hexadecimal digits) is on. */
export function timelineOf(walName: string): number {
  if (!/^[0-9A-F]{8}/.test(walName)) throw new Error(`not a WAL file name: "${walName}"`);
  return parseInt(walName.slice(0, 8), 16);
}

/** The condition the statistics make, on `primary`; `since` says where they count from (PostgreSQL resets them at start). */
export function archivingCondition(stats: ArchiverStats, primary: string, generation?: number): Pending {
  const base = { type: 'ContinuousArchiving', ...(generation === undefined ? {} : { observedGeneration: generation }) };
  const failing = stats.lastFailedTime !== undefined &&
    (stats.lastArchivedTime === undefined || stats.lastFailedTime >= stats.lastArchivedTime);
  // A store that takes connections but never answers fails nothing for minutes: what waits says it.
  if (!failing && stats.waitingCount > 0 && (stats.oldestWaitingSeconds ?? 0) >= stalledAfterSeconds) {
    return { ...base, status: 'False', reason: 'ArchiveFailing', message: `${primary} has ${stats.waitingCount} WAL ` +
      `segment${stats.waitingCount === 1 ? '' : 's'} waiting to be archived, the oldest for ` +
      `${stats.oldestWaitingSeconds}s${stats.lastArchivedWal ? `; last archived ${stats.lastArchivedWal} at ` +
        `${stats.lastArchivedTime}` : ''}; PostgreSQL keeps them and retries` };
  }
  if (failing) {
    return { ...base, status: 'False', reason: 'ArchiveFailing', message: `${primary} cannot archive WAL segment ` +
      `${stats.lastFailedWal} (last attempt ${stats.lastFailedTime}, ${stats.failedCount} failed attempts since it ` +
      `started${stats.lastArchivedWal ? `; last archived ${stats.lastArchivedWal} at ${stats.lastArchivedTime}` : ''}); ` +
      'PostgreSQL keeps it and retries' };
  }
  if (stats.lastArchivedWal === undefined) {
    return { ...base, status: 'False', reason: 'NothingArchivedYet', message: `${primary} has archived no WAL segment ` +
      'since it started; one is archived once full, or after archive_timeout' };
  }
  return { ...base, status: 'True', reason: 'Archiving', message: `${primary} archived ${stats.lastArchivedWal} at ` +
    `${stats.lastArchivedTime} (${stats.archivedCount} segments since it started)` };
}
