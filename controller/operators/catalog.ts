// The API's kinds, and every operator the controller runs by the name --controllers takes, with what the install
// needs of it: its kind and its permissions. Charts read this; it imports nothing that runs.
import type { KindDefinition } from '../api/kind.ts';
import type { Permission } from '../api/permissions.ts';
import { PodAlert } from './podalert/schema.ts';
import { permissions as podAlertPermissions } from './podalert/permissions.ts';
import { PodBuggerTool } from './podbuggertool/schema.ts';
import { permissions as podBuggerToolPermissions } from './podbuggertool/permissions.ts';
import { PostgresCluster } from './postgrescluster/schema.ts';
import { permissions as postgresClusterPermissions } from './postgrescluster/permissions.ts';
import { PrometheusJmxExporter } from './prometheusjmxexporter/schema.ts';
import { permissions as prometheusJmxExporterPermissions } from './prometheusjmxexporter/permissions.ts';
import { TDSet } from './tdset/schema.ts';
import { permissions as tdsetPermissions } from './tdset/permissions.ts';

/** Every kind of keelson.dev/v1alpha1; each has a CRD in the install. */
export const kinds: readonly KindDefinition<any, any>[] = [TDSet, PodBuggerTool, PodAlert, PostgresCluster, PrometheusJmxExporter];

export interface CatalogEntry {
  /** The name --controllers takes. */
  name: string;
  kind: KindDefinition<any, any>;
  permissions: Permission[];
}

/** The operators the controller runs; controller/operators/registry.ts holds their code under the same names. */
export const catalog: readonly CatalogEntry[] = [
  { name: 'tdset', kind: TDSet, permissions: tdsetPermissions },
  { name: 'podbuggertool', kind: PodBuggerTool, permissions: podBuggerToolPermissions },
  { name: 'podalert', kind: PodAlert, permissions: podAlertPermissions },
  { name: 'postgrescluster', kind: PostgresCluster, permissions: postgresClusterPermissions },
  { name: 'prometheusjmxexporter', kind: PrometheusJmxExporter, permissions: prometheusJmxExporterPermissions },
];

export const operatorNames = catalog.map((entry) => entry.name);
