import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { grant as grantRules, type Rule } from '../../test/support/namespace.ts';
import { installCrds } from '../../test/support/operator.ts';
import { waitFor } from '../../cluster/wait.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;

/** Binds `user` in the namespace to exactly `rules` (replacing what they had). */
const grant = (user: string, rules: Rule[]) => grantRules(cluster, namespace, user, rules);

const own = (plural: string): Rule => ({ apiGroups: ['keelson.dev'], resources: [plural],
  verbs: ['get', 'create', 'update', 'patch'] });
const right = (resource: string, verb: string, group = '', resourceNames?: string[]): Rule =>
  ({ apiGroups: [group], resources: [resource], verbs: [verb], ...(resourceNames ? { resourceNames } : {}) });

/** `kubectl apply` of `object` as `user`; resolves with kubectl's error, or undefined when admitted. */
async function applyAs(user: string, object: { kind: string; metadata: { name: string }; spec: object }):
Promise<string | undefined> {
  const { code, stderr } = await cluster.kubectl(['apply', '--as', user, '-f', '-'], { allowFailure: true,
    input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', ...object, metadata: { ...object.metadata,
      ...object.kind.startsWith('Cluster') ? {} : { namespace } } }) });
  return code === 0 ? undefined : stderr.trim();
}

/** Waits until applying `object` as `user` is refused with `expected` in the message (a new grant or policy takes a moment). */
const refused = (user: string, object: Parameters<typeof applyAs>[1], expected: string) =>
  waitFor(`${user}'s ${object.kind} to be refused with "${expected}"`, async () =>
    (await applyAs(user, object))?.includes(expected) || undefined, { timeoutMs: 20_000 });

const admitted = async (user: string, object: Parameters<typeof applyAs>[1]) => {
  let error: string | undefined;
  await waitFor(`${user}'s ${object.kind} to be admitted`, async () => (error = await applyAs(user, object)) === undefined,
    { timeoutMs: 20_000 }).catch(() => assert.fail(`still refused: ${error}`));
};

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'admission'));
  await installCrds(cluster);
});
after(() => cleanup());

