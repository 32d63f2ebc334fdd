import type { ControllerOptions } from '../../api/flags.ts';
import { ownKind, type Permission } from '../../api/permissions.ts';
import { parseScaleResources, scaleResourcePermissions } from './scale-resources.ts';

export const permissions: Permission[] = [
  ...ownKind('tdsets', { ownsObjects: true }),
  { group: 'apps', resource: 'deployments', verbs: ['get', 'list', 'watch', 'create', 'patch'],
    reason: 'run the scheduled Deployment (server-side apply, which creates it); read one the cache does not hold' },
  { group: 'keelson.dev', resource: 'tdsets', verbs: ['patch'],
    reason: 'add and remove the finalizer that gives a scaleTargetRef back its replicas when its TDSet is deleted' },
  { group: 'apps', resource: 'statefulsets', verbs: ['get'], reason: 'see whether something controls a StatefulSet a ' +
    'scaleTargetRef names, before scaling it' },
  { group: 'apps', resource: 'replicasets', verbs: ['get'], reason: 'see whether a Deployment controls a ReplicaSet a ' +
    'scaleTargetRef names, before scaling it' },
  ...['deployments', 'statefulsets', 'replicasets'].map((resource): Permission => ({ group: 'apps',
    resource: `${resource}/scale`, verbs: ['get', 'patch'],
    reason: 'scale the workload a scaleTargetRef names, through its scale subresource and nothing else' })),
  { group: 'autoscaling', resource: 'horizontalpodautoscalers', verbs: ['list', 'watch', 'patch'],
    reason: 'see an autoscaler on a scaleTargetRef, to leave it the replicas, and set the bounds of the one ' +
      'spec.horizontalPodAutoscaler names' },
  { group: '', resource: 'services', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    reason: 'expose the container when spec.service is set, and remove the Service when it is not' },
];

/** The custom resources the install lets TDSets scale (--tdset-scale-resources), and what scaling them takes. */
export const configuredPermissions = (settings: Pick<ControllerOptions, 'tdsetScaleResources'>): Permission[] =>
  scaleResourcePermissions(parseScaleResources(settings.tdsetScaleResources));
