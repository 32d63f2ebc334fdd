import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('podalerts', { ownsObjects: false }),
  { group: '', resource: 'pods', verbs: ['list', 'watch'], reason: 'check the health of matching pods' },
  { group: '', resource: 'pods/log', verbs: ['get'], reason: 'capture the failing container\'s log tail' },
  { group: '', resource: 'secrets', verbs: ['get'], reason: 'read the webhook URL from spec.webhook.secretRef' },
];