describe('requester authorization at admission', () => {
  it('admits a ClusterPodAlert only from a user who may read pods and logs in every namespace, and its Secret', async () => {
    const user = `cpa-user-${namespace}`;
    const alert = { kind: 'ClusterPodAlert', metadata: { name: user }, spec: { namespaceSelector: { matchLabels: { team: 'a' } },
      alerts: { checkRunningPods: true }, webhook: { secretRef: { name: 'hook', key: 'url', namespace } } } };
    try {
      // Pods of one namespace are not enough: the selector may pick any, now or later.
      await grantRules(cluster, undefined, user, [own('clusterpodalerts')]);
      await grant(user, [right('pods', 'list'), right('pods/log', 'get')]);
      await refused(user, alert, `${user} may not create or change this ClusterPodAlert: it needs list on pods in every namespace`);
      await grantRules(cluster, undefined, user, [own('clusterpodalerts'), right('pods', 'list')]);
      await refused(user, alert, 'it needs get on pods/log in every namespace');
      await grantRules(cluster, undefined, user, [own('clusterpodalerts'), right('pods', 'list'), right('pods/log', 'get')]);
      await refused(user, alert, `it needs get on secrets named hook in namespace ${namespace}`);
      await grant(user, [right('secrets', 'get', '', ['hook'])]);
      await admitted(user, alert);
      // A Secret in a namespace they may not read, they may not have the controller read either.
      const elsewhere = { ...alert, spec: { ...alert.spec, webhook: { secretRef: { name: 'hook', key: 'url',
        namespace: 'kube-system' } } } };
      await refused(user, elsewhere, 'it needs get on secrets named hook in namespace kube-system');
    } finally {
      await cluster.kubectl(['delete', `clusterpodalert/${user}`, `clusterrole/${user}`, `clusterrolebinding/${user}`,
        '--ignore-not-found'], { allowFailure: true });
    }
  });

  it('admits a PodBuggerTool only from a user who may add ephemeral containers, and a privileged profile only by grant', async () => {
    const tool = (profile: string) => ({ kind: 'PodBuggerTool', metadata: { name: 'debug' },
      spec: { label: 'app=course', image: 'busybox:1.36', profile } });
    await grant('pbt-user', [own('podbuggertools')]);
    await refused('pbt-user', tool('general'), 'pbt-user may not create or change this PodBuggerTool: it needs update ' +
      `or patch on pods/ephemeralcontainers in namespace ${namespace}`);
    // kubectl debug's right (patch) will do, as a controller's (update) would.
    await grant('pbt-user', [own('podbuggertools'), right('pods/ephemeralcontainers', 'patch')]);
    await admitted('pbt-user', tool('general'));
    await refused('pbt-user', tool('sysadmin'), 'it needs use on debugprofiles.keelson.dev named sysadmin');
    await grant('pbt-user', [own('podbuggertools'), right('pods/ephemeralcontainers', 'patch'),
      right('debugprofiles', 'use', 'keelson.dev', ['netadmin'])]);
    await refused('pbt-user', tool('sysadmin'), 'named sysadmin');
    await admitted('pbt-user', tool('netadmin'));
  });

  it('lets anyone change what is not the spec, so the controller and the garbage collector are never held up', async () => {
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PodBuggerTool', metadata: { name: 'by-admin' }, spec: { label: 'app=x', image: 'busybox:1.36' } }) });
    await grant('labeller', [own('podbuggertools')]);
    await refused('labeller', { kind: 'PodBuggerTool', metadata: { name: 'by-admin' },
      spec: { label: 'app=x', image: 'evil:1' } }, 'it needs update or patch on pods/ephemeralcontainers');
    await cluster.kubectl(['label', '--as', 'labeller', '-n', namespace, 'podbuggertool/by-admin', 'team=a']);
  });

  it('admits a PrometheusJmxExporter only from a user who may exec into pods', async () => {
    const exporter = { kind: 'PrometheusJmxExporter', metadata: { name: 'jvm' }, spec: { labelSelector: { app: 'java' },
      port: 9404, config: { configMapName: 'jmx', configMapKey: 'config.yaml' } } };
    await grant('pje-user', [own('prometheusjmxexporters')]);
    await refused('pje-user', exporter, 'it needs create on pods/exec');
    await grant('pje-user', [own('prometheusjmxexporters'), right('pods/exec', 'create')]);
    await refused('pje-user', exporter, 'it needs get on configmaps named jmx');
    await grant('pje-user', [own('prometheusjmxexporters'), right('pods/exec', 'create'), right('configmaps', 'get', '', ['jmx'])]);
    await admitted('pje-user', exporter);
  });

  it('admits a PodAlert that reads logs only from a user who may read them; one without log tails from anyone', async () => {
    const alert = (logLines?: number) => ({ kind: 'PodAlert', metadata: { name: `alert-${logLines ?? 'default'}` },
      spec: { alerts: { checkRunningPods: true }, ...(logLines === undefined ? {} : { logLines }) } });
    await grant('pa-user', [own('podalerts')]);
    await refused('pa-user', alert(0), 'it needs list on pods');
    await grant('pa-user', [own('podalerts'), right('pods', 'list')]);
    await refused('pa-user', alert(), 'it needs get on pods/log');
    await admitted('pa-user', alert(0));
    await grant('pa-user', [own('podalerts'), right('pods', 'list'), right('pods/log', 'get')]);
    await admitted('pa-user', alert(5));
    const hooked = { kind: 'PodAlert', metadata: { name: 'hooked' }, spec: { alerts: { checkRunningPods: true }, logLines: 0,
      webhook: { secretRef: { name: 'team-hook', key: 'url' } } } };
    await refused('pa-user', hooked, 'it needs get on secrets named team-hook');
    await grant('pa-user', [own('podalerts'), right('pods', 'list'), right('secrets', 'get', '', ['team-hook'])]);
    await admitted('pa-user', hooked);
  });

  it('admits a TDSet or a PostgresCluster only from a user who may run its workload', async () => {
    const tdset = { kind: 'TDSet', metadata: { name: 'web' }, spec: { container: { image: 'web:1', port: 8000 },
      defaultReplica: 1, schedulingConfig: [{ startTime: 9, endTime: 17, replica: 2 }] } };
    const postgres = { kind: 'PostgresCluster', metadata: { name: 'db' }, spec: { size: 1, version: '17',
      storage: { size: '1Gi' } } };
    await grant('workload-user', [own('tdsets'), own('postgresclusters')]);
    await refused('workload-user', tdset, 'it needs create on deployments.apps');
    await refused('workload-user', postgres, 'it needs create on pods in namespace');
    await grant('workload-user', [own('tdsets'), own('postgresclusters'), right('deployments', 'create', 'apps'),
      right('pods', 'create')]);
    await refused('workload-user', postgres, 'it needs create on persistentvolumeclaims');
    await grant('workload-user', [own('tdsets'), own('postgresclusters'), right('deployments', 'create', 'apps'),
      right('pods', 'create'), right('persistentvolumeclaims', 'create')]);
    await refused('workload-user', postgres, 'it needs create on poddisruptionbudgets.policy');
    await grant('workload-user', [own('tdsets'), own('postgresclusters'), right('deployments', 'create', 'apps'),
      right('pods', 'create'), right('persistentvolumeclaims', 'create'), right('poddisruptionbudgets', 'create', 'policy')]);
    await admitted('workload-user', tdset);
    await admitted('workload-user', postgres);
    // A role's password is read from Secrets the requester must be able to read: as many as there are, in one check.
    const withRoles = { ...postgres, metadata: { name: 'db-roles' }, spec: { ...postgres.spec, roles: ['a', 'b', 'c', 'd']
      .map((n) => ({ name: n, passwordSecret: { name: `${n}-password` } })) } };
    await refused('workload-user', withRoles, 'it needs get on secrets in namespace');
    await grant('workload-user', [own('tdsets'), own('postgresclusters'), right('deployments', 'create', 'apps'),
      right('pods', 'create'), right('persistentvolumeclaims', 'create'), right('poddisruptionbudgets', 'create', 'policy'),
      right('secrets', 'get')]);
    await admitted('workload-user', withRoles);
    // A certificate Secret is copied to the members: its key only for a requester who may read that Secret.
    const withCertificate = { ...postgres, metadata: { name: 'db-tls' }, spec: { ...postgres.spec,
      tls: { serverSecret: { name: 'db-server' } } } };
    const workload = [own('postgresclusters'), right('pods', 'create'), right('persistentvolumeclaims', 'create'),
      right('poddisruptionbudgets', 'create', 'policy')];
    await grant('tls-user', workload);
    await refused('tls-user', withCertificate, 'it needs get on secrets named db-server');
    await grant('tls-user', [...workload, right('secrets', 'get', '', ['db-server'])]);
    await admitted('tls-user', withCertificate);
  });

  it('admits a TDSet on a workload it does not own only from a user who may scale that workload, by name', async () => {
    const scaled = (kind: string, name: string) => ({ kind: 'TDSet', metadata: { name: `${kind.toLowerCase()}-${name}` }, spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind, name }, restoreOnDelete: false,
      schedule: [{ days: ['Mon'], start: '07:00', end: '19:00', replicas: 2 }] } });
    await grant('scaler', [own('tdsets')]);
    await refused('scaler', scaled('Deployment', 'shop'), 'it needs patch on deployments.apps/scale named shop');
    await grant('scaler', [own('tdsets'), right('deployments/scale', 'patch', 'apps', ['shop'])]);
    // Scaling needs no right to create Deployments; another workload's scale is not granted by that one's.
    await admitted('scaler', scaled('Deployment', 'shop'));
    await refused('scaler', scaled('Deployment', 'cart'), 'named cart');
    await refused('scaler', scaled('StatefulSet', 'shop'), 'it needs patch on statefulsets.apps/scale named shop');
  });

  it('checks an annotation that asks a PostgresCluster to act as it checks a spec change; taking it off, not', async () => {
    const annotate = (user: string, annotation: string) => cluster.kubectl(['annotate', '--as', user, '--overwrite', '-n',
      namespace, 'postgresclusters.keelson.dev/db', annotation], { allowFailure: true });
    await grant('annotator', [own('postgresclusters')]);
    await waitFor('a switchover asked for without the rights refused', async () => (await annotate('annotator',
      'keelson.dev/switchover-to=db-0001')).stderr.includes('it needs create on pods') || undefined, { timeoutMs: 20_000 });
    assert.match((await annotate('annotator', 'keelson.dev/backup-request=nightly-1')).stderr, /it needs create on pods/);
    assert.equal((await annotate('annotator', 'team=a')).code, 0);
    // The PodDisruptionBudget is made with the cluster: its right is asked for at creation only.
    await grant('annotator', [own('postgresclusters'), right('pods', 'create'), right('persistentvolumeclaims', 'create')]);
    await waitFor('the switchover admitted with the rights', async () =>
      (await annotate('annotator', 'keelson.dev/switchover-to=db-0001')).code === 0 || undefined, { timeoutMs: 20_000 });
    await grant('annotator', [own('postgresclusters')]);
    await waitFor('taking it off admitted without them', async () => (await annotate('annotator',
      'keelson.dev/switchover-to-')).code === 0 || undefined, { timeoutMs: 20_000 });
  });
});
