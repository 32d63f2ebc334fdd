// The shortest run that touches every permission ClusterPodAlert declares: PodAlert's, over a namespace it picks by
// label, with namespaces watched. Its object is cluster-wide: deleted at the end, so that no later run sees it.
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { alertSmoke } from '../podalert/smoke.ts';

export async function clusterPodAlertSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  const name = `smoke-${namespace}`;
  await cluster.kubectl(['label', 'namespace', namespace, `keelson.dev/smoke=${namespace}`]);
  try {
    await alertSmoke(cluster, namespace, timeoutMs, { kind: 'ClusterPodAlert', name, eventsNamespace: 'default',
      object: (spec) => ({ metadata: { name }, spec: { ...spec,
        namespaceSelector: { matchLabels: { 'keelson.dev/smoke': namespace } } } }) });
  } finally {
    await cluster.kubectl(['delete', 'clusterpodalert', name, '--ignore-not-found', '--timeout=30s'], { allowFailure: true });
  }
}
