// Backups taken from a standby, as pgBackRest takes them: it copies the data files from a streaming replica and asks
// the primary only to start and stop the backup (and for the few files replicas do not have), so a backup no longer
// reads the primary's whole volume while it serves writes. It reaches the primary through pgBackRest's TLS server,
// which each member of a cluster with spec.backup runs beside PostgreSQL (and, with a backup volume, the repository
// host, which reaches the members through theirs: repository-host.ts). Both ends present one certificate,
// from a CA made for this alone (Secret <name>-backup-peer; not the CA clients trust): a server admits only that
// certificate's name, for this cluster's stanza alone, and a client verifies the primary's member address. The CA's
// key is kept nowhere: the pair is made again, CA and all, when due or unreadable, and each server reloads the
// files kubelet brings. The servers hold no key of the object store; the repository host's may write the repository.
import { createPrivateKey } from 'node:crypto';
import { isControlledBy, type Owner } from '../../runtime/objects.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import { podReady, type Pod } from '../../runtime/core.ts';
import { caLifetimeMs, certificatesOf, issueCa, issuePeer, renewalDue } from './certificates.ts';
import { stanzaOf } from './archive.ts';
import type { PostgresClusterResource } from './schema.ts';
import type { TlsDeps } from './tls.ts';
import { forgetUid } from '../../runtime/memos.ts';

type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];

export const backupPeerSecret = (cluster: string) => `${cluster}-backup-peer`;
/** The common name of the certificate a backup presents as a client: the one name the servers admit. */
export const peerClientName = 'keelson-backup';
export const backupServerPort = 8432;
export const backupServerContainerName = 'backup-server';
export const peerDir = '/keelson-backup-peer';

/** Every member's address, however many there are: `<member>.<name>-members.<namespace>.svc`. */
export const peerNames = (cluster: Cluster) =>
  [`*.${cluster.metadata.name}-members.${cluster.metadata.namespace}.svc`];

const decoded = (object: KubeObject | undefined, key: string): string =>
  Buffer.from((object as { data?: Record<string, string> } | undefined)?.data?.[key] ?? '', 'base64').toString('utf8');

/** Why the Secret's pair cannot serve now, or undefined when it can. */
function pairProblem(secret: KubeObject | undefined, cluster: Cluster, now: number): string | undefined {
  if (!secret) return 'missing';
  try {
    const [cert] = certificatesOf(decoded(secret, 'tls.crt'));
    const [ca] = certificatesOf(decoded(secret, 'ca.crt'));
    if (!cert || !ca || !cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return 'not a pair of its CA';
    if (!cert.checkPrivateKey(createPrivateKey(decoded(secret, 'tls.key')))) return 'tls.key is not its key';
    const { name, namespace } = cluster.metadata;
    if (!cert.checkHost(`${name}-0000.${name}-members.${namespace}.svc`)) return 'it does not name the members';
    if (renewalDue(cert, now)) return 'past two thirds of its life';
    return undefined;
  } catch (error) {
    return `unreadable: ${(error as Error).message}`;
  }
}

/** How long a good look at a cluster's Secret stands: one a user deleted is made again within this. */
const lookEveryMs = 60_000;

/** Keeps each cluster's <name>-backup-peer while it has spec.backup. */
export class BackupPeers {
  /** By cluster uid, when its Secret was last found good. */
  private readonly good = new Map<string, number>();

  constructor(private readonly deps: TlsDeps,
    private readonly now: () => number = Date.now) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.good, uid);
  }

  /**
   * Makes the Secret good where it is not: undefined when members can serve and take backups from a standby, else
   * why they cannot.
   */
  async ensure(cluster: Cluster): Promise<string | undefined> {
    const { name, namespace, uid } = cluster.metadata;
    if (this.now() - (this.good.get(uid) ?? -Infinity) < lookEveryMs) return undefined;
    this.good.delete(uid);
    const current = await this.deps.secret(namespace!, backupPeerSecret(name));
    if (current && !isControlledBy(current, cluster)) return `Secret ${backupPeerSecret(name)} is not this cluster's`;
    const problem = pairProblem(current, cluster, this.now());
    if (problem) {
      const ca = await issueCa(`${namespace}/${name} pgBackRest peers`, this.now());
      const peer = await issuePeer(ca, peerClientName, peerNames(cluster), this.now(), caLifetimeMs);
      const data = { 'ca.crt': ca.cert, 'tls.crt': peer.cert, 'tls.key': peer.key };
      if (!(await this.deps.apply(cluster, this.deps.owned(cluster, 'Secret', backupPeerSecret(name), { type: 'Opaque',
        data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) })))) {
        return `Secret ${backupPeerSecret(name)} could not be written`;
      }
      if (current) {
        this.deps.record(cluster, 'Normal', 'BackupPeerCertificateRenewed', `Made the certificate members ` +
          `take backups from a standby with again (${problem}); each member's pgBackRest server restarts on it`);
      }
    }
    this.good.set(uid, this.now());
    return undefined;
  }
}

/**
 * pgBackRest's TLS server: told to reload (SIGHUP, which keeps the sessions of a backup under way) when the
 * certificate files change, started again whenever it ends; never exits itself.
 */
