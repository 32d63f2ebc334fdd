import type { CatalogEntry } from '../catalog.ts';
import { permissions } from './permissions.ts';
import { PodAlert } from './schema.ts';

export const podAlert: CatalogEntry = {
  name: 'podalert',
  kind: PodAlert,
  permissions,
  operator: async () => (await import('./reconcile.ts')).podAlertOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).podAlertSmoke,
};
