// The shortest run that touches every permission PodBuggerTool declares: a ready pod found, a debug container
// added, status written, an Event recorded.
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function podBuggerToolSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  await cluster.kubectl(['run', 'smoke', '--image=registry.example/app:1', '--labels=app=smoke', '-n', namespace]);
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
    kind: 'PodBuggerTool', metadata: { name: 'smoke', namespace }, spec: { label: 'app=smoke', image: 'busybox:1.36' } }) });
  const get = (...args: string[]) => cluster.getJson(namespace, ...args);
  await waitFor(`PodBuggerTool smoke in ${namespace} reconciled in full`, async () => {
    const [tool, pod, events] = await Promise.all([get('pbt', 'smoke'), get('pod', 'smoke'),
      get('events.events.k8s.io', '--field-selector', 'regarding.name=smoke')]);
    return pod?.spec.ephemeralContainers?.length === 1 && tool?.status?.injectedPods === 1 &&
      events?.items.some((e: { reason: string }) => e.reason === 'Injected');
  }, { timeoutMs });
}
