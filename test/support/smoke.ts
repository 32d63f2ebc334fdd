// Each operator's smoke test: the shortest run that touches every permission it declares, in a namespace of its own.
import type { LocalCluster } from '../cluster/cluster.ts';
import { podAlertSmoke } from '../../controller/operators/podalert/smoke.ts';
import { podBuggerToolSmoke } from '../../controller/operators/podbuggertool/smoke.ts';
import { postgresClusterSmoke } from '../../controller/operators/postgrescluster/smoke.ts';
import { prometheusJmxExporterSmoke } from '../../controller/operators/prometheusjmxexporter/smoke.ts';
import { tdsetSmoke } from '../../controller/operators/tdset/smoke.ts';

export const smokeTests: Record<string, (cluster: LocalCluster, namespace: string, timeoutMs: number) => Promise<void>> = {
  tdset: tdsetSmoke,
  podbuggertool: podBuggerToolSmoke,
  podalert: podAlertSmoke,
  postgrescluster: postgresClusterSmoke,
  prometheusjmxexporter: prometheusJmxExporterSmoke,
};
