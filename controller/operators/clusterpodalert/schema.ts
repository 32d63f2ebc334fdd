// ClusterPodAlert: a PodAlert over the pods of every namespace its namespaceSelector picks, for a platform team that
// would otherwise make one PodAlert per namespace. It reads pods, and their logs, across namespaces: creating one
// takes those rights cluster-wide, and its references name the namespace of their Secret or ConfigMap.
import { labelSelector } from '../../api/common.ts';
import { referenceRight } from '../../api/admission.ts';
import { defineKind, type ResourceOf } from '../../api/kind.ts';
import { object, type Infer } from '../../api/schema.ts';
import { alertColumns, podAlertSpecFields, podAlertStatus } from '../podalert/schema.ts';

export const clusterPodAlertSpec = object({
  namespaceSelector: labelSelector('The namespaces whose pods are watched, by their labels. Every namespace: ' +
    'matchExpressions [{key: kubernetes.io/metadata.name, operator: Exists}].', { required: true, of: 'a namespace' }),
  ...podAlertSpecFields('cluster'),
}, { description: 'Which namespaces and pods to watch, and where to send alerts.', required: true });

export const ClusterPodAlert = defineKind({
  kind: 'ClusterPodAlert',
  scope: 'Cluster',
  shortNames: ['cpa'],
  description: 'ClusterPodAlert watches pods in the namespaces its namespaceSelector picks and reports those unhealthy ' +
    'past a grace period, as a PodAlert does in its own namespace; each alert carries its namespace. It copies pods\' ' +
    'states and log tails across namespaces: creating one takes list on pods, and get on pods/log, in every namespace.',
  spec: clusterPodAlertSpec,
  status: podAlertStatus,
  printerColumns: alertColumns,
  requesterRights: [{ group: '', resource: 'pods', verb: 'list', namespace: 'all',
    because: 'the controller copies matching pods\' states, of any namespace it picks, into its status for you' },
  { group: '', resource: 'pods', subresource: 'log', verb: 'get', namespace: 'all',
    when: 'has(object.spec.logLines) && object.spec.logLines > 0',
    because: 'the controller copies pods\' log tails, of any namespace it picks, into its status for you; logLines: 0 ' +
      'needs no such right' },
  referenceRight('secrets', 'object.spec.webhook.secretRef', 'the controller reads the webhook URL from that Secret ' +
    'for you', 'cluster'),
  referenceRight('secrets', 'object.spec.webhook.routingKeySecretRef', 'the controller reads the PagerDuty routing key ' +
    'from that Secret for you', 'cluster'),
  referenceRight('secrets', 'object.spec.alertmanager.credentialsSecretRef', 'the controller reads Alertmanager\'s ' +
    'credentials from that Secret for you', 'cluster'),
  referenceRight('configmaps', 'object.spec.alertmanager.ca.configMapRef', 'the controller reads the certificates to ' +
    'trust Alertmanager with from that ConfigMap for you', 'cluster')],
});

export type ClusterPodAlertSpec = Infer<typeof clusterPodAlertSpec>;
export type ClusterPodAlertResource = ResourceOf<typeof ClusterPodAlert>;
