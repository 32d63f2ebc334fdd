// The objects a PostgresCluster owns, as they should be: per member a Pod and a PersistentVolumeClaim; the Secret of
// generated credentials; the ConfigMap of member scripts; Services for writes (the primary), reads (the replicas) and
// member addresses; the Lease naming the primary, and the member agents' ServiceAccount and Role that may renew only
// it; and, with spec.backup, the backup volume and the CronJob that fills it. What holds data (member volumes, and
// the Secret and Lease that go with them) is controlled by the cluster only when its retention policy says Delete;
// the backup volume never is.
import { randomBytes } from 'node:crypto';
import { controllerReference, type Owner } from '../../runtime/objects.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import { microTime } from '../../runtime/leader.ts';
import { agentPermissions } from './permissions.ts';
import { failsafePort, fenceAfterMs, metricsPort, leaseDurationMs, slotName, type Role } from './plan.ts';
import { memberScript, readyScript } from './scripts.ts';
import { collectOldServerScript, majorUpgradeScript, oldServerDir } from './upgrade-scripts.ts';
import { configurationFiles, configurationHash, configurationAnnotation, type PostgresqlConfiguration }
  from './configuration.ts';
import { archiveRevision, caVolume, objectStoreEnv, pgBackRestEnv, recoveryEnv, repositoryPath } from './archive.ts';
import { repositoryHostClientEnv, repositoryHostName, repositoryHostPod, volumeRepositoryPath } from './repository-host.ts';
import type { PostgresClusterResource } from './schema.ts';
import { tlsNames } from './tls.ts';
import { backupServerSidecar, peerVolume } from './standby-backups.ts';
import { discoveryLabel, podMonitorOf } from '../pod-monitor.ts';

type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];

export const port = 5432;
export const clusterLabel = 'keelson.dev/postgrescluster';
export const memberLabel = 'keelson.dev/member';
export const roleLabel = 'keelson.dev/role';
export const versionAnnotation = 'keelson.dev/postgres-version';
/** What else a member was made from (archive.ts's archiveRevision), where that is anything. */
export const revisionAnnotation = 'keelson.dev/member-revision';
/** How a member verifies its primary (PRIMARY_SSLMODE); absent on a member made before members served TLS. */
export const tlsAnnotation = 'keelson.dev/tls';
export type ReplicationSslMode = 'verify-full' | 'prefer';
const postgresUid = 999;
const scriptsDir = '/keelson';
const configurationDir = '/keelson-configuration';
const pgdata = '/var/lib/postgresql/data/pgdata';
const socketDir = '/var/run/postgresql';
/** Where every member keeps its data and serves PostgreSQL, as pgBackRest is told. */
export const memberLayout = { pgdata, socketDir, port };
const tlsSourceDir = '/keelson-tls';
const tlsDir = '/var/run/keelson-tls';

export const names = {
  credentials: (cluster: string) => `${cluster}-credentials`,
  scripts: (cluster: string) => `${cluster}-scripts`,
  configuration: (cluster: string) => `${cluster}-configuration`,
  readWrite: (cluster: string) => cluster,
  readOnly: (cluster: string) => `${cluster}-ro`,
  members: (cluster: string) => `${cluster}-members`,
  backups: (cluster: string) => `${cluster}-backups`,
  lease: (cluster: string) => `${cluster}-primary`,
  agent: (cluster: string) => `${cluster}-member`,
  majorUpgrade: (cluster: string) => `${cluster}-major-upgrade`,
  replicasBudget: (cluster: string) => cluster,
  primaryBudget: (cluster: string) => `${cluster}-primary`,
};
const roleFile = `${socketDir}/keelson-role`;
/** Where the operator's image keeps the bundled agent (images/bundle.ts; the Dockerfile's WORKDIR is /app). */
export const agentCommand = ['node', '/app/build/controller/bundle/agent-main.js'];

/** The scripts pods start with, as files in the ConfigMap (the short ones run through exec, as text). */
export const scriptFiles = { 'member.sh': memberScript, 'ready.sh': readyScript,
  'upgrade.sh': majorUpgradeScript, 'collect-old-server.sh': collectOldServerScript };
export const scriptCommand = (file: keyof typeof scriptFiles) => ['sh', `${scriptsDir}/${file}`];

export function metadata(cluster: Cluster, name: string, labels: Record<string, string> = {}, controlled = true) {
  return { name, namespace: cluster.metadata.namespace, labels: { 'app.kubernetes.io/name': 'postgres',
    'app.kubernetes.io/managed-by': 'keelson', [clusterLabel]: cluster.metadata.name, ...labels },
  ...(controlled ? { ownerReferences: [controllerReference(cluster)] } : {}) };
}

