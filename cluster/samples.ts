// The samples on the local cluster, as `npm start` applies them: dist/samples/ with each public image the samples
// name replaced by the stand-in built here (nothing is pulled), in a namespace that enforces the restricted Pod
// Security Standard, so that what runs here is what any cluster enforcing it admits.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { sampleStandIns } from '../images/recipes.ts';
import { sampleNamespaceLabel } from '../controller/operators/clusterpodalert/sample.ts';
import type { LocalCluster } from './cluster.ts';
import { repoRoot } from './paths.ts';

/** `value` with every string equal to a public image the samples name replaced by its stand-in's reference. */
export function withStandIns<T>(value: T): T {
  if (typeof value === 'string') return (sampleStandIns[value]?.reference ?? value) as T;
  if (Array.isArray(value)) return value.map(withStandIns) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, withStandIns(v)])) as T;
  }
  return value;
}

/** The objects of dist/samples/, as written. */
export async function sampleObjects(): Promise<any[]> {
  const dir = join(repoRoot, 'dist/samples');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  return (await Promise.all(files.map(async (f) => loadAllYaml(await readFile(join(dir, f), 'utf8'))))).flat();
}

/**
 * Loads the stand-ins into the real node (which has the operator's image, that PostgreSQL members run their agent
 * from), then applies the samples in `namespace`, made to enforce the restricted standard (and picked by the
 * ClusterPodAlert sample). Resolves with what kubectl
 * warned of.
 */
export async function applySamples(cluster: LocalCluster, namespace: string): Promise<string> {
  for (const recipe of new Set(Object.values(sampleStandIns))) {
    console.error(`loading ${recipe.reference} into the node...`);
    await cluster.loadImage(recipe);
  }
  const restricted = Object.fromEntries(['enforce', 'warn', 'audit'].map((mode) =>
    [`pod-security.kubernetes.io/${mode}`, 'restricted']));
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1',
    kind: 'Namespace', metadata: { name: namespace, labels: { ...restricted, ...sampleNamespaceLabel } } }) });
  await cluster.kubectl(['wait', '--for=condition=Established', '--all', 'crd', '--timeout=60s']);
  const { stderr } = await cluster.kubectl(['apply', '--server-side', '-n', namespace, '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: withStandIns(await sampleObjects()) }) });
  return stderr;
}
