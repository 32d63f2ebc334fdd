// Base backups into the object store, on request: annotating a PostgresCluster with keelson.dev/backup-request=<token>
// asks for one full backup (a new token, another). pgBackRest takes it on the primary, started there detached, so no
// reconcile waits for it; the backup carries the token as an annotation, and what pgBackRest's repository says of it
// (its WAL range, size, times) becomes status.lastBackup. A backup that ends without reaching the repository is
// reported Failed with the end of its log.
import type { PostgresClusterStatus } from './schema.ts';

export const backupRequestAnnotation = 'keelson.dev/backup-request';
const tokenPattern = /^[-._a-zA-Z0-9]{1,63}$/;
const logDir = '/tmp/pgbackrest';

export interface StoreBackup {
  label: string;
  type: string;
  request?: string;
  startTime: string;
  stopTime: string;
  beginWal: string;
  endWal: string;
  beginLSN?: string;
  endLSN?: string;
  sizeBytes: number;
  repositorySizeBytes: number;
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

/** Starts a full backup for `token` in a session of its own, which outlives the exec, and returns at once. */
export function startBackupScript(token: string): string {
  return `mkdir -p ${logDir}
setsid pgbackrest backup --type=full --annotation=keelson.dev/request=${token} \\
  > ${logDir}/backup-${token}.log 2>&1 < /dev/null &`;
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
  return {
    running: Boolean(lock?.held),
    ...(typeof lock?.['pct-cplt'] === 'number' ? { percentComplete: lock['pct-cplt'] / 100 } : {}),
    backups: (stanza.backup ?? []).map((b: any): StoreBackup => ({
      label: b.label, type: b.type,
      ...(b.annotation?.['keelson.dev/request'] ? { request: b.annotation['keelson.dev/request'] } : {}),
      startTime: iso(b.timestamp.start), stopTime: iso(b.timestamp.stop),
      beginWal: b.archive.start, endWal: b.archive.stop,
      ...(b.lsn ? { beginLSN: b.lsn.start, endLSN: b.lsn.stop } : {}),
      sizeBytes: b.info.size, repositorySizeBytes: b.info.repository.size,
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
  };
}
