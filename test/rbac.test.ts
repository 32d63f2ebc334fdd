// The synthesized RBAC is exactly enough: each operator, run as its ServiceAccount with the install's args, does
// its whole job under the synthesized Role, and fails to when any single rule is taken out of it.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { catalog, type CatalogEntry } from '../controller/operators/catalog.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
import { installCrds, startOperator, synthesizeInstall } from './support/operator.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
let scratch: string;
const cleanups: (() => Promise<void>)[] = [];

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keelson-rbac-test-'));
  await installCrds(cluster);
});
after(async () => {
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

/** Runs the operator's smoke test as its ServiceAccount; `failure` says why it did not do its job, if it did not. */
async function runSmoke(entry: CatalogEntry, omitRule?: number): Promise<{ failure?: string; forbidden: number }> {
  const { name: namespace, cleanup } = await freshNamespace(cluster, `rbac-${entry.name}`);
  cleanups.push(cleanup);
  const [smoke, controller] = await Promise.all([entry.smoke(),
    startOperator(cluster, namespace, [entry.name], scratch, omitRule === undefined ? {} : { omitRule })]);
  try {
    let failure = await smoke(cluster, namespace, omitRule === undefined ? 60_000 : 20_000)
      .then(() => undefined, (e: Error) => e.message);
    const forbidden = () => controller.metric('keelson_client_requests_total', { code: '403' });
    if (failure === undefined || omitRule === undefined) return { failure, forbidden: await forbidden() };
    // Under load the refused call may come after the smoke test gave up (a JVM attach takes its time): wait for it.
    const refused = await waitFor('a call refused for want of the rule', async () => (await forbidden()) || undefined,
      { timeoutMs: 40_000 }).catch((error: Error) => {
      // Kept with the failure: what the controller was doing when no refusal was seen.
      failure += `; then ${error.message}; the controller's last lines:\n${controller.describe()}`;
      return 0;
    });
    return { failure, forbidden: refused };
  } finally {
    // Deleted while the controller runs, which takes any finalizer off (or gives up on it, saying why).
    await cluster.kubectl(['delete', '-n', namespace, 'keelson', '--all', '--timeout=30s'], { allowFailure: true });
    await controller.stop();
  }
}

describe('synthesized RBAC against the real apiserver', () => {
  for (const entry of catalog) {
    const { name } = entry;
    it(`lets ${name} do its whole job without a single 403, and no rule can be spared`, async () => {
      const { rules } = synthesizeInstall('any', [name]);
      const [full, ...without] = await Promise.all([runSmoke(entry), ...rules.map((_, i) => runSmoke(entry, i))]);
      assert.equal(full.failure, undefined, `${name} did not do its job under the full Role`);
      assert.equal(full.forbidden, 0, `${name} was refused under the full Role`);
      without.forEach((result, i) => {
        const rule = JSON.stringify(rules[i]);
        assert.ok(result.failure, `${name} still did its job without rule ${rule}`);
        assert.ok(result.forbidden > 0, `${name} failed without rule ${rule}, but not for want of it: ${result.failure}`);
      });
    });
  }
});