/** Whether the cluster controls (and so deletes with it) its member volumes, and the Secret and Lease they need. */
export const deletesData = (spec: Spec) => spec.persistentVolumeClaimRetentionPolicy.whenDeleted === 'Delete';

const units: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, Ki: 2 ** 10, Mi: 2 ** 20,
  Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50 };

/** The bytes a storage quantity ("1Gi", "500M", 1073741824) stands for. */
export function bytesOf(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)([kMGTP]i?)?$/.exec(String(quantity).trim());
  const unit = units[match?.[2] ?? ''];
  if (!match || unit === undefined) throw new Error(`not a storage quantity: "${quantity}"`);
  return Number(match[1]) * unit;
}

/**
 * How much WAL a member's volume holds for others, in PostgreSQL's MB: an eighth kept whatever the slots say (what a
 * replica needs just after a failover, before its slot is made), and a quarter at most for one slot, past which the
 * slot is given up (its replica is cloned afresh) rather than the volume filled.
 */
export function walRetention(size: string | number): { walKeepSize: string; maxSlotWalKeepSize: string } {
  const mb = bytesOf(size) / 2 ** 20;
  const at = (share: number) => `${Math.max(32, Math.floor(mb * share))}MB`;
  return { walKeepSize: at(1 / 8), maxSlotWalKeepSize: at(1 / 4) };
}

/** Where members and backups reach the primary: the full name, which a certificate of the user's names too. */
const primaryHost = (cluster: Cluster) => `${names.readWrite(cluster.metadata.name)}.${cluster.metadata.namespace}.svc`;

export function imageOf(spec: Spec): string {
  return spec.image ?? `postgres:${spec.version}`;
}

/** Random passwords of letters and digits (they are quoted into SQL and conninfo strings). */
export function credentials(cluster: Cluster, spec: Spec, passwords = { postgres: password(), replication: password() }):
KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
    metadata: metadata(cluster, names.credentials(cluster.metadata.name), {}, deletesData(spec)),
    stringData: { 'postgres-password': passwords.postgres, 'replication-password': passwords.replication } };
}

function password(): string {
  return randomBytes(32).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, 32);
}

export function scripts(cluster: Cluster): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(cluster, names.scripts(cluster.metadata.name)),
    data: scriptFiles };
}

/** spec.postgresql as a member last accepted it, which members read as they start (configuration.ts). */
export function configurationMap(cluster: Cluster, config: PostgresqlConfiguration | undefined): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...metadata(cluster, names.configuration(cluster.metadata.name)),
    annotations: { [configurationAnnotation]: configurationHash(config) } }, data: configurationFiles(config) };
}

export function services(cluster: Cluster): KubeObject[] {
  const name = cluster.metadata.name;
  const service = (serviceName: string, selector: Record<string, string>, extra: object = {}) => ({
    apiVersion: 'v1', kind: 'Service', metadata: metadata(cluster, serviceName),
    spec: { selector: { [clusterLabel]: name, ...selector }, ports: [{ name: 'postgres', port, targetPort: port }], ...extra },
  });
  return [
    service(names.readWrite(name), { [roleLabel]: 'primary' }),
    service(names.readOnly(name), { [roleLabel]: 'replica' }),
    service(names.members(name), {}, { clusterIP: 'None', publishNotReadyAddresses: true }),
  ];
}

/**
 * The PodDisruptionBudgets of the members, apart by role: the eviction API refuses a pod two budgets select.
 * Replicas go one at a time, none while another is not ready (a primary's synchronous standby, say), and none while
 * the primary is not ready (they are what a failover promotes). The primary goes only once it is a replica, when the
 * operator watches for drains: a drain cordons its node first, and the operator switches over to a replica on another
 * node (plan.ts). A lone member has nowhere to switch over to, so nothing holds up its eviction; nor does anything
 * hold up the eviction of a primary that is not ready, which a failover replaces anyway. Counts of members, not
 * maxUnavailable: the disruption controller would look for a scale subresource of the pods' owner, which a
 * PostgresCluster does not have.
 */
