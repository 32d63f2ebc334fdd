import { ownKind, type Permission } from '../../api/permissions.ts';

/** What a PodAlert reads in its namespace, and a ClusterPodAlert in those it picks. */
export const alertReads: Permission[] = [
  { group: '', resource: 'pods', verbs: ['list', 'watch'], reason: 'check the health of matching pods' },
  { group: '', resource: 'pods/log', verbs: ['get'], reason: 'capture the failing container\'s log tail' },
  { group: 'batch', resource: 'jobs', verbs: ['list', 'watch'], reason: 'group a CronJob\'s pods under it, through ' +
    'the Job between (its owner, the only field kept)' },
  { group: '', resource: 'secrets', verbs: ['get'], reason: 'read the webhook URL from spec.webhook.secretRef, and ' +
    'Alertmanager\'s credentials from spec.alertmanager.credentialsSecretRef' },
  { group: '', resource: 'configmaps', verbs: ['get'], reason: 'read the certificates Alertmanager is trusted with, ' +
    'from spec.alertmanager.ca.configMapRef' },
];

export const permissions: Permission[] = [...ownKind('podalerts', { ownsObjects: false }), ...alertReads];
