import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('postgresclusters', { ownsObjects: true }),
  { group: '', resource: 'pods', verbs: ['list', 'watch', 'create', 'delete', 'patch'],
    reason: 'run one pod per member, replace and remove members, and relabel the primary' },
  { group: '', resource: 'pods/exec', verbs: ['get', 'create'],
    reason: 'ask members how much WAL they replayed, and promote one (a WebSocket exec asks for both verbs)' },
  { group: '', resource: 'persistentvolumeclaims', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'one volume per member and the backup volume, read live before a member restarts on one; deleted only ' +
      'when spec.storage.keepOnScaleDown is false' },
  { group: '', resource: 'services', verbs: ['list', 'watch', 'create', 'patch'],
    reason: 'the read-write, read-only and member Services' },
  { group: '', resource: 'configmaps', verbs: ['list', 'watch', 'create', 'patch'], reason: 'the member scripts' },
  { group: '', resource: 'secrets', verbs: ['create'], reason: 'generate the cluster\'s credentials once' },
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'],
    reason: 'the cluster\'s Lease names the primary: made with the seed, taken over by the member promoted' },
  { group: '', resource: 'serviceaccounts', verbs: ['create', 'patch'], reason: 'the member agents\' identity, per cluster' },
  { group: 'rbac.authorization.k8s.io', resource: 'roles', verbs: ['create', 'patch'],
    reason: 'let the member agents read and renew their cluster\'s Lease, and nothing else' },
  { group: 'rbac.authorization.k8s.io', resource: 'rolebindings', verbs: ['create', 'patch'],
    reason: 'bind that Role to the member agents\' ServiceAccount' },
  { group: 'batch', resource: 'cronjobs', verbs: ['list', 'watch', 'create', 'patch', 'delete'],
    reason: 'take scheduled base backups, and stop when spec.backup is removed' },
];

/** What a member agent calls (agent.ts): its cluster's Lease only, by name, in the Role objects.ts makes. */
export const agentPermissions: Permission[] = [
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'update'],
    reason: 'read the cluster\'s Lease, and renew it while this member is the primary' },
];
