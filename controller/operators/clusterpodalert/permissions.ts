import { ownKind, type Permission } from '../../api/permissions.ts';
import { alertReads } from '../podalert/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('clusterpodalerts', { ownsObjects: false }).map((p): Permission => ({ ...p, clusterScoped: true })),
  { group: '', resource: 'namespaces', verbs: ['list', 'watch'], reason: 'pick namespaces by spec.namespaceSelector',
    clusterScoped: true },
  ...alertReads,
];
