import { dns1123Label, dns1123Subdomain, labelMap, statusOf } from '../../api/common.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { array, boolean, enumeration, integer, map, object, quantity, string, type Infer } from '../../api/schema.ts';

export const phases = ['Creating', 'Running', 'Scaling', 'FailingOver', 'Recovering', 'Upgrading', 'Paused',
  'Failed'] as const;

const quantities = (description: string) => map(quantity({ description: 'A quantity, e.g. 500m or 1Gi.' }),
  { description, maxProperties: 16 });

/** A CEL rule: the field stays as it was, set or unset. */
const unchanged = (field: string) =>
  `has(self.${field}) == has(oldSelf.${field}) && (!has(self.${field}) || self.${field} == oldSelf.${field})`;

export const postgresClusterSpec = object({
  size: integer({ description: 'Members: one primary and size-1 streaming replicas.', minimum: 1, maximum: 9,
    required: true }),
  version: string({ description: 'The PostgreSQL version, major or major.minor (e.g. "17" or "17.2"); the image ' +
    'is postgres:<version> unless image is set. A minor change rolls through the members; a major change is ' +
    'refused.', required: true, maxLength: 16, pattern: '^[1-9][0-9]*(\\.[0-9]+)?$',
  rules: [{ rule: "int(self.find('^[0-9]+')) >= int(oldSelf.find('^[0-9]+'))",
    message: 'the PostgreSQL major version cannot go down: data files are not readable by an older major' }] }),
  image: string({ description: 'The container image, overriding postgres:<version>.', maxLength: 1024 }),
  synchronousReplicas: integer({ description: 'Replicas that must have each commit before the primary acknowledges ' +
    'it (synchronous replication, quorum ANY n of the replicas); capped by the replicas there are. 1, the default, ' +
    'loses no acknowledged write in a failover while a replica is healthy, and stops writes while none is; 0 is ' +
    'asynchronous: writes go on without replicas, and a failover may lose the latest ones.', minimum: 0, maximum: 8,
  default: 1 }),
  storage: object({
    size: quantity({ description: 'The volume size of each member.', default: '1Gi' }),
    storageClassName: string({ description: 'The StorageClass of member volumes; default the cluster\'s.',
      maxLength: 253, pattern: dns1123Subdomain }),
    keepOnScaleDown: boolean({ description: 'Keep the volume of a member removed by scaling down.', default: true }),
  }, { description: 'Each member\'s PersistentVolumeClaim. size and storageClassName cannot change: existing ' +
    'volumes would not follow.', default: {}, rules: [
    { rule: unchanged('size'), message: 'storage.size cannot change: member volumes are not resized', fieldPath: '.size' },
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
  backup: object({
    schedule: string({ description: 'When to take a base backup, as a cron expression, e.g. "0 3 * * *".',
      required: true, maxLength: 128, pattern: '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|(\\S+\\s+){4}\\S+)$' }),
    retain: integer({ description: 'Base backups to keep.', minimum: 1, maximum: 100, default: 7 }),
  }, { description: 'Scheduled base backups into the cluster\'s backup volume.' }),
  bootstrap: object({
    fromBackup: object({
      cluster: string({ description: 'The PostgresCluster (in this namespace) whose backups to restore from.',
        required: true, maxLength: 63, pattern: dns1123Label }),
      backup: string({ description: 'The backup to restore; default the latest.', maxLength: 253 }),
    }, { description: 'Create the cluster from an existing backup.', required: true }),
  }, { description: 'How a new cluster gets its data; default an empty database (initdb).' }),
}, { description: 'The PostgreSQL cluster wanted.', required: true });

export const postgresClusterStatus = statusOf({
  phase: enumeration(phases, { description: 'Creating, Running, Scaling, FailingOver, Recovering, Upgrading, Paused or Failed.' }),
  primary: string({ description: 'The member serving writes.' }),
  currentVersion: string({ description: 'The PostgreSQL version the members run.' }),
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
  }, { description: 'The latest successful base backup.' }),
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
  ],
  requesterRights: [
    { group: '', resource: 'pods', verb: 'create', because: 'the controller runs PostgreSQL pods of its image for you' },
    { group: '', resource: 'persistentvolumeclaims', verb: 'create', because: 'the controller claims volumes for you' },
    { group: 'batch', resource: 'cronjobs', verb: 'create', when: 'has(object.spec.backup)',
      because: 'the controller schedules backups for you' },
  ],
});

export type PostgresClusterStatus = Infer<typeof postgresClusterStatus>;
export type PostgresClusterResource = ResourceOf<typeof PostgresCluster>;
