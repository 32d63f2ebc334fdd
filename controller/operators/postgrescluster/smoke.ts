// The shortest run that touches every permission PostgresCluster declares: credentials, scripts, Services, member
// claims and pods, Events, the backup volume's repository host, the PodMonitor, a minor upgrade with its switchover
// (exec, relabelling), the backup CronJob an earlier version made removed, and a scale-down that removes a member
// with its volume, and the repository host and PodMonitor with it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalCluster } from '../../../cluster/cluster.ts';
import { serveMemberExec, staticVolumes } from '../../../test/support/postgres-pods.ts';
import { installPodMonitorCrd } from '../../../test/support/prometheus-operator.ts';
import { waitFor } from '../../../cluster/wait.ts';

export async function postgresClusterSmoke(cluster: LocalCluster, namespace: string, timeoutMs: number): Promise<void> {
  const scratch = await mkdtemp(join(tmpdir(), 'keelson-pgc-smoke-'));
  const storageClass = `keelson-${namespace}`;
  const cleanups: (() => void)[] = [];
  try {
    await Promise.all([staticVolumes(cluster, storageClass, 4), installPodMonitorCrd(cluster)]);
    const members = await serveMemberExec(cluster, namespace, 'smoke', ['smoke-0000', 'smoke-0001'], scratch);
    cleanups.push(members.stop);
    const apply = (spec: object) => cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({
      apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'smoke', namespace }, spec }) });
    const storage = { size: '1Gi', storageClassName: storageClass, keepOnScaleDown: false };
    const get = (...args: string[]) => cluster.getJson(namespace, ...args);
    const settled = (what: string, check: (status: any) => boolean) => waitFor(`PostgresCluster smoke in ${namespace}: ${what}`,
      async () => {
        const s = (await get('pgc', 'smoke'))?.status;
        // Running alone is not the whole job: members start even when a shared object could not be applied.
        const shared = s?.conditions?.find((c: { type: string }) => c.type === 'SharedObjectsReady');
        return s?.phase === 'Running' && shared?.status === 'True' && check(s);
      }, { timeoutMs });
    const podMonitor = { labels: { release: 'prometheus' } };
    await apply({ size: 2, version: '17.2', storage, backup: { schedule: '0 3 * * *' }, podMonitor });
    await settled('two members', (s) => s.readyMembers === 2);
    await waitFor('the PodMonitor and the PodDisruptionBudget', async () => Boolean(await get('podmonitor', 'smoke')) &&
      Boolean(await get('pdb', 'smoke')), { timeoutMs });
    await waitFor('the MemberAdded Events', async () => (await get('events.events.k8s.io', '--field-selector',
      'regarding.name=smoke'))?.items.some((e: { reason: string }) => e.reason === 'MemberAdded'), { timeoutMs });
    await waitFor('the repository host', async () => Boolean(await get('pod', 'smoke-repo')), { timeoutMs });
    const { uid } = (await get('pgc', 'smoke')).metadata;
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'batch/v1', kind: 'CronJob',
      metadata: { name: 'smoke-backups', namespace, labels: { 'keelson.dev/postgrescluster': 'smoke' },
        ownerReferences: [{ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', name: 'smoke', uid,
          controller: true }] },
      spec: { schedule: '0 3 * * *', jobTemplate: { spec: { template: { spec: { restartPolicy: 'Never',
        containers: [{ name: 'backup', image: 'postgres:17.2' }] } } } } } }) });
    await waitFor('the earlier version\'s backup CronJob removed', async () => !(await get('cronjob', 'smoke-backups')),
      { timeoutMs });
    await apply({ size: 2, version: '17.3', storage, backup: { schedule: '0 3 * * *' }, podMonitor });
    await settled('upgraded with a switchover', (s) => s.currentVersion === '17.3' && s.primary === 'smoke-0001' && s.readyMembers === 2);
    await apply({ size: 1, version: '17.3', storage });
    await settled('one member, no schedule', (s) => s.members.length === 1);
    await waitFor('the removed member\'s claim, the repository host and the PodMonitor gone', async () =>
      !(await get('pvc', 'smoke-0000')) && !(await get('pod', 'smoke-repo')) && !(await get('podmonitor', 'smoke')),
    { timeoutMs });
  } finally {
    cleanups.forEach((c) => c());
    await cluster.kubectl(['delete', 'pv', '-l', `keelson.dev/test-volumes=${storageClass}`, '--wait=false']);
    await rm(scratch, { recursive: true, force: true });
  }
}
