import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('postgresclusters', { ownsObjects: true }),
  { group: '', resource: 'pods', verbs: ['list', 'watch', 'create', 'delete', 'patch'],
    reason: 'run one pod per member and the repository host on the backup volume, replace and remove them, and ' +
      'relabel the primary' },
  { group: '', resource: 'pods/exec', verbs: ['get', 'create'],
    reason: 'ask members how far their WAL goes, promote one, set its synchronous standbys, start, follow and stop ' +
      'pgBackRest backups on them and on the repository host, and read the passwords a member runs with to restore ' +
      'a deleted credentials Secret (a WebSocket exec asks for both verbs)' },
  { group: '', resource: 'persistentvolumeclaims', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'one volume per member and the backup volume, read live before a member restarts on one, relabelled ' +
      'when its labels are lost, owned or let go as the retention policy says; deleted only when ' +
      'spec.storage.keepOnScaleDown is false' },
  { group: '', resource: 'services', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'the read-write, read-only and member Services; one of their names taken is read to tell whose it is' },
  { group: 'policy', resource: 'poddisruptionbudgets', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'the replicas\' PodDisruptionBudget, one evicted at a time, and the primary\'s, evicted only once switched ' +
      'over; one of their names taken is read to tell whose it is' },
  { group: '', resource: 'nodes', verbs: ['list', 'watch'], clusterScoped: true,
    reason: 'see a member\'s node cordoned, as a drain begins, to switch a primary there over before it is evicted' },
  { group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'the member scripts, the configuration members accepted, and the CA clients verify the members with' },
  { group: '', resource: 'secrets', verbs: ['get', 'create', 'patch'],
    reason: 'generate the cluster\'s credentials, see on every reconcile that they are still there (made again ' +
      'with the passwords in use if not), and own them or let them go as the retention policy says; keep the ' +
      'cluster\'s CA and server certificate, and the certificate members take backups from a standby with, and read ' +
      'a certificate Secret the spec names to check and copy it' },
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update', 'patch'],
    reason: 'the cluster\'s Lease names the primary: made with the seed, taken over by the member promoted, owned ' +
      'or let go as the retention policy says' },
  { group: '', resource: 'serviceaccounts', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'the member agents\' identity, per cluster, repaired when changed or deleted' },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'let the member agents read and renew their cluster\'s Lease, and nothing else; repaired when changed ' +
      'or deleted' },
  { group: 'rbac.authorization.k8s.io', resource: 'rolebindings', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'bind that Role to the member agents\' ServiceAccount' },
  { group: 'batch', resource: 'cronjobs', verbs: ['list', 'watch', 'delete'],
    reason: 'delete the pg_basebackup CronJob an earlier version took backups into the volume with' },
  { group: 'monitoring.coreos.com', resource: 'podmonitors', verbs: ['get', 'create', 'patch', 'delete'],
    reason: 'make the PodMonitor spec.podMonitor asks for (server-side apply), and remove it when no longer asked' },
];

/** What a member agent calls (agent.ts): its cluster's Lease only, by name, in the Role objects.ts makes. */
export const agentPermissions: Permission[] = [
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'update'],
    reason: 'read the cluster\'s Lease, and renew it while this member is the primary' },
];
