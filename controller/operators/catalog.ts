// Every operator the controller runs, by the name --controllers takes, in the order the install lists them. An
// operator is one folder with an entry.ts, and one line here. Charts read this: loading it loads no operator's code.
import type { LocalCluster } from '../../cluster/cluster.ts';
import type { ControllerOptions } from '../api/flags.ts';
import type { KindDefinition } from '../api/kind.ts';
import type { Permission } from '../api/permissions.ts';
import type { SampleWriter } from '../api/samples.ts';
import type { Operator } from '../runtime/manager.ts';
import type { DeferredOperator } from '../runtime/run.ts';
import { clusterPodAlert } from './clusterpodalert/entry.ts';
import { podAlert } from './podalert/entry.ts';
import { podBuggerTool } from './podbuggertool/entry.ts';
import { postgresCluster } from './postgrescluster/entry.ts';
import { prometheusJmxExporter } from './prometheusjmxexporter/entry.ts';
import { tdset } from './tdset/entry.ts';

/**
 * The shortest run that touches every permission an operator declares, in a namespace of its own.
 * @internal test code: left out of the package's type declarations, as smoke.js is left out of the package.
 */
export type SmokeTest = (cluster: LocalCluster, namespace: string, timeoutMs: number) => Promise<void>;

export interface CatalogEntry {
  /** The name --controllers takes. */
  name: string;
  kind: KindDefinition<any, any>;
  permissions: Permission[];
  /** What its flags add, as the install writes them (a resource the install names); the operator declares the same. */
  configuredPermissions?(options: Partial<ControllerOptions>): Permission[];
  /**
   * Its code, loaded where it runs.
   * @internal left out of the package's declarations, so that a cdk8s app's types never reach the runtime's
   * dependencies (the runtime is keelson/runtime's, with its own declarations).
   */
  operator(): Promise<Operator<ControllerOptions>>;
  /** Its example in dist/samples/, with the workloads it acts on. */
  sample(): Promise<SampleWriter>;
  /**
   * Test code, never in the image or the package: proves the synthesized RBAC both enough and no more than needed.
   * @internal
   */
  smoke(): Promise<SmokeTest>;
}

export const catalog: readonly CatalogEntry[] = [tdset, podBuggerTool, podAlert, clusterPodAlert, postgresCluster,
  prometheusJmxExporter];

/** Every kind of keelson.dev/v1alpha1; each has a CRD in the install. */
export const kinds = catalog.map((entry) => entry.kind);

export const operatorNames = catalog.map((entry) => entry.name);

/** Every operator in the catalog, in its order, each loaded only if it runs. @internal as `operator` is. */
export const deferredOperators: DeferredOperator<ControllerOptions>[] = catalog.map((entry) =>
  ({ name: entry.name, load: entry.operator }));
