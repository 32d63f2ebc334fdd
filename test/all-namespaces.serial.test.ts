// The default install watches every namespace: one controller, started without --namespace as the install's
// ServiceAccount under its ClusterRole, does each operator's whole job in namespaces it was never told of. Serial:
// it sees every namespace, other tests' included.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { catalog } from '../controller/operators/catalog.ts';
import { controllerName } from '../charts/install.ts';
import { clusterScopedRoleName } from '../charts/operator-install.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
import type { ControllerProcess } from './support/controller-process.ts';
import { installCrds, startOperator } from './support/operator.ts';

const cluster = testCluster();
let scratch: string;
let controller: ControllerProcess;
const cleanups: (() => Promise<void>)[] = [];
let homeName: string;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keelson-all-namespaces-test-'));
  await installCrds(cluster);
  const home = await freshNamespace(cluster, 'all-namespaces');
  cleanups.push(home.cleanup);
  homeName = home.name;
  controller = await startOperator(cluster, home.name, catalog.map((e) => e.name), scratch, { allNamespaces: true });
});
after(async () => {
  await controller?.stop();
  // Named for the home namespace, as startOperator names cluster-wide roles.
  await cluster.kubectl(['delete', 'clusterrolebinding,clusterrole', `${controllerName}-${homeName}`,
    `${clusterScopedRoleName(controllerName)}-${homeName}`, '--ignore-not-found']);
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

describe('one controller watching every namespace, as the default install runs it', () => {
  for (const { name, smoke } of catalog) {
    it(`does ${name}'s whole job in a namespace of its own`, async () => {
      const { name: namespace, cleanup } = await freshNamespace(cluster, `all-${name}`);
      cleanups.push(cleanup);
      await (await smoke())(cluster, namespace, 90_000);
    });
  }
});
