import type { CatalogEntry } from '../catalog.ts';
import { permissions } from './permissions.ts';
import { ClusterPodAlert } from './schema.ts';

export const clusterPodAlert: CatalogEntry = {
  name: 'clusterpodalert',
  kind: ClusterPodAlert,
  permissions,
  operator: async () => (await import('./reconcile.ts')).clusterPodAlertOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).clusterPodAlertSmoke,
};
