import { ownKind, type Permission } from '../../api/permissions.ts';

export const permissions: Permission[] = [
  ...ownKind('prometheusjmxexporters', { ownsObjects: true }),
  { group: 'keelson.dev', resource: 'prometheusjmxexporters', verbs: ['patch'],
    reason: 'add the finalizer that takes the annotations off pods, and remove it after' },
  { group: '', resource: 'pods', verbs: ['list', 'watch', 'patch'],
    reason: 'find running Java pods that match, and annotate them for scraping' },
  { group: '', resource: 'pods/exec', verbs: ['get', 'create'],
    reason: 'find the JVM, copy the agent and its config, and load the agent (a WebSocket exec asks for both verbs)' },
  { group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch'],
    reason: 'read the exporter config, and see it change' },
  { group: 'monitoring.coreos.com', resource: 'podmonitors', verbs: ['get', 'create', 'patch', 'delete'],
    reason: 'make the PodMonitor spec.podMonitor asks for (server-side apply), and remove it when no longer asked' },
];
