import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('prometheusjmxexporters', { finalizer: true }),
  { group: '', resource: 'pods', verbs: ['get', 'list', 'watch', 'patch'],
    reason: 'find JVM pods and annotate them for scraping' },
  { group: '', resource: 'pods/exec', verbs: ['create'], reason: 'copy the agent into the container and attach it' },
  { group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch'], reason: 'read the exporter config and follow its changes' },
];