export function disruptionBudgets(cluster: Cluster, spec: Spec, { primaryReady, switchoverOnDrain }:
{ primaryReady: boolean; switchoverOnDrain: boolean }): KubeObject[] {
  const budget = (name: string, role: Role, minAvailable: number, unhealthyPodEvictionPolicy: string) => ({
    apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: metadata(cluster, name),
    spec: { minAvailable, unhealthyPodEvictionPolicy, selector: { matchLabels: { [clusterLabel]: cluster.metadata.name,
      [roleLabel]: role }, matchExpressions: [{ key: memberLabel, operator: 'Exists' }] } },
  });
  const replicas = Math.max(spec.size - 1, 0);
  return [budget(names.replicasBudget(cluster.metadata.name), 'replica', primaryReady ? Math.max(replicas - 1, 0) : replicas,
    'IfHealthyBudget'),
  budget(names.primaryBudget(cluster.metadata.name), 'primary', spec.size > 1 && switchoverOnDrain ? 1 : 0, 'AlwaysAllow')];
}

/** The Lease naming the primary; the operator makes it with the seed and moves it only to promote another member. */
export function lease(cluster: Cluster, spec: Spec, holder: string): KubeObject {
  const now = microTime();
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease',
    metadata: metadata(cluster, names.lease(cluster.metadata.name), {}, deletesData(spec)),
    spec: { holderIdentity: holder, leaseDurationSeconds: leaseDurationMs / 1000, acquireTime: now, renewTime: now,
      leaseTransitions: 0 } };
}

/** The member agents' identity: a ServiceAccount whose Role reads and renews this cluster's Lease and nothing else. */
export function agentIdentity(cluster: Cluster): { serviceAccount: KubeObject; role: KubeObject; roleBinding: KubeObject } {
  const name = names.agent(cluster.metadata.name);
  const rbac = 'rbac.authorization.k8s.io';
  return {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: metadata(cluster, name), automountServiceAccountToken: false },
    role: { apiVersion: `${rbac}/v1`, kind: 'Role', metadata: metadata(cluster, name), rules: agentPermissions.map((p) => ({
      apiGroups: [p.group], resources: [p.resource], verbs: p.verbs, resourceNames: [names.lease(cluster.metadata.name)] })) },
    roleBinding: { apiVersion: `${rbac}/v1`, kind: 'RoleBinding', metadata: metadata(cluster, name),
      roleRef: { apiGroup: rbac, kind: 'Role', name }, subjects: [{ kind: 'ServiceAccount', name, namespace: cluster.metadata.namespace }] },
  };
}

function claim(cluster: Cluster, spec: Spec, name: string, labels: Record<string, string>, controlled: boolean): KubeObject {
  return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: metadata(cluster, name, labels, controlled),
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: String(spec.storage.size) } },
      ...(spec.storage.storageClassName ? { storageClassName: spec.storage.storageClassName } : {}) } };
}

export const memberLabels = (member: string) => ({ [memberLabel]: member });
/**
 * On the claim of a seed made from a backup or an archive, until it first serves as the primary: a pod made again
 * for it meanwhile restores too, rather than stop as a member with no data would once the cluster's data exists.
 */
export const restoringAnnotation = 'keelson.dev/restoring';
export function memberClaim(cluster: Cluster, spec: Spec, member: string, restoring = false): KubeObject {
  const made = claim(cluster, spec, member, memberLabels(member), deletesData(spec));
  return restoring ? { ...made, metadata: { ...made.metadata, annotations: { [restoringAnnotation]: 'true' } } } : made;
}
/** The backup volume's claim; made at storage.size, and never grown with the members' (`made`: the size it has). */
export const backupClaim = (cluster: Cluster, spec: Spec, made?: string) => claim(cluster,
  made ? { ...spec, storage: { ...spec.storage, size: made } } : spec, names.backups(cluster.metadata.name), {}, false);

const secretEnv = (cluster: string) => [
  { name: 'POSTGRES_PASSWORD', valueFrom: { secretKeyRef: { name: names.credentials(cluster), key: 'postgres-password' } } },
  { name: 'REPLICATION_PASSWORD', valueFrom: { secretKeyRef: { name: names.credentials(cluster), key: 'replication-password' } } },
];

