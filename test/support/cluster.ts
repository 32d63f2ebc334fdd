import { randomBytes } from 'node:crypto';
import { LocalCluster } from '../../cluster/cluster.ts';
import { simulatedPodsAnnotations } from '../../cluster/components.ts';
import { waitFor } from '../../cluster/wait.ts';

/** The cluster `npm test` started (or reused) for this run. */
export function testCluster(): LocalCluster {
  const dir = process.env.KEELSON_CLUSTER_DIR;
  const cluster = dir ? LocalCluster.attach(dir) : undefined;
  if (!cluster) throw new Error('no local cluster for this test: run it through `npm test`');
  return cluster;
}

/** On cluster-wide objects a test makes for one namespace: deleted with it. */
export const testNamespaceLabel = 'keelson.dev/test-namespace';

/**
 * A fresh namespace for one test file, ready for Pods (its default ServiceAccount exists). Its pods are simulated
 * (kwok nodes: logs and exec served as the test says) unless `pods` is 'real' (the real node: containers run).
 * Deleted by `cleanup`, without waiting, so that tests do not pay for namespace finalization.
 */
export async function freshNamespace(cluster: LocalCluster, prefix: string,
  { pods = 'simulated' }: { pods?: 'simulated' | 'real' } = {}): Promise<{ name: string; cleanup: () => Promise<void> }> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1',
    kind: 'Namespace', metadata: { name, ...(pods === 'simulated' ? { annotations: simulatedPodsAnnotations } : {}) } }) });
  await waitFor(`the default ServiceAccount in ${name}`,
    async () => (await cluster.kubectl(['get', 'serviceaccount', 'default', '-n', name], { allowFailure: true })).code === 0);
  return {
    name,
    cleanup: async () => {
      await cluster.kubectl(['delete', 'namespace', name, '--wait=false'], { allowFailure: true });
      // What tests granted cluster-wide for the namespace goes with it (startOperator's roles).
      await cluster.kubectl(['delete', 'clusterrolebinding,clusterrole', '-l', `${testNamespaceLabel}=${name}`,
        '--ignore-not-found'], { allowFailure: true });
    },
  };
}
