// The shortest run that touches every permission TDSet declares: a Deployment and a Service created, status written,
// an Event recorded. Used to prove the synthesized RBAC is both enough and no more than needed.
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function tdsetSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  const hour = new Date().getUTCHours();
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet',
    metadata: { name: 'smoke', namespace }, spec: { container: { image: 'registry.example/smoke:1', port: 8080 },
      service: { port: 80 }, schedulingConfig: [{ startTime: hour, endTime: (hour + 2) % 24, replica: 2 }] } }) });
  const get = (...args: string[]) => cluster.getJson(namespace, ...args);
  await waitFor(`TDSet smoke in ${namespace} reconciled in full`, async () => {
    const [tdset, deployment, service, events] = await Promise.all([get('tds', 'smoke'),
      get('deployment', 'smoke'), get('service', 'smoke'),
      get('events.events.k8s.io', '--field-selector', 'regarding.name=smoke')]);
    const ready = tdset?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
    return deployment?.spec.replicas === 2 && service !== undefined && ready?.status === 'True' &&
      events?.items.some((e: { reason: string }) => e.reason === 'Created');
  }, { timeoutMs });
}
