import type { CatalogEntry } from '../catalog.ts';
import { permissions } from './permissions.ts';
import { PrometheusJmxExporter } from './schema.ts';

export const prometheusJmxExporter: CatalogEntry = {
  name: 'prometheusjmxexporter',
  kind: PrometheusJmxExporter,
  permissions,
  operator: async () => (await import('./reconcile.ts')).prometheusJmxExporterOperator,
  sample: async () => (await import('./sample.ts')).sample,
  smoke: async () => (await import('./smoke.ts')).prometheusJmxExporterSmoke,
};
