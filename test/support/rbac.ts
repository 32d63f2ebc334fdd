// One operator's smoke test, run as its synthesized ServiceAccount: with the install's RBAC whole, or less one rule.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { LocalCluster } from '../../cluster/cluster.ts';
import type { CatalogEntry } from '../../controller/operators/catalog.ts';
import { waitFor } from '../../cluster/wait.ts';
import { freshNamespace } from './cluster.ts';
import { installCrds, startOperator } from './operator.ts';

export interface SmokeRun {
  /** Why the operator did not do its job, if it did not. */
  failure?: string;
  /** Its calls the apiserver refused. */
  forbidden: number;
}

/**
 * A test file's smoke runs, from its `before` (the CRDs installed) to its `after` (their namespaces deleted): each
 * runs the operator's smoke test in a fresh namespace, the controller watching it, or every namespace for an
 * operator of a cluster-scoped kind.
 */
export function smokeRunner(cluster: LocalCluster): (entry: CatalogEntry, omitRule?: number) => Promise<SmokeRun> {
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
  return (entry, omitRule) => runSmoke(cluster, entry, scratch, cleanups, omitRule);
}

async function runSmoke(cluster: LocalCluster, entry: CatalogEntry, scratch: string,
  cleanups: (() => Promise<void>)[], omitRule?: number): Promise<SmokeRun> {
  const { name: namespace, cleanup } = await freshNamespace(cluster, `rbac-${entry.name}`);
  cleanups.push(cleanup);
  const allNamespaces = entry.kind.scope === 'Cluster';
  const [smoke, controller] = await Promise.all([entry.smoke(),
    startOperator(cluster, namespace, [entry.name], scratch, { allNamespaces, ...omitRule === undefined ? {} : { omitRule } })]);
  try {
    let failure = await smoke(cluster, namespace, omitRule === undefined ? 60_000 : 20_000)
      .then(() => undefined, (e: Error) => e.message);
    const forbidden = () => controller.metric('keelson_client_requests_total', { code: '403' });
    if (failure === undefined || omitRule === undefined) return { failure, forbidden: await forbidden() };
    // Under load the refused call may come long after the smoke test gave up (a JVM attach, or a PostgresCluster
    // member's first exec behind a dozen other runs of it): wait for it. Only a run with no refusal waits this long.
    const refused = await waitFor('a call refused for want of the rule', async () => (await forbidden()) || undefined,
      { timeoutMs: 120_000 }).catch((error: Error) => {
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

/** The smoke passed without a 403 under every rule, and failed, for want of it, without any one of them. */
export function assertExactlyEnough(name: string, rules: object[], [full, ...without]: SmokeRun[]): void {
  assert.equal(full!.failure, undefined, `${name} did not do its job under the full Role`);
  assert.equal(full!.forbidden, 0, `${name} was refused under the full Role`);
  without.forEach((result, i) => {
    const rule = JSON.stringify(rules[i]);
    assert.ok(result.failure, `${name} still did its job without rule ${rule}`);
    assert.ok(result.forbidden > 0, `${name} failed without rule ${rule}, but not for want of it: ${result.failure}`);
  });
}
