// rbac.test.ts for operators of cluster-scoped kinds (ClusterPodAlert): each run's controller watches every namespace
// and would reconcile every other run's objects, so the runs go one at a time, alone on the cluster.
import { describe, it } from 'node:test';
import { catalog } from '../controller/operators/catalog.ts';
import { testCluster } from './support/cluster.ts';
import { synthesizeInstall } from './support/operator.ts';
import { assertExactlyEnough, smokeRunner, type SmokeRun } from './support/rbac.ts';

const smoke = smokeRunner(testCluster());

describe('synthesized RBAC of cluster-scoped kinds against the real apiserver', () => {
  for (const entry of catalog.filter((e) => e.kind.scope === 'Cluster')) {
    const { name } = entry;
    // One run after another: the full Role's, and one without each rule (20 s and a wait for the refusal each).
    it(`lets ${name} do its whole job without a single 403, and no rule can be spared`, { timeout: 1_200_000 }, async () => {
      const { rules } = synthesizeInstall('any', [name], { allNamespaces: true });
      const runs: SmokeRun[] = [];
      for (const omitRule of [undefined, ...rules.keys()]) runs.push(await smoke(entry, omitRule));
      assertExactlyEnough(name, rules, runs);
    });
  }
});
