import { dns1123Label, dns1123Subdomain, labelMap, statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { array, boolean, enumeration, integer, map, object, quantity, string, type Infer } from '../../api/schema.ts';
import { podMonitorSpec } from '../pod-monitor.ts';
import { postgresqlSpec } from './configuration.ts';
import { databasesSpec, rolesSpec } from './roles.ts';
import { tlsSpec } from './tls.ts';

/** Asks for a full backup into the cluster's repository: a new value, another (backups.ts). */
export const backupRequestAnnotation = 'keelson.dev/backup-request';
/** Asks for a switchover to the member named (switchover.ts). */
export const switchoverAnnotation = 'keelson.dev/switchover-to';
/** Asks again for a major upgrade that failed: a new value, another try (upgrade.ts). */
export const majorUpgradeRetryAnnotation = 'keelson.dev/major-upgrade-retry';

export const phases = ['Creating', 'Running', 'Scaling', 'FailingOver', 'Recovering', 'Upgrading', 'Paused',
  'Failed'] as const;

const quantities = (description: string) => map(quantity({ description: 'A quantity, e.g. 500m or 1Gi.' }),
  { description, maxProperties: 16 });

/** A CEL rule: the field stays as it was, set or unset. */
const unchanged = (field: string) =>
  `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`;

const objectStore = object({
  endpoint: string({ description: 'The store\'s HTTPS URL, e.g. https://s3.eu-west-1.amazonaws.com or ' +
    'https://minio.storage.svc:9000.', required: true, maxLength: 512, pattern: '^https://[^/?#@\\s]+/?$' }),
  bucket: string({ description: 'The bucket, which must exist.', required: true, maxLength: 63,
    pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$' }),
  path: string({ description: 'Where in the bucket the cluster\'s archive lives; default /<namespace>/<name>. ' +
    'Two clusters must not share one.', maxLength: 512, pattern: '^/[-._a-zA-Z0-9/]*$' }),
  region: string({ description: 'The region requests are signed for.', maxLength: 64, default: 'us-east-1',
    pattern: '^[-a-z0-9]+$' }),
  credentials: object({
    name: string({ description: 'The Secret in the cluster\'s namespace.', required: true, maxLength: 253,
      pattern: dns1123Subdomain }),
  }, { description: 'The Secret holding the keys as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: never in the ' +
    'spec, logs or status.', required: true }),
  ca: object({
    name: string({ description: 'The ConfigMap in the cluster\'s namespace.', required: true, maxLength: 253,
      pattern: dns1123Subdomain }),
    key: string({ description: 'The key holding the PEM certificates.', required: true, maxLength: 253,
      pattern: '^[-._a-zA-Z0-9]+$' }),
  }, { description: 'A ConfigMap with the CA certificates the store\'s certificate is verified against; default ' +
    'the system\'s.' }),
}, { description: 'An S3-compatible object store that receives every WAL segment as PostgreSQL completes it.' });

export const postgresClusterSpec = object({
  size: integer({ description: 'Members: one primary and size-1 streaming replicas.', minimum: 1, maximum: 9,
    required: true }),
  version: string({ description: 'The PostgreSQL version, major or major.minor (e.g. "17" or "17.2"); the image ' +
    'is postgres:<version> unless image is set. A minor change rolls through the members; a higher major is an ' +
    'upgrade in place with pg_upgrade (every member stopped meanwhile; with spec.backup, a full backup first), ' +
    'which, if it fails, leaves the members on the version they ran; a lower one is refused.', required: true, maxLength: 16, pattern: '^[1-9][0-9]*(\\.[0-9]+)?$',
  rules: [{ rule: "int(self.find('^[0-9]+')) >= int(oldSelf.find('^[0-9]+'))",
    message: 'the PostgreSQL major version cannot go down: data files are not readable by an older major' }] }),
  image: string({ description: 'The container image, overriding postgres:<version>.', maxLength: 1024 }),
  synchronousReplicas: integer({ description: 'Replicas that must have each commit before the primary acknowledges ' +
    'it (synchronous replication, quorum ANY n of the replicas); capped by the replicas there are. 1, the default, ' +
    'loses no acknowledged write in a failover while a replica is healthy, and stops writes while none is; 0 is ' +
    'asynchronous: writes go on without replicas, and a failover may lose the latest ones.', minimum: 0, maximum: 8,
  default: 1 }),
  postgresql: postgresqlSpec,
  tls: tlsSpec,
  roles: rolesSpec,
  databases: databasesSpec,
  storage: object({
    size: quantity({ description: 'The volume size of each member. It may grow, where the StorageClass allows ' +
      'expansion (allowVolumeExpansion): each member claim is asked for the new size, and StorageResized says how ' +
      'that goes, or why the class refuses; it never shrinks.', default: '1Gi' }),
    storageClassName: string({ description: 'The StorageClass of member volumes; default the cluster\'s.',
      maxLength: 253, pattern: dns1123Subdomain }),
    keepOnScaleDown: boolean({ description: 'Keep the volume of a member removed by scaling down.', default: true }),
  }, { description: 'Each member\'s PersistentVolumeClaim. size may only grow, and storageClassName cannot change: ' +
    'existing volumes would not follow.', default: {}, rules: [
    { rule: '!has(oldSelf.size) || (has(self.size) && ' +
      'quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0)',
    message: 'storage.size cannot shrink: a volume cannot give back space its file system may use', fieldPath: '.size' },
    { rule: unchanged('storageClassName'), message: 'storage.storageClassName cannot change: member volumes stay ' +
      'where they were made', fieldPath: '.storageClassName' },
  ] }),
  persistentVolumeClaimRetentionPolicy: object({
    whenDeleted: enumeration(['Retain', 'Delete'], { description: 'What becomes of the member volumes, the credentials ' +
      'Secret and the primary\'s Lease when the PostgresCluster (or its CRD) is deleted: Retain keeps them, and a ' +
      'PostgresCluster made again with the same name adopts them and comes back with its data; Delete lets them be ' +
      'garbage-collected with it. The backup volume is always kept.', default: 'Retain' }),
  }, { description: 'What deleting the cluster does to its volumes, as StatefulSet names it.', default: {} }),
  resources: object({
    requests: quantities('Minimum resources of each member\'s container.'),
    limits: quantities('Maximum resources of each member\'s container.'),
  }, { description: 'Compute resources of each member\'s container.' }),
  paused: boolean({ description: 'Stop changing anything; said in a condition.', default: false }),
  nodeSelector: labelMap({ description: 'Nodes the members may run on.' }),
  antiAffinity: boolean({ description: 'Spread members across nodes (a member per node where possible).',
    default: false }),
  podMonitor: podMonitorSpec('selecting the members: each one\'s agent serves PostgreSQL\'s statistics ' +
    '(keelson_postgres_*) on its port named metrics (9187), and the series carry the cluster\'s name as postgrescluster'),
  backup: object({
    schedule: string({ description: 'When to take a base backup, as a cron expression, e.g. "0 3 * * *".',
      required: true, maxLength: 128, pattern: '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\\S+\\s+){4}\\S+)$' }),
    retain: integer({ description: 'Base backups to keep.', minimum: 1, maximum: 100, default: 7 }),
    retainDays: integer({ description: 'Keep backups by age instead of by count: a full backup ' +
      'goes once a newer one is at least this many days old, so any time in the last retainDays days can be ' +
      'recovered to (pgBackRest\'s time retention); the WAL before the oldest backup kept goes with it.',
    minimum: 1, maximum: 3650 }),
    objectStore: objectStore,
    target: enumeration(['prefer-standby', 'primary'], { description: 'Where a backup reads the data files: ' +
      'prefer-standby copies them from a streaming replica, the primary starting and stopping the backup ' +
      'and serving the few files replicas lack (through the pgBackRest server each member runs on port 8432, with a ' +
      'certificate of Secret <name>-backup-peer), and from the primary when no replica streams; primary ' +
      'always reads the primary\'s volume.',
    default: 'prefer-standby' }),
  }, { description: 'Continuous WAL archiving and scheduled base backups with pgBackRest: into the cluster\'s ' +
    'backup volume (<name>-backups), which a pod of its own, the repository host <name>-repo, mounts and serves to ' +
    'the members; with objectStore, into an S3-compatible object store instead.' }),
  bootstrap: object({
    fromBackup: object({
      cluster: string({ description: 'The PostgresCluster (in this namespace) whose backups to restore from.',
        required: true, maxLength: 63, pattern: dns1123Label }),
      backup: string({ description: 'The backup to restore, to its end: its pgBackRest label, as that cluster\'s ' +
        'status.lastBackup.name gives it; default the latest, with all the WAL archived after it.', maxLength: 64,
        pattern: '^[0-9]{8}-[0-9]{6}F(_[0-9]{8}-[0-9]{6}[DI])?$' }),
    }, { description: 'Create the cluster from another cluster\'s backup volume (a cluster with spec.backup and no ' +
      'objectStore), read where it lies: mounted read-only by the new seed, which goes beside that cluster\'s ' +
      'repository host when it can, and must to mount a ReadWriteOnce volume.' }),
    recovery: object({
      source: string({ description: 'The cluster whose archive to recover: its name, the stanza in the store. It ' +
        'need not exist any more.', required: true, maxLength: 63, pattern: dns1123Label }),
      path: string({ description: 'Where its archive is in the bucket; default /<namespace>/<source>.', maxLength: 512,
        pattern: '^/[-._a-zA-Z0-9/]*$' }),
      targetTime: string({ description: 'Recover every transaction committed up to this time, and none after.',
        format: 'date-time', maxLength: 64 }),
      targetLSN: string({ description: 'Recover up to this WAL position (e.g. 0/3000148).', maxLength: 17,
        pattern: '^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$' }),
      targetName: string({ description: 'Recover up to this restore point (pg_create_restore_point).', maxLength: 63 }),
    }, { description: 'Create the cluster by point-in-time recovery from another cluster\'s archive in ' +
      'backup.objectStore (the same store and keys): its latest base backup before the target, then its WAL up to ' +
      'the target (default: all of it).', rules: [
      { rule: '[has(self.targetTime), has(self.targetLSN), has(self.targetName)].filter(x, x).size() <= 1',
        message: 'at most one of targetTime, targetLSN and targetName' },
    ] }),
  }, { description: 'How a new cluster gets its data; default an empty database (initdb). Set when the cluster is ' +
    'made, never changed after (a CEL rule says so).', rules: [
    { rule: 'has(self.fromBackup) != has(self.recovery)', message: 'exactly one of fromBackup and recovery' },
  ] }),
}, { description: 'The PostgreSQL cluster wanted.', required: true, rules: [
  { rule: '!has(self.bootstrap) || !has(self.bootstrap.recovery) || (has(self.backup) && has(self.backup.objectStore))',
    message: 'bootstrap.recovery reads from backup.objectStore: set it', fieldPath: '.bootstrap.recovery' },
  { rule: unchanged('bootstrap'), message: 'bootstrap cannot change: it says how the cluster\'s data was first made',
    fieldPath: '.bootstrap' },
  { rule: '!has(self.databases) || !has(self.roles) || self.databases.all(d, d.ensure == \'absent\' || ' +
    '!self.roles.exists(r, r.name == d.owner && r.ensure == \'absent\'))',
  message: 'a database kept cannot be owned by a role marked absent', fieldPath: '.databases' },
] });

/** A backup into the repository, as it goes. */
const backupProgress = (token: string, description: string) => object({
  token: string({ description: token, required: true }),
  phase: enumeration(['Running', 'Completed', 'Failed'], { description: 'Running, Completed or Failed.', required: true }),
  member: string({ description: 'Where pgBackRest takes it: a member, or the repository host <name>-repo.' }),
  standbyOf: string({ description: 'When taken from a standby, the primary it started on: a failover ends it.' }),
  primary: string({ description: 'When taken from the primary by the repository host, the primary it started on: a ' +
    'failover ends it.' }),
  startTime: string({ description: 'When it was started.', format: 'date-time' }),
  message: string({ description: 'Progress, or why it failed.', maxLength: 2048 }),
}, { description });

export const postgresClusterStatus = statusOf({
  phase: enumeration(phases, { description: 'Creating, Running, Scaling, FailingOver, Recovering, Upgrading, Paused or Failed.' }),
  primary: string({ description: 'The member serving writes.' }),
  currentVersion: string({ description: 'The PostgreSQL version the members run.' }),
  currentImage: string({ description: 'The image the members run that version with.' }),
  bootstrapped: boolean({ description: 'Whether the cluster\'s data was made (its first primary was ready): from then ' +
    'on a member with no data is never initialised or bootstrapped again, only restored.' }),
  readyMembers: integer({ description: 'Members ready to serve.', minimum: 0 }),
  members: array(object({
    name: string({ description: 'The member (its Pod and PersistentVolumeClaim).', required: true }),
    role: enumeration(['primary', 'replica'], { description: 'primary or replica.', required: true }),
    ready: boolean({ description: 'Whether it serves.', required: true }),
  }, { description: 'One member.' }), { description: 'The members.', maxItems: 9 }),
  synchronous: object({
    primary: string({ description: 'The primary they are in force on.', required: true }),
    quorum: integer({ description: 'How many of the standbys must have flushed a commit before it is acknowledged; ' +
      '0: asynchronous.', minimum: 0, required: true }),
    standbys: array(string({ description: 'A member.' }), { description: 'The members a commit may wait for.',
      maxItems: 8 }),
    slots: array(string({ description: 'A slot, named after its member.' }), { description: 'The physical ' +
      'replication slots the primary keeps, one per other member, which keep the WAL each has yet to receive.',
      maxItems: 16 }),
  }, { description: 'The synchronous standbys in force on the primary (synchronous_standby_names ANY quorum of ' +
    'standbys), as recorded before a commit could depend on them.' }),
  lastBackup: object({
    name: string({ description: 'The backup.', required: true }),
    time: string({ description: 'When it finished.', format: 'date-time', required: true }),
    type: string({ description: 'full, diff or incr.' }),
    beginWal: string({ description: 'The first WAL segment a restore of it needs.' }),
    endWal: string({ description: 'The last WAL segment a restore of it needs: it is consistent from there on.' }),
    beginLSN: string({ description: 'Where its WAL begins.' }),
    endLSN: string({ description: 'Where its WAL ends.' }),
    sizeBytes: integer({ description: 'The size of the database it holds.', minimum: 0 }),
    repositorySizeBytes: integer({ description: 'What it takes in the repository, compressed.', minimum: 0 }),
    durationSeconds: integer({ description: 'How long it took.', minimum: 0 }),
    postgresVersion: string({ description: 'The PostgreSQL major version it is of.' }),
  }, { description: 'The latest successful base backup.' }),
  backupRequest: backupProgress('The value of the keelson.dev/backup-request annotation it answers.',
    'The latest backup asked for with the keelson.dev/backup-request annotation.'),
  scheduledBackup: backupProgress('scheduled-<the UTC minute the schedule fired at>.',
    'The latest backup backup.schedule (or the operator: a first one, one per new timeline, one before a major ' +
    'upgrade) started.'),
  majorUpgrade: object({
    from: string({ description: 'The version the members ran.', required: true }),
    fromImage: string({ description: 'The image they ran it with, whose programs pg_upgrade reads the data with.',
      required: true }),
    to: string({ description: 'The version asked for.', required: true }),
    toImage: string({ description: 'The image of that version, which runs pg_upgrade and then the members.' }),
    phase: enumeration(['Pending', 'Stopping', 'Upgrading', 'Completed', 'Failed', 'Halted'], { description:
      'Pending (waiting for the cluster to be steady, and for the backup before it), Stopping (the members), ' +
      'Upgrading (pg_upgrade runs), Completed, Failed (the old data untouched: the members run the old version ' +
      'again), or Halted (pg_upgrade stopped after it began linking files: no member is started).', required: true }),
    attempts: integer({ description: 'How often pg_upgrade was started for this upgrade (again after being cut short).',
      minimum: 0 }),
    primary: string({ description: 'The member whose data is upgraded; the replicas are cloned from it afterwards.' }),
    backup: string({ description: 'The token of the full backup taken before it, with spec.backup.' }),
    retry: string({ description: 'The keelson.dev/major-upgrade-retry annotation this attempt answers.',
      maxLength: 63 }),
    startTime: string({ description: 'When it was asked for.', format: 'date-time' }),
    completionTime: string({ description: 'When it ended.', format: 'date-time' }),
    afterUpgradeStarted: string({ description: 'When ANALYZE of every database (pg_upgrade carries no planner ' +
      'statistics) and ALTER EXTENSION UPDATE of extensions with a newer version were started on the upgraded ' +
      'primary; their log is /tmp/keelson/after-upgrade.log in its postgres container.', format: 'date-time' }),
    message: string({ description: 'What it waits for, or how it ended (pg_upgrade\'s words on a failure).',
      maxLength: 2048, required: true }),
  }, { description: 'The latest major version upgrade, asked for by raising spec.version\'s major.' }),
  podMonitor: string({ description: 'The PodMonitor made for spec.podMonitor.' }),
  tls: object({
    source: string({ description: '"operator" (the cluster\'s CA), or the Secret spec.tls.serverSecret names.',
      required: true }),
    notAfter: string({ description: 'When the certificate the members serve expires.', format: 'date-time',
      required: true }),
  }, { description: 'The server certificate in Secret <name>-tls, which members serve and reload as it changes.' }),
  switchover: object({
    to: string({ description: 'The member the keelson.dev/switchover-to annotation names.', required: true,
      maxLength: 80 }),
    phase: enumeration(['Pending', 'Running', 'Completed', 'Failed'], { description: 'Pending (waiting to start), ' +
      'Running (the primary stopped, a member being promoted), Completed or Failed.', required: true }),
    message: string({ description: 'What is awaited, or how it ended.', maxLength: 1024, required: true }),
  }, { description: 'The switchover asked for with the keelson.dev/switchover-to annotation.' }),
});

export const PostgresCluster = defineKind({
  kind: 'PostgresCluster',
  shortNames: ['pgc'],
  description: 'PostgresCluster runs PostgreSQL as a primary and streaming replicas, one Pod and volume per ' +
    'member; it grows and shrinks one member at a time, replaces lost members, fails over, and restores from backups.',
  spec: postgresClusterSpec,
  status: postgresClusterStatus,
  printerColumns: [
    { name: 'Size', type: 'integer', jsonPath: '.spec.size', description: 'Members asked for.' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyMembers', description: 'Members ready.' },
    { name: 'Primary', type: 'string', jsonPath: '.status.primary', description: 'The member serving writes.' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'What the cluster is doing.' },
    { name: 'Last Backup', type: 'date', jsonPath: '.status.lastBackup.time',
      description: 'Time since the latest successful base backup ended.' },
  ],
  actionAnnotations: [backupRequestAnnotation, switchoverAnnotation, majorUpgradeRetryAnnotation],
  requesterRights: [
    { group: '', resource: 'pods', verb: 'create', because: 'the controller runs PostgreSQL pods of its image for you ' +
      '(and, with a backup volume, a pgBackRest repository host on it)' },
    { group: '', resource: 'persistentvolumeclaims', verb: 'create', because: 'the controller claims volumes for you' },
    { group: 'policy', resource: 'poddisruptionbudgets', verb: 'create', when: 'request.operation == \'CREATE\'',
      because: 'the controller limits evictions of the members for you (made with the cluster, once)' },
    { group: '', resource: 'secrets', verb: 'get', name: 'object.spec.backup.objectStore.credentials.name',
      when: 'has(object.spec.backup) && has(object.spec.backup.objectStore)',
      because: 'the members read the object store\'s keys from that Secret for you' },
    { group: '', resource: 'configmaps', verb: 'get', name: 'object.spec.backup.objectStore.ca.name',
      when: 'has(object.spec.backup) && has(object.spec.backup.objectStore) && has(object.spec.backup.objectStore.ca)',
      because: 'the members read the object store\'s CA from that ConfigMap for you' },
    // One check, not one per Secret: the apiserver allows two authorizer checks per expression.
    { group: '', resource: 'secrets', verb: 'get',
      when: 'has(object.spec.roles) && object.spec.roles.exists(r, has(r.passwordSecret) && r.ensure != \'absent\')',
      because: 'the operator sets the roles\' passwords from Secrets there for you' },
    { group: '', resource: 'secrets', verb: 'get', name: 'object.spec.tls.serverSecret.name',
      when: 'has(object.spec.tls) && has(object.spec.tls.serverSecret)',
      because: 'the operator gives the members the certificate and key in that Secret for you' },
    { group: 'monitoring.coreos.com', resource: 'podmonitors', verb: 'create', when: 'has(object.spec.podMonitor)',
      because: 'the controller makes a PodMonitor for you' },
  ],
});

export type PostgresClusterStatus = Infer<typeof postgresClusterStatus>;
export type PostgresClusterResource = ResourceOf<typeof PostgresCluster>;
