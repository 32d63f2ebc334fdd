// The shortest run that touches every permission PrometheusJmxExporter declares: the config read, a JVM found and
// the agent loaded through pods/exec, the pod annotated, its PodMonitor made, status written, an Event recorded, and
// on deletion the finalizer's clean-up.
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { execReady, javaContainer, reportContainerStarted } from '../../../test/support/jvm.ts';
import { freePort } from '../../../cluster/ports.ts';
import { installPodMonitorCrd } from '../../../test/support/prometheus-operator.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function prometheusJmxExporterSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number):
Promise<void> {
  const ref = { namespace, pod: 'smoke' };
  const container = await javaContainer(cluster, ref);
  try {
    await installPodMonitorCrd(cluster);
    await cluster.kubectl(['create', 'configmap', 'jmx', '--from-literal=config.yaml=rules: []', '-n', namespace]);
    await cluster.kubectl(['run', 'smoke', '--image=registry.example/java-app:1', '--labels=app=smoke', '-n', namespace]);
    await container.startJvm();
    const get = (...args: string[]) => cluster.getJson(namespace, ...args);
    await waitFor('pod smoke running', async () => (await get('pod', 'smoke'))?.status?.phase === 'Running', { timeoutMs });
    await execReady(cluster, ref);
    await reportContainerStarted(cluster, ref, 'containerd://smoke');
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PrometheusJmxExporter', metadata: { name: 'smoke', namespace }, spec: { labelSelector: { app: 'smoke' },
        port: await freePort(), bindAddress: '127.0.0.1', config: { configMapName: 'jmx', configMapKey: 'config.yaml' },
        podMonitor: { labels: { release: 'prometheus' } } } }) });
    await waitFor(`PrometheusJmxExporter smoke in ${namespace} reconciled in full`, async () => {
      const [exporter, pod, events, podMonitor] = await Promise.all([get('pje', 'smoke'), get('pod', 'smoke'),
        get('events.events.k8s.io', '--field-selector', 'regarding.name=smoke'), get('podmonitor', 'smoke')]);
      return exporter?.status?.endpointCount === 1 && pod?.metadata.annotations?.['prometheus.io/scrape'] === 'true' &&
        events?.items.some((e: { reason: string }) => e.reason === 'Injected') && podMonitor !== undefined;
    }, { timeoutMs });
    await cluster.kubectl(['delete', 'pje', 'smoke', '-n', namespace, '--wait=false']);
    await waitFor(`PrometheusJmxExporter smoke in ${namespace} cleaned up`, async () =>
      !(await get('pje', 'smoke')) && !(await get('pod', 'smoke'))?.metadata.annotations?.['prometheus.io/scrape'], { timeoutMs });
  } finally {
    await container.cleanup();
  }
}
