// The synthesized RBAC is exactly enough: each operator, run as its ServiceAccount with the install's args, does
// its whole job under the synthesized Role, and fails to when any single rule is taken out of it. Operators of
// cluster-scoped kinds have their own file (rbac-cluster.serial.test.ts): their runs cannot share the cluster.
import { describe, it } from 'node:test';
import { catalog } from '../controller/operators/catalog.ts';
import { testCluster } from './support/cluster.ts';
import { synthesizeInstall } from './support/operator.ts';
import { assertExactlyEnough, smokeRunner } from './support/rbac.ts';

const smoke = smokeRunner(testCluster());

describe('synthesized RBAC against the real apiserver', () => {
  for (const entry of catalog.filter((e) => e.kind.scope !== 'Cluster')) {
    const { name } = entry;
    it(`lets ${name} do its whole job without a single 403, and no rule can be spared`, async () => {
      const { rules } = synthesizeInstall('any', [name]);
      assertExactlyEnough(name, rules, await Promise.all([smoke(entry), ...rules.map((_, i) => smoke(entry, i))]));
    });
  }
});
