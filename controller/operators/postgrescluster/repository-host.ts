// The backup volume as pgBackRest's repository, for a cluster with spec.backup and no object store: pgBackRest's
// "dedicated repository host", as its user guide sets one up, in a pod of its own. A ReadWriteOnce volume can be
// mounted by one pod only where members may run on several nodes, so that pod alone mounts it, and serves it through
// pgBackRest's TLS server: members push and fetch WAL there (repo1-host), and backups run in it, reaching the primary
// (and the standby a backup copies from) through the server each member runs. Both ends present the certificate of
// <name>-backup-peer; the repository host's address is a member address (<name>-repo.<name>-members.<ns>.svc), which
// that certificate names already.
import { createHash } from 'node:crypto';
import type { Owner } from '../../runtime/objects.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import { podReady, type Pod } from '../../runtime/core.ts';
import type { PostgresClusterResource } from './schema.ts';
import { stanzaOf } from './archive.ts';
import { backupServerPort, backupServerScript, peerDir, peerServerEnv, peerVolume } from './standby-backups.ts';

type Cluster = PostgresClusterResource & Owner;

/** Where the repository lives on the backup volume, mounted at /backups. */
export const volumeRepositoryPath = '/backups/pgbackrest';
export const repositoryHostContainer = 'repository';
/** What the repository host's pod was made from: one made otherwise is made again, between backups. */
export const repositoryRevisionAnnotation = 'keelson.dev/repository-revision';

export const repositoryHostName = (cluster: string) => `${cluster}-repo`;
export const repositoryHostAddress = (cluster: { metadata: { name: string; namespace?: string } }) =>
  `${repositoryHostName(cluster.metadata.name)}.${cluster.metadata.name}-members.${cluster.metadata.namespace}.svc`;

/** Whether the repository host's pod serves: Ready, which a node gone unreachable takes away. */
export const repositoryHostServing = (pod: Pod | undefined) => pod !== undefined && !pod.metadata.deletionTimestamp &&
  podReady(pod);

/** pgBackRest's settings, on a member, that reach the repository host. */
export function repositoryHostClientEnv(cluster: Cluster): object[] {
  const value = (name: string, v: string | number) => ({ name: `PGBACKREST_${name}`, value: String(v) });
  return [
    value('REPO1_HOST', repositoryHostAddress(cluster)),
    value('REPO1_HOST_TYPE', 'tls'),
    value('REPO1_HOST_PORT', backupServerPort),
    value('REPO1_HOST_CA_FILE', `${peerDir}/ca.crt`),
    value('REPO1_HOST_CERT_FILE', `${peerDir}/tls.crt`),
    value('REPO1_HOST_KEY_FILE', `${peerDir}/tls.key`),
    value('REPO1_PATH', volumeRepositoryPath),
  ];
}

/**
 * pgBackRest's options, on the repository host, for the members a command reaches: `primary` as pg1, and for a
 * backup from a standby, `standby` as pg2. pgBackRest tells which is which by asking each.
 */
export function memberHostOptions(cluster: Cluster, members: { primary: string; standby?: string },
  layout: { pgdata: string; socketDir: string; port: number }): string {
  const { name, namespace } = cluster.metadata;
  const host = (index: number, member: string) => [`--pg${index}-host=${member}.${name}-members.${namespace}.svc`,
    `--pg${index}-host-type=tls`, `--pg${index}-host-port=${backupServerPort}`,
    `--pg${index}-host-ca-file=${peerDir}/ca.crt`, `--pg${index}-host-cert-file=${peerDir}/tls.crt`,
    `--pg${index}-host-key-file=${peerDir}/tls.key`, `--pg${index}-path=${layout.pgdata}`,
    `--pg${index}-port=${layout.port}`, `--pg${index}-socket-path=${layout.socketDir}`, `--pg${index}-user=postgres`];
  return [...host(1, members.primary), ...members.standby ? [...host(2, members.standby), '--backup-standby'] : []]
    .join(' ');
}

/**
 * The repository host's pod: pgBackRest's TLS server over the backup volume, which members archive to; backups run
 * in it through exec. It reaches no PostgreSQL data but through the members' servers, and keeps no key but the
 * peer certificate's.
 */
export function repositoryHostPod(cluster: Cluster, { metadata, image, claim, security, nodeSelector }: {
  metadata: KubeObject['metadata']; image: string; claim: string; security: { pod: object; container: object };
  nodeSelector?: Record<string, string> }): KubeObject {
  const name = cluster.metadata.name;
  const peer = peerVolume(cluster);
  const env = (key: string, value: string | number) => ({ name: key, value: String(value) });
  const spec = {
    hostname: repositoryHostName(name), subdomain: `${name}-members`,
    automountServiceAccountToken: false, enableServiceLinks: false,
    // The volume's files are the server's: their group is not set again, one by one, at every start.
    securityContext: { ...security.pod, fsGroupChangePolicy: 'OnRootMismatch' },
    containers: [{
      name: repositoryHostContainer, image, command: ['sh', '-c', backupServerScript],
      env: [...peerServerEnv(cluster), env('PGBACKREST_STANZA', stanzaOf(cluster)),
        env('PGBACKREST_REPO1_PATH', volumeRepositoryPath), env('PGBACKREST_LOCK_PATH', '/tmp/pgbackrest'),
        env('PGBACKREST_START_FAST', 'y')],
      ports: [{ name: 'pgbackrest', containerPort: backupServerPort }],
      readinessProbe: { tcpSocket: { port: backupServerPort }, periodSeconds: 5 },
      volumeMounts: [{ name: 'backups', mountPath: '/backups' }, peer.mount, { name: 'tmp', mountPath: '/tmp' }],
      securityContext: { ...security.container, readOnlyRootFilesystem: true },
      resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '512Mi' } },
    }],
    volumes: [{ name: 'backups', persistentVolumeClaim: { claimName: claim } }, peer.volume,
      { name: 'tmp', emptyDir: {} }],
    ...(nodeSelector ? { nodeSelector } : {}),
    terminationGracePeriodSeconds: 30,
  };
  const revision = createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 16);
  return { apiVersion: 'v1', kind: 'Pod',
    metadata: { ...metadata, annotations: { ...metadata.annotations, [repositoryRevisionAnnotation]: revision } }, spec };
}
