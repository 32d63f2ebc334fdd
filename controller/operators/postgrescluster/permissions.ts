import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('postgresclusters'),
  { group: '', resource: 'pods', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'run, label (role) and replace members' },
  { group: '', resource: 'pods/exec', verbs: ['create'], reason: 'promote replicas and read replication positions' },
  { group: '', resource: 'persistentvolumeclaims', verbs: ['get', 'list', 'watch', 'create', 'delete'],
    reason: 'give each member its volume, and remove it on scale-down when the spec asks' },
  { group: '', resource: 'services', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'route reads and writes to the right members' },
  { group: '', resource: 'secrets', verbs: ['get', 'list', 'watch', 'create'],
    reason: 'generate the superuser and replication credentials' },
  { group: 'batch', resource: 'cronjobs', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'take scheduled base backups' },
  { group: 'batch', resource: 'jobs', verbs: ['get', 'list', 'watch'], reason: 'see which backups succeeded' },
];
