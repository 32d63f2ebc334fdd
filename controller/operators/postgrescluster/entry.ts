import type { CatalogEntry } from '../catalog.ts';
import { permissions } from './permissions.ts';
import { PostgresCluster } from './schema.ts';

export const postgresCluster: CatalogEntry = {
  name: 'postgrescluster',
  kind: PostgresCluster,
  permissions,
  operator: async () => (await import('./reconcile.ts')).postgresClusterOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).postgresClusterSmoke,
};
