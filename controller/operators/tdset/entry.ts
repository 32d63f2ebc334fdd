import type { CatalogEntry } from '../catalog.ts';
import { configuredPermissions, permissions } from './permissions.ts';
import { TDSet } from './schema.ts';

export const tdset: CatalogEntry = {
  name: 'tdset',
  kind: TDSet,
  permissions,
  configuredPermissions,
  operator: async () => (await import('./reconcile.ts')).tdsetOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).tdsetSmoke,
};
