// The shortest run that touches every permission PodAlert declares: pods watched, a log tail read, the webhook
// Secret read and a message delivered, status written, an Event recorded.
import { createServer } from 'node:http';
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { serveLogs } from '../../../cluster/kwok.ts';
import { installSimulationStages, simulateLabel } from '../../../cluster/stages.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function podAlertSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  let delivered = 0;
  const hook = createServer((req, res) => req.resume().on('end', () => {
    delivered++;
    res.end('ok');
  }));
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  try {
    await installSimulationStages(cluster);
    const url = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;
    await cluster.kubectl(['create', 'secret', 'generic', 'hook', `--from-literal=url=${url}`, '-n', namespace]);
    await serveLogs(cluster, { namespace, pod: 'smoke' }, 'smoke', ['now'], ['before', 'crash']);
    await cluster.kubectl(['run', 'smoke', '--image=registry.example/app:1', `--labels=${simulateLabel}=crash-loop`, '-n', namespace]);
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PodAlert',
      metadata: { name: 'smoke', namespace }, spec: { alerts: { checkRunningPods: true }, gracePeriodSeconds: 0,
        webhook: { secretRef: { name: 'hook', key: 'url' } } } }) });
    const get = (...args: string[]) => cluster.getJson(namespace, ...args);
    await waitFor(`PodAlert smoke in ${namespace} reconciled in full`, async () => {
      const [podAlert, events] = await Promise.all([get('pa', 'smoke'),
        get('events.events.k8s.io', '--field-selector', 'regarding.name=smoke')]);
      return podAlert?.status?.alerts?.[0]?.logTail === 'before\ncrash\n' && delivered === 1 &&
        events?.items.some((e: { reason: string }) => e.reason === 'Unhealthy');
    }, { timeoutMs });
  } finally {
    await new Promise((resolve) => hook.close(resolve));
  }
}