export const backupServerScript = `set -u
files="$PEER_DIR/ca.crt $PEER_DIR/tls.crt $PEER_DIR/tls.key"
stopping=
trap 'stopping=1; [ -z "\${server:-}" ] || kill "$server" 2>/dev/null' TERM INT
while [ -z "$stopping" ]; do
  if [ -s "$PEER_DIR/tls.key" ]; then
    seen=$(cat $files | md5sum)
    pgbackrest server & server=$!
    while [ -z "$stopping" ] && kill -0 "$server" 2>/dev/null; do
      sleep 10 & wait $! || :
      now=$(cat $files 2>/dev/null | md5sum)
      if [ -s "$PEER_DIR/tls.key" ] && [ "$now" != "$seen" ]; then seen=$now; kill -HUP "$server" 2>/dev/null || :; fi
    done
    kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; server=
  fi
  [ -n "$stopping" ] || { sleep 5 & wait $! || :; }
done
`;

/** The volume and mount of <name>-backup-peer, optional: a member pod is made before the Secret if need be. */
export function peerVolume(cluster: Cluster): { volume: object; mount: object } {
  return {
    volume: { name: 'backup-peer', secret: { secretName: backupPeerSecret(cluster.metadata.name), defaultMode: 0o440,
      optional: true } },
    mount: { name: 'backup-peer', mountPath: peerDir, readOnly: true },
  };
}

/** pgBackRest's TLS server settings: the peer certificate, admitting only its name, for this cluster's stanza. */
export function peerServerEnv(cluster: Cluster): object[] {
  const env = (name: string, value: string | number) => ({ name, value: String(value) });
  return [
    env('PEER_DIR', peerDir),
    env('PGBACKREST_TLS_SERVER_ADDRESS', '0.0.0.0'),
    env('PGBACKREST_TLS_SERVER_PORT', backupServerPort),
    env('PGBACKREST_TLS_SERVER_CERT_FILE', `${peerDir}/tls.crt`),
    env('PGBACKREST_TLS_SERVER_KEY_FILE', `${peerDir}/tls.key`),
    env('PGBACKREST_TLS_SERVER_CA_FILE', `${peerDir}/ca.crt`),
    env('PGBACKREST_TLS_SERVER_AUTH', `${peerClientName}=${stanzaOf(cluster)}`),
    env('PGBACKREST_LOG_LEVEL_FILE', 'off'),
    env('PGBACKREST_LOG_LEVEL_CONSOLE', 'warn'),
  ];
}

/**
 * The member's pgBackRest TLS server, a native sidecar beside PostgreSQL: it reads the data directory and reaches
 * PostgreSQL through its socket, and is given no key of the object store.
 */
export function backupServerSidecar(cluster: Cluster, image: string, mounts: object[], securityContext: object): object {
  return {
    name: backupServerContainerName, image, restartPolicy: 'Always', command: ['sh', '-c', backupServerScript],
    env: peerServerEnv(cluster),
    ports: [{ name: 'pgbackrest', containerPort: backupServerPort }],
    volumeMounts: mounts, securityContext: { ...securityContext, readOnlyRootFilesystem: true },
    resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '256Mi' } },
  };
}

const serving = (pod: Pod) => !pod.metadata.deletionTimestamp &&
  (pod.status?.initContainerStatuses ?? []).some((c) => c.name === backupServerContainerName && c.state?.running);

/**
 * Where a backup runs: on a ready replica (one streaming) when backup.target allows it and both it and the primary
 * run the server (members made before they did back up on the primary until made again), else on the primary. A
 * replica no commit waits for (`synchronous`: those one may) comes first: reading its volume through slows no commit.
 */
export function backupSource(spec: Spec, primary: Pod | undefined, replicas: Pod[], peersReady: boolean,
  synchronous: string[] = []): { pod: Pod; standbyOf?: string } | undefined {
  if (!primary) return undefined;
  const waitedFor = (pod: Pod) => (synchronous.includes(pod.metadata.name) ? 1 : 0);
  const standby = spec.backup?.target === 'primary' || !peersReady || !serving(primary) ? undefined
    : replicas.filter((pod) => pod.metadata.name !== primary.metadata.name && podReady(pod) && serving(pod))
      .sort((a, b) => waitedFor(a) - waitedFor(b) || a.metadata.name.localeCompare(b.metadata.name))[0];
  return standby ? { pod: standby, standbyOf: primary.metadata.name } : { pod: primary };
}

/** pgBackRest's options, on a standby, for the primary `primary` as its second PostgreSQL, through its server. */
export function standbyOptions(cluster: Cluster, primary: string, member: { pgdata: string; socketDir: string;
  port: number }): string {
  const { name, namespace } = cluster.metadata;
  return ['--backup-standby', `--pg2-host=${primary}.${name}-members.${namespace}.svc`, '--pg2-host-type=tls',
    `--pg2-host-port=${backupServerPort}`, `--pg2-host-ca-file=${peerDir}/ca.crt`,
    `--pg2-host-cert-file=${peerDir}/tls.crt`, `--pg2-host-key-file=${peerDir}/tls.key`, `--pg2-path=${member.pgdata}`,
    `--pg2-port=${member.port}`, `--pg2-socket-path=${member.socketDir}`, '--pg2-user=postgres'].join(' ');
}