const podSecurity = { runAsUser: postgresUid, runAsGroup: postgresUid, fsGroup: postgresUid, runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' } };
const hardened = {
  runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

export interface MemberOptions {
  role: Role;
  /** The operator's image, which runs the member agent. */
  agentImage: string;
  /** How it verifies its primary: verify-full, unless the primary of now serves no TLS yet. */
  replicationSslMode: ReplicationSslMode;
  /**
   * A seed made when the cluster's data exists elsewhere: restored from `restoreFrom`'s backup volume, or, with an
   * object store, recovered from the cluster's own archive.
   */
  restoreFrom?: { cluster: string; backup?: string };
}

/**
 * The member agent as a native sidecar (it starts before PostgreSQL and stops after it), sharing only the run
 * directory with PostgreSQL's container (the role file, and the socket it reads statistics through; no process
 * namespace: nothing there can reach into the agent), and the only container given the ServiceAccount's token.
 */
function agentSidecar(cluster: Cluster, image: string): { container: object; volume: object } {
  const tokenPath = '/var/run/secrets/kubernetes.io/serviceaccount';
  return {
    container: {
      name: 'agent', image, imagePullPolicy: 'IfNotPresent', restartPolicy: 'Always', command: agentCommand,
      env: [
        { name: 'MEMBER', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'LEASE', value: names.lease(cluster.metadata.name) },
        { name: 'ROLE_FILE', value: roleFile },
        { name: 'SOCKET_DIR', value: socketDir },
        { name: 'PGPORT', value: String(port) },
        { name: 'NODE_ENV', value: 'production' },
      ],
      ports: [{ name: 'failsafe', containerPort: failsafePort }, { name: 'metrics', containerPort: metricsPort }],
      volumeMounts: [{ name: 'run', mountPath: socketDir },
        { name: 'agent-token', mountPath: tokenPath, readOnly: true }],
      securityContext: { ...hardened, readOnlyRootFilesystem: true },
      resources: { requests: { cpu: '10m', memory: '48Mi' }, limits: { memory: '128Mi' } },
    },
    volume: { name: 'agent-token', projected: { sources: [
      { serviceAccountToken: { path: 'token', expirationSeconds: 3600 } },
      { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
      { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
    ] } },
  };
}

/**
 * Adds to a PostgreSQL container what pgBackRest needs to reach the cluster's repository: the object store's settings
 * and CA, or the repository host's address (the peer certificate it admits is every member's: memberPod).
 */
function withRepository(cluster: Cluster, backup: NonNullable<Spec['backup']>, socketDir: string,
  into: { env: object[]; volumes: object[]; mounts: object[] }): void {
  const store = backup.objectStore;
  into.env.push(...pgBackRestEnv(cluster, store ? objectStoreEnv(cluster, store) : repositoryHostClientEnv(cluster),
    { pgdata, socketDir, port }));
  const ca = store && caVolume(store);
  if (ca) {
    into.volumes.push(ca.volume);
    into.mounts.push(ca.mount);
  }
}

const repositoryHostLabels = { 'app.kubernetes.io/component': 'repository-host' };
/** The repository host's pod (repository-host.ts), on the backup volume, of the image the primary runs. */
export const repositoryHost = (cluster: Cluster, spec: Spec, image: string) => repositoryHostPod(cluster, {
  metadata: metadata(cluster, repositoryHostName(cluster.metadata.name), repositoryHostLabels),
  image, claim: names.backups(cluster.metadata.name), security: { pod: podSecurity, container: hardened },
  ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}) });

export function memberPod(cluster: Cluster, spec: Spec, member: string,
  { role, agentImage, restoreFrom, replicationSslMode }: MemberOptions): KubeObject {
  const bootstrapped = cluster.status?.bootstrapped === true;
  const name = cluster.metadata.name;
  const volumes: object[] = [
    { name: 'data', persistentVolumeClaim: { claimName: member } },
    { name: 'scripts', configMap: { name: names.scripts(name) } },
    { name: 'configuration', configMap: { name: names.configuration(name), optional: true } },
    { name: 'run', emptyDir: {} },
    { name: 'tmp', emptyDir: {} },
    { name: 'tls-source', secret: { secretName: tlsNames.server(name), defaultMode: 0o440 } },
    // The key PostgreSQL reads is a copy of its own (scripts.ts), in memory, in no other container.
    { name: 'tls', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
  ];
  const agent = agentSidecar(cluster, agentImage);
  volumes.push(agent.volume);
  const retention = walRetention(spec.storage.size);
  const mounts: object[] = [
    { name: 'data', mountPath: '/var/lib/postgresql/data' },
    { name: 'scripts', mountPath: scriptsDir, readOnly: true },
    { name: 'configuration', mountPath: configurationDir, readOnly: true },
    { name: 'run', mountPath: socketDir },
    { name: 'tmp', mountPath: '/tmp' },
    { name: 'tls-source', mountPath: tlsSourceDir, readOnly: true },
    { name: 'tls', mountPath: tlsDir },
  ];
  const env: object[] = [
    { name: 'PGDATA', value: pgdata },
    { name: 'PGPORT', value: String(port) },
    { name: 'CONFIG_DIR', value: configurationDir },
    { name: 'MEMBER_ROLE', value: role },
    { name: 'ROLE_FILE', value: roleFile },
    { name: 'FENCE_AFTER', value: String(fenceAfterMs / 1000) },
    { name: 'PRIMARY_HOST', value: primaryHost(cluster) },
    { name: 'PRIMARY_SSLMODE', value: replicationSslMode },
    { name: 'TLS_SOURCE', value: tlsSourceDir },
    { name: 'TLS_DIR', value: tlsDir },
    { name: 'PRIMARY_PORT', value: String(port) },
    { name: 'REPLICATION_SLOT', value: slotName(member) },
    { name: 'WAL_KEEP_SIZE', value: retention.walKeepSize },
    { name: 'MAX_SLOT_WAL_KEEP_SIZE', value: retention.maxSlotWalKeepSize },
    ...secretEnv(name),
  ];
  const backup = spec.backup;
  const sidecars = [agent.container];
  if (backup) {
    withRepository(cluster, backup, socketDir, { env, volumes, mounts });
    const peer = peerVolume(cluster);
    volumes.push(peer.volume);
    mounts.push(peer.mount);
    sidecars.push(backupServerSidecar(cluster, imageOf(spec), [peer.mount,
      { name: 'data', mountPath: '/var/lib/postgresql/data', readOnly: true },
      // PostgreSQL's /tmp, where pgBackRest keeps its locks: the remote of a backup from a standby holds the backup
      // lock that a backup on this member would take, so the two never run at once.
      { name: 'run', mountPath: socketDir, readOnly: true }, { name: 'tmp', mountPath: '/tmp' }],
    hardened));
  }
  // Once the cluster's data exists, a member to be the primary with no data never runs initdb: the seed made
  // again after every member was lost restores (restoreFrom); any other stops, and a replica is promoted instead.
  if (bootstrapped && !restoreFrom) env.push({ name: 'BOOTSTRAPPED', value: 'true' });
  // The seed recovers: from bootstrap.recovery's archive; made again, from the cluster's own, all of it.
  const recovery = !bootstrapped ? spec.bootstrap?.recovery : restoreFrom?.cluster === name && backup &&
    { source: name, path: backup.objectStore ? repositoryPath(cluster, backup.objectStore) : volumeRepositoryPath };
  if (recovery) {
    env.push(...recoveryEnv(cluster, recovery));
  } else if (restoreFrom) {
    // Another cluster's backup volume, read where it lies: its repository, with no repository host between.
    volumes.push({ name: 'backups', persistentVolumeClaim: { claimName: names.backups(restoreFrom.cluster), readOnly: true } });
    mounts.push({ name: 'backups', mountPath: '/backups', readOnly: true });
    env.push(...recoveryEnv(cluster, { source: restoreFrom.cluster, path: volumeRepositoryPath }),
      { name: 'RECOVER_FROM_VOLUME', value: 'true' },
      ...(restoreFrom.backup ? [{ name: 'RECOVER_SET', value: restoreFrom.backup }] : []));
  }
  const preferred = (labels: Record<string, string>) => ({ preferredDuringSchedulingIgnoredDuringExecution: [{
    weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } } }] });
  // A seed made from another cluster's volume goes where that volume is attached, if it can.
  const fromVolume = !recovery && restoreFrom;
  const affinity = spec.antiAffinity || fromVolume ? {
    ...spec.antiAffinity ? { podAntiAffinity: preferred({ [clusterLabel]: name }) } : {},
    ...fromVolume ? { podAffinity: preferred({ [clusterLabel]: restoreFrom.cluster, ...repositoryHostLabels }) } : {},
  } : undefined;
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { ...metadata(cluster, member, { [memberLabel]: member, [roleLabel]: role }),
      annotations: { [versionAnnotation]: spec.version, [tlsAnnotation]: replicationSslMode,
        ...(archiveRevision(cluster, spec) ? { [revisionAnnotation]: archiveRevision(cluster, spec) } : {}) } },
    spec: {
      hostname: member, subdomain: names.members(name),
      serviceAccountName: names.agent(name), automountServiceAccountToken: false,
      securityContext: podSecurity,
      initContainers: sidecars,
      containers: [{
        name: 'postgres', image: imageOf(spec), command: scriptCommand('member.sh'), env,
        ports: [{ name: 'postgres', containerPort: port }], volumeMounts: mounts, securityContext: hardened,
        // A primary busy enough to answer slowly is still the primary: only some 10 s of silence takes it out of
        // its Service and, past the failover timeout, out of its role. A replica is ready only while it streams.
        readinessProbe: { exec: { command: scriptCommand('ready.sh') }, periodSeconds: 2, timeoutSeconds: 5,
          failureThreshold: 3 },
        // SIGTERM alone is PostgreSQL's smart shutdown, which serves connected clients until the grace period ends.
        lifecycle: { preStop: { exec: { command: ['pg_ctl', 'stop', '-D', pgdata, '-m', 'fast', '-w', '-t', '20'] } } },
        ...(spec.resources ? { resources: spec.resources } : {}),
      }],
      volumes,
      ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
      ...(affinity ? { affinity } : {}),
      terminationGracePeriodSeconds: 30,
    },
  };
}

