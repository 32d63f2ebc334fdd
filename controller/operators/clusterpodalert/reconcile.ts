import { alertOperator, type AlertKind } from '../podalert/reconcile.ts';
import { permissions } from './permissions.ts';
import { ClusterPodAlert } from './schema.ts';

export const clusterPodAlertOperator = alertOperator({ name: 'clusterpodalert',
  definition: ClusterPodAlert as AlertKind['definition'], permissions });
