import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('podbuggertools'),
  { group: '', resource: 'pods', verbs: ['get', 'list', 'watch'], reason: 'find pods that match' },
  { group: '', resource: 'pods/ephemeralcontainers', verbs: ['update'], reason: 'add the debug container' },
];
