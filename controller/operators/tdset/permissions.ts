import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('tdsets', { ownsObjects: true }),
  { group: 'apps', resource: 'deployments', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'run the scheduled Deployment (server-side apply, which creates it); read one the cache does not hold' },
  { group: '', resource: 'services', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'expose the container when spec.service is set, and remove the Service when it is not' },
];
