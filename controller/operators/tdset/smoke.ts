// The shortest run that touches every permission TDSet declares: a Deployment and a Service created, another
// Deployment scaled through its scale subresource under a finalizer, status written, an Event recorded. Used to
// prove the synthesized RBAC is both enough and no more than needed.
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function tdsetSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  const hour = new Date().getUTCHours();
  const tdset = (name: string, spec: object) => ({ apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet',
    metadata: { name, namespace }, spec });
  const target = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'smoke-target', namespace },
    spec: { replicas: 1, serviceName: 'smoke-target', selector: { matchLabels: { app: 'smoke-target' } },
      template: { metadata: { labels: { app: 'smoke-target' } }, spec: { containers: [{ name: 'app',
        image: 'registry.example/smoke:1' }] } } } };
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    tdset('smoke', { container: { image: 'registry.example/smoke:1', port: 8080 }, service: { port: 80 },
      schedulingConfig: [{ startTime: hour, endTime: (hour + 2) % 24, replica: 2 }] }),
    target,
    tdset('smoke-scaled', { scaleTargetRef: { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'smoke-target' },
      schedule: [{ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'], start: '00:00', end: '00:00', replicas: 2 }] }),
  ] }) });
  const get = (...args: string[]) => cluster.getJson(namespace, ...args);
  await waitFor(`TDSets smoke and smoke-scaled in ${namespace} reconciled in full`, async () => {
    const [tdset, scaledTdset, deployment, scaled, service, events] = await Promise.all([get('tds', 'smoke'),
      get('tds', 'smoke-scaled'), get('deployment', 'smoke'), get('statefulset', 'smoke-target'), get('service', 'smoke'),
      get('events.events.k8s.io', '--field-selector', 'regarding.name=smoke')]);
    const ready = tdset?.status?.conditions?.find((c: { type: string }) => c.type === 'Ready');
    return deployment?.spec.replicas === 2 && service !== undefined && ready?.status === 'True' &&
      events?.items.some((e: { reason: string }) => e.reason === 'Created') && scaled?.spec.replicas === 2 &&
      scaledTdset?.metadata.finalizers?.includes('keelson.dev/restore-replicas');
  }, { timeoutMs });
  // Gone while the controller runs, which takes its finalizer off: nothing is left to hold the namespace.
  await cluster.kubectl(['delete', '-n', namespace, 'tds', 'smoke-scaled', '--timeout=30s']);
}