/** The PodMonitor spec.podMonitor asks for: every member's agent, the series labelled with the cluster's name. */
export function memberPodMonitor(cluster: Cluster, spec: Spec): KubeObject | undefined {
  if (!spec.podMonitor) return undefined;
  return podMonitorOf(cluster, spec.podMonitor, { [clusterLabel]: cluster.metadata.name }, {
    port: 'metrics', path: '/metrics',
    // Not "cluster", which multi-cluster Prometheus set-ups give the Kubernetes cluster.
    relabelings: [{ action: 'replace', sourceLabels: [discoveryLabel('label', clusterLabel)], targetLabel: 'postgrescluster' }],
  });
}

/**
 * The pod that upgrades the primary's data to the spec's major version (upgrade.ts): PostgreSQL's programs of the
 * version the members ran copied from `fromImage` by an init container, pg_upgrade run by the spec's image.
 */
export function majorUpgradePod(cluster: Cluster, spec: Spec,
  { member, fromVersion, fromImage }: { member: string; fromVersion: string; fromImage: string }): KubeObject {
  const name = cluster.metadata.name;
  const fromMajor = { name: 'FROM_MAJOR', value: String(Number.parseInt(fromVersion, 10)) };
  const old = { name: 'old', mountPath: oldServerDir };
  const scripts = { name: 'scripts', mountPath: scriptsDir, readOnly: true };
  const tmp = { name: 'tmp', mountPath: '/tmp' };
  const env: object[] = [{ name: 'PGDATA', value: pgdata }, { name: 'OLD', value: oldServerDir }, fromMajor,
    { name: 'CONFIG_DIR', value: configurationDir }];
  const mounts: object[] = [{ name: 'data', mountPath: '/var/lib/postgresql/data' }, scripts, old, tmp,
    { name: 'configuration', mountPath: configurationDir, readOnly: true }];
  const volumes: object[] = [{ name: 'data', persistentVolumeClaim: { claimName: member } },
    { name: 'scripts', configMap: { name: names.scripts(name) } }, { name: 'old', emptyDir: {} },
    { name: 'tmp', emptyDir: {} }, { name: 'configuration', configMap: { name: names.configuration(name), optional: true } }];
  // Into the backup volume, the old server archives nothing more: the repository host runs the old version's
  // pgBackRest, which this image's need not match. Its last WAL is in the upgraded data and the backup after it.
  if (spec.backup?.objectStore) withRepository(cluster, spec.backup, '/tmp', { env, volumes, mounts });
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { ...metadata(cluster, names.majorUpgrade(name), { 'app.kubernetes.io/component': 'major-upgrade' }),
      annotations: { [versionAnnotation]: spec.version } },
    spec: {
      restartPolicy: 'Never', automountServiceAccountToken: false, securityContext: podSecurity,
      initContainers: [{ name: 'old-server', image: fromImage, command: scriptCommand('collect-old-server.sh'),
        env: [fromMajor, { name: 'OLD', value: oldServerDir }], volumeMounts: [scripts, old, tmp], securityContext: hardened,
        terminationMessagePolicy: 'FallbackToLogsOnError', ...(spec.resources ? { resources: spec.resources } : {}) }],
      containers: [{ name: 'upgrade', image: imageOf(spec), command: scriptCommand('upgrade.sh'), env, volumeMounts: mounts,
        securityContext: hardened, terminationMessagePolicy: 'FallbackToLogsOnError',
        ...(spec.resources ? { resources: spec.resources } : {}) }],
      volumes,
      ...(spec.nodeSelector ? { nodeSelector: spec.nodeSelector } : {}),
    },
  };
}
