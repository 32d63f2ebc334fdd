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
  { group: 'batch', resource: 'cronjobs', verbs: ['list', 'watch', 'create', 'patch', 'delete'],
    reason: 'take scheduled base backups, and stop when spec.backup is removed' },
];
