import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('podbuggertools', { ownsObjects: false }),
  { group: '', resource: 'pods', verbs: ['list', 'watch'], reason: 'find running pods that match' },
  { group: '', resource: 'pods/ephemeralcontainers', verbs: ['update'], reason: 'add the debug container' },
];
