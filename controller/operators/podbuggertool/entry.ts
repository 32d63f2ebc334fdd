import type { CatalogEntry } from '../catalog.ts';
import { permissions } from './permissions.ts';
import { PodBuggerTool } from './schema.ts';

export const podBuggerTool: CatalogEntry = {
  name: 'podbuggertool',
  kind: PodBuggerTool,
  permissions,
  operator: async () => (await import('./reconcile.ts')).podBuggerToolOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).podBuggerToolSmoke,
};
