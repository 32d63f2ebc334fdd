// Tests of real workloads run on the local cluster's real node; where the machine gives none, they are skipped with
// the reason (test/run.ts says it once, and fails the run under CI).
import type { LocalCluster } from '../../cluster/cluster.ts';
import { waitFor, type WaitOptions } from '../../cluster/wait.ts';

/** Why the cluster has no real node, for node:test's `skip`; false when it has one. */
export function withoutRealNode(cluster: LocalCluster): string | false {
  const { realNode } = cluster.state;
  return 'skipped' in realNode ? `no real node: ${realNode.skipped}` : false;
}

/** The pod, once `ready` says so of it; fails at once, with its events, if it cannot start. */
export async function waitForPod(cluster: LocalCluster, namespace: string, name: string, what: string,
  ready: (pod: any) => boolean, options: WaitOptions = { timeoutMs: 90_000 }): Promise<any> {
  return waitFor(`pod ${name} ${what}`, async () => {
    const pod = await cluster.getJson(namespace, 'pod', name);
    return pod && ready(pod) ? pod : undefined;
  }, options).catch(async (error: Error) => {
    const events = await cluster.kubectl(['get', 'events', '-n', namespace, '--field-selector',
      `involvedObject.name=${name}`], { allowFailure: true });
    throw new Error(`${error.message}\n${events.stdout}`);
  });
}

export const isReady = (pod: any): boolean =>
  pod.status?.conditions?.some((c: any) => c.type === 'Ready' && c.status === 'True') ?? false;
