// Continuous archiving with pgBackRest, the tool Debian packages beside PostgreSQL (Crunchy's operator builds on it
// too), into an S3-compatible object store or into the backup volume through the repository host
// (repository-host.ts): it pushes each WAL segment as PostgreSQL completes it, fetches segments back for a replica
// whose primary no longer has them, keeps base backups and their retention, and restores to a point in time. Members
// are configured through pgBackRest's environment variables, the store's keys read from the user's Secret by the
// kubelet, so no configuration file carries a secret.
import { createHash } from 'node:crypto';
import type { PostgresClusterResource } from './schema.ts';

type Spec = PostgresClusterResource['spec'];
export type ObjectStore = NonNullable<NonNullable<Spec['backup']>['objectStore']>;
interface ClusterName { metadata: { name: string; namespace?: string } }

const caDir = '/etc/keelson/objectstore-ca';
/** How long a quiet primary may keep a WAL segment open: the recovery point of a cluster with few writes. */
export const archiveTimeoutSeconds = 60;

/** The stanza, pgBackRest's name for one PostgreSQL cluster's archive and backups: the cluster's own name. */
export const stanzaOf = (cluster: ClusterName) => cluster.metadata.name;

export const repositoryPath = (cluster: ClusterName, store: ObjectStore) =>
  store.path ?? `/${cluster.metadata.namespace}/${cluster.metadata.name}`;

/** The endpoint's host and port, as pgBackRest takes them (its S3 client speaks HTTPS only). */
export function endpointOf(store: ObjectStore): { host: string; port?: number } {
  const url = new URL(store.endpoint);
  return { host: url.hostname, ...(url.port ? { port: Number(url.port) } : {}) };
}

/**
 * pgBackRest's settings for a member whose data directory is `pgdata`, served on `socketDir` and `port`, archiving
 * into the repository `repository` configures (objectStoreEnv, or repository-host.ts's repositoryHostClientEnv).
 */
export function pgBackRestEnv(cluster: ClusterName, repository: object[],
  member: { pgdata: string; socketDir: string; port: number }): object[] {
  return [
    value('STANZA', stanzaOf(cluster)),
    value('PG1_PATH', member.pgdata),
    value('PG1_PORT', member.port),
    value('PG1_SOCKET_PATH', member.socketDir),
    value('PG1_USER', 'postgres'),
    ...repository,
    value('START_FAST', 'y'),
    // The container's log is the log: nothing written under /var/log, which is not writable.
    value('LOG_LEVEL_FILE', 'off'),
    value('LOG_LEVEL_CONSOLE', 'warn'),
    value('LOCK_PATH', '/tmp/pgbackrest'),
    { name: 'ARCHIVE_TIMEOUT', value: String(archiveTimeoutSeconds) },
  ];
}

const value = (name: string, v: string | number) => ({ name: `PGBACKREST_${name}`, value: String(v) });

/** pgBackRest's settings for the object store: the keys read from the user's Secret by the kubelet. */
export function objectStoreEnv(cluster: ClusterName, store: ObjectStore): object[] {
  const { host, port } = endpointOf(store);
  const key = (name: string, secretKey: string) => ({ name: `PGBACKREST_${name}`,
    valueFrom: { secretKeyRef: { name: store.credentials.name, key: secretKey } } });
  return [
    value('REPO1_TYPE', 's3'),
    value('REPO1_PATH', repositoryPath(cluster, store)),
    value('REPO1_S3_BUCKET', store.bucket),
    value('REPO1_S3_ENDPOINT', host),
    ...(port ? [value('REPO1_STORAGE_PORT', port)] : []),
    value('REPO1_S3_REGION', store.region),
    // Bucket names in the path: an in-cluster store has no DNS name per bucket.
    value('REPO1_S3_URI_STYLE', 'path'),
    key('REPO1_S3_KEY', 'AWS_ACCESS_KEY_ID'),
    key('REPO1_S3_KEY_SECRET', 'AWS_SECRET_ACCESS_KEY'),
    ...(store.ca ? [value('REPO1_STORAGE_CA_FILE', `${caDir}/${store.ca.key}`)] : []),
  ];
}

/** The volume and mount of the store's CA, when the spec names one. */
export function caVolume(store: ObjectStore): { volume: object; mount: object } | undefined {
  if (!store.ca) return undefined;
  return {
    volume: { name: 'objectstore-ca', configMap: { name: store.ca.name, items: [{ key: store.ca.key, path: store.ca.key }] } },
    mount: { name: 'objectstore-ca', mountPath: caDir, readOnly: true },
  };
}

/**
 * What a member's pod is made from besides the version: a member made from other settings is restarted, one at a
 * time, to take them (PostgreSQL reads archive_mode only when it starts). Empty for a cluster that archives nothing
 * (no spec.backup), as pods made before there was archiving are.
 */
export function archiveRevision(cluster: ClusterName, spec: Spec): string {
  if (!spec.backup) return '';
  const store = spec.backup.objectStore;
  return createHash('sha256').update(JSON.stringify(store ? [stanzaOf(cluster), repositoryPath(cluster, store), store]
    : [stanzaOf(cluster), 'repository-host'])).digest('hex').slice(0, 16);
}

type Recovery = NonNullable<NonNullable<Spec['bootstrap']>['recovery']>;

/**
 * An RFC 3339 time (what the CRD takes) as pgBackRest reads one to choose the backup before it, which PostgreSQL
 * reads too: "2026-11-26 02:00:00.5+00", microseconds at most. pgBackRest would ignore a time it cannot read and take
 * the latest backup.
 */
export const pgBackRestTime = (time: string) =>
  time.replace(/[Tt]/, ' ').replace(/(\.\d{6})\d+/, '$1').replace(/[Zz]$/, '+00');

function targetOf(recovery: Recovery): [type: string, target: string] | undefined {
  return recovery.targetTime !== undefined ? ['time', pgBackRestTime(recovery.targetTime)]
    : recovery.targetLSN !== undefined ? ['lsn', recovery.targetLSN]
      : recovery.targetName !== undefined ? ['name', recovery.targetName] : undefined;
}

/** How far a recovery goes, for messages: " up to time ...", or "" for the whole archive. */
export function recoveryTarget(recovery: Recovery): string {
  const target = targetOf(recovery);
  return target ? ` up to ${target[0]} ${target[1]}` : ', all of it';
}

/** What a member with no data recovers from, when the cluster is made by point-in-time recovery. */
export function recoveryEnv(cluster: ClusterName, recovery: Recovery): object[] {
  const target = targetOf(recovery);
  return [
    { name: 'RECOVER_STANZA', value: recovery.source },
    { name: 'RECOVER_PATH', value: recovery.path ?? `/${cluster.metadata.namespace}/${recovery.source}` },
    ...(target ? [{ name: 'RECOVER_TARGET_TYPE', value: target[0] }, { name: 'RECOVER_TARGET', value: target[1] }] : []),
  ];
}
