// The shortest run that touches every permission PodAlert (or ClusterPodAlert) declares: pods (and Jobs) watched, a log tail read, the
// webhook Secret read and a message delivered, Alertmanager's credentials and CA read and its alert posted, status
// written, an Event recorded.
import { createServer } from 'node:http';
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { serveLogs } from '../../../cluster/kwok.ts';
import { installSimulationStages, simulateLabel } from '../../../cluster/stages.ts';
import { waitFor } from '../../../cluster/wait.ts';

/** What a smoke test of a PodAlert-like kind applies and reads: its object, given the spec, and where its Events go. */
export interface SmokeSubject {
  kind: 'PodAlert' | 'ClusterPodAlert';
  name: string;
  /** Its metadata and any spec fields of its own; the references given are in `namespace`. */
  object(spec: Record<string, unknown>): Record<string, unknown>;
  /** Where its Events are: its namespace, or default for a cluster-scoped object (the only one the API allows). */
  eventsNamespace: string;
}

export function podAlertSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  return alertSmoke(cluster, namespace, timeoutMs, { kind: 'PodAlert', name: 'smoke', eventsNamespace: namespace,
    object: (spec) => ({ metadata: { name: 'smoke', namespace }, spec }) });
}

export async function alertSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number, subject: SmokeSubject):
Promise<void> {
  let delivered = 0;
  let posted = 0;
  const hook = createServer((req, res) => req.resume().on('end', () => {
    if (req.url === '/hook') delivered++;
    else if (req.headers.authorization === 'Bearer smoke-token') posted++;
    res.end('ok');
  }));
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  try {
    await installSimulationStages(cluster);
    const url = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;
    await cluster.kubectl(['create', 'secret', 'generic', 'hook', `--from-literal=url=${url}`, '-n', namespace]);
    await cluster.kubectl(['create', 'secret', 'generic', 'alertmanager', '--from-literal=token=smoke-token', '-n', namespace]);
    // Read whatever the scheme; trusted only for https.
    await cluster.kubectl(['create', 'configmap', 'alertmanager-ca', '--from-literal=ca.crt=-----BEGIN CERTIFICATE-----',
      '-n', namespace]);
    await serveLogs(cluster, { namespace, pod: 'smoke' }, 'smoke', ['now'], ['before', 'crash']);
    await cluster.kubectl(['run', 'smoke', '--image=registry.example/app:1', `--labels=${simulateLabel}=crash-loop`, '-n', namespace]);
    const ref = <R extends object>(r: R) => subject.kind === 'ClusterPodAlert' ? { ...r, namespace } : r;
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: subject.kind, ...subject.object({ alerts: { checkRunningPods: true }, gracePeriodSeconds: 0,
        webhook: { secretRef: ref({ name: 'hook', key: 'url' }) }, alertmanager: { url: url.replace(/\/hook$/, '/alertmanager'),
          credentialsSecretRef: ref({ name: 'alertmanager' }),
          ca: { configMapRef: ref({ name: 'alertmanager-ca', key: 'ca.crt' }) } } }) }) });
    const get = (of: string, ...args: string[]) => cluster.getJson(of, ...args);
    await waitFor(`${subject.kind} ${subject.name} reconciled in full`, async () => {
      const [podAlert, events] = await Promise.all([get(namespace, subject.kind.toLowerCase(), subject.name),
        get(subject.eventsNamespace, 'events.events.k8s.io', '--field-selector', `regarding.name=${subject.name}`)]);
      return podAlert?.status?.alerts?.[0]?.logTail === 'before\ncrash\n' && delivered === 1 && posted >= 1 &&
        events?.items.some((e: { reason: string }) => e.reason === 'Unhealthy');
    }, { timeoutMs });
  } finally {
    await new Promise((resolve) => hook.close(resolve));
  }
}
