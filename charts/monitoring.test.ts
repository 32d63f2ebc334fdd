// The alerting rules and the dashboard: promtool (pinned, built from its Go module) checks the rules and runs each
// alert against series that should fire it and series that should not; every metric they name is one the
// controller exports; the ServiceMonitor finds the install's metrics Service.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { App, Chart, Testing } from 'cdk8s';
import { Metrics } from '../controller/runtime/metrics.ts';
import { agentMetrics } from '../controller/operators/postgrescluster/metrics.ts';
import { clusterMetricNames } from '../controller/operators/postgrescluster/cluster-metrics.ts';
import { rulesFile, testAlerts, type AlertCase } from '../test/support/promtool.ts';
import { goTool } from '../test/support/tools.ts';
import { dashboardQueries } from './dashboard.ts';
import { KeelsonInstall } from './install.ts';
import { alertRules, KeelsonMonitoring, metricsJobs } from './monitoring.ts';

const run = promisify(execFile);
let promtool: string;

before(async () => {
  promtool = await goTool('promtool');
});

const [job, podJob] = metricsJobs as [string, string];
const on = (labels: string, of = job) => `{job="${of}", ${labels}}`;
const cases: AlertCase[] = [
  { alert: 'KeelsonControllerDown', series: { [`up${on('pod="a"')}`]: '1x10', [`up${on('pod="b"', podJob)}`]: '0x10' },
    at: '6m', fires: { job: podJob } },
  { alert: 'KeelsonControllerDown', series: { [`up${on('pod="a"')}`]: '1x10', [`up${on('pod="b"', podJob)}`]: '1x10' },
    at: '6m' },
  { alert: 'KeelsonNoLeader', series: { [`leader_election_master_status${on('pod="a", name="l"')}`]: '0x10',
    [`leader_election_master_status${on('pod="b", name="l"')}`]: '0x10' }, at: '6m', fires: { job } },
  { alert: 'KeelsonNoLeader', series: { [`leader_election_master_status${on('pod="a", name="l"')}`]: '0x10',
    [`leader_election_master_status${on('pod="b", name="l"')}`]: '1x10' }, at: '6m' },
  { alert: 'KeelsonLeaderChanging', series: { [`leader_election_master_status${on('pod="a", name="l"')}`]:
    Array.from({ length: 61 }, (_, i) => i % 2).join(' ') }, at: '60m', fires: { job } },
  { alert: 'KeelsonLeaderChanging', series: { [`leader_election_master_status${on('pod="a", name="l"')}`]: '1x60' },
    at: '60m' },
  { alert: 'KeelsonReconcileErrors', series: { [`controller_runtime_reconcile_errors_total${on('controller="tdset"')}`]:
    '0+1x30' }, at: '20m', fires: { controller: 'tdset' } },
  { alert: 'KeelsonReconcileErrors', series: { [`controller_runtime_reconcile_errors_total${on('controller="tdset"')}`]:
    '3x30' }, at: '20m' },
  { alert: 'KeelsonWatchRestarting', series: { [`keelson_watch_restarts_total${on('resource="pods", reason="error"')}`]:
    '0+1x20' }, at: '15m', fires: { resource: 'pods' } },
  { alert: 'KeelsonWatchRestarting', series: { [`keelson_watch_restarts_total${on('resource="pods", reason="gone"')}`]:
    '0+1x2 2x18' }, at: '15m' },
  { alert: 'KeelsonWorkqueueGrowing', series: { [`workqueue_depth${on('name="tdset", controller="tdset"')}`]: '100+10x40' },
    at: '30m', fires: { name: 'tdset' } },
  { alert: 'KeelsonWorkqueueGrowing', series: { [`workqueue_depth${on('name="tdset", controller="tdset"')}`]: '500-10x40' },
    at: '30m' },
  ...postgresCases(),
];

/** A member agent's series, as its PodMonitor's target labels them. */
function postgresCases(): AlertCase[] {
  const target = { job: 'db/pg', namespace: 'db', postgrescluster: 'pg', pod: 'pg-0000' };
  const at = (labels: Record<string, string> = {}) => `{${Object.entries({ ...target, ...labels })
    .map(([k, v]) => `${k}="${v}"`).join(', ')}}`;
  const replayed = { standby: 'pg-0001', stage: 'replayed' };
  const operator = { namespace: 'db', name: 'pg' };
  const backups = (last: string, scheduled: string) => ({
    [`keelson_postgrescluster_last_backup_timestamp_seconds${on('namespace="db", name="pg"')}`]: last,
    [`keelson_postgrescluster_backup_scheduled_timestamp_seconds${on('namespace="db", name="pg"')}`]: scheduled });
  const archiver = (failed: string, archived: string, oldest: string) => ({
    [`keelson_postgres_archiver_last_failed_timestamp_seconds${at()}`]: failed,
    [`keelson_postgres_archiver_last_archived_timestamp_seconds${at()}`]: archived,
    [`keelson_postgres_archiver_oldest_ready_seconds${at()}`]: oldest });
  return [
    { alert: 'KeelsonPostgresDown', series: { [`keelson_postgres_up${at()}`]: '0x15' }, at: '11m', fires: target },
    { alert: 'KeelsonPostgresDown', series: { [`keelson_postgres_up${at()}`]: '1x5 0x10' }, at: '11m' },
    { alert: 'KeelsonPostgresArchivingFailing', series: archiver('100x10', '50x10', '0x10'), at: '6m', fires: target },
    { alert: 'KeelsonPostgresArchivingFailing', series: archiver('0x10', '50x10', '120x10'), at: '6m', fires: target },
    { alert: 'KeelsonPostgresArchivingFailing', series: archiver('100x10', '150x10', '30x10'), at: '6m' },
    { alert: 'KeelsonPostgresArchivingFailing', series: archiver('0x10', '0x10', '0x10'), at: '6m' },
    { alert: 'KeelsonPostgresReplicationLag', series: { [`keelson_postgres_replication_lag_bytes${at(replayed)}`]:
      `${100 * 1024 * 1024}x10` }, at: '6m', fires: { ...target, ...replayed } },
    { alert: 'KeelsonPostgresReplicationLag', series: { [`keelson_postgres_replication_lag_bytes${at(replayed)}`]: '4096x10',
      [`keelson_postgres_replication_lag_seconds${at(replayed)}`]: '0.5x10' }, at: '6m' },
    { alert: 'KeelsonPostgresReplicaNotStreaming', series: { [`keelson_postgres_in_recovery${at()}`]: '1x10',
      [`keelson_postgres_wal_receiver_up${at()}`]: '0x10' }, at: '6m', fires: target },
    { alert: 'KeelsonPostgresReplicaNotStreaming', series: { [`keelson_postgres_in_recovery${at()}`]: '1x10',
      [`keelson_postgres_wal_receiver_up${at()}`]: '1x10' }, at: '6m' },
    { alert: 'KeelsonPostgresSynchronousStandbyMissing', series: {
      [`keelson_postgres_synchronous_standbys_connected${at()}`]: '0x5',
      [`keelson_postgres_synchronous_standbys_required${at()}`]: '1x5' }, at: '3m', fires: target },
    { alert: 'KeelsonPostgresSynchronousStandbyMissing', series: {
      [`keelson_postgres_synchronous_standbys_connected${at()}`]: '1x1 0x1 1x3',
      [`keelson_postgres_synchronous_standbys_required${at()}`]: '1x5' }, at: '3m' },
    // time() is 5400 at 90m: the schedule fired at 600, over an hour before.
    { alert: 'KeelsonPostgresBackupTooOld', series: backups('0x100', '600x100'), at: '90m', fires: operator },
    { alert: 'KeelsonPostgresBackupTooOld', series: backups('700x100', '600x100'), at: '90m' },
    { alert: 'KeelsonPostgresBackupTooOld', series: backups('0x100', '5000x100'), at: '90m' },
    // time() is 5400 at 90m: 13 days left fires, 15 days left does not.
    { alert: 'KeelsonPostgresCertificateExpiring', series: { [`keelson_postgrescluster_certificate_expiry_timestamp_seconds${
      on('namespace="db", name="pg"')}`]: `${13 * 86_400}x100` }, at: '90m', fires: operator },
    { alert: 'KeelsonPostgresCertificateExpiring', series: { [`keelson_postgrescluster_certificate_expiry_timestamp_seconds${
      on('namespace="db", name="pg"')}`]: `${15 * 86_400}x100` }, at: '90m' },
  ];
}

describe('alerting rules', () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', rulesFile]);
    assert.match(stdout, new RegExp(`SUCCESS: ${alertRules.length} rules found`));
  });

  it('fire on the series each is for, and stay quiet on healthy ones (promtool test rules)', async () => {
    assert.deepEqual([...new Set(cases.map((c) => c.alert))], alertRules.map((r) => r.alert), 'a case per alert');
    const { code, output } = await testAlerts(cases);
    assert.equal(code, 0, output);
  });
});

describe('monitoring', () => {
  it('names only metrics the controller exports, in the rules and on the dashboard', async () => {
    const exported = new Set([...(await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name),
      ...Object.keys(agentMetrics), ...clusterMetricNames, 'up']);
    // Selected ({...}), and every keelson_ name even bare.
    const named = [...alertRules.map((r) => r.expr), ...dashboardQueries].flatMap((expr) =>
      [...expr.matchAll(/\b([a-z_:][a-z0-9_:]*)\{|\b(keelson_[a-z0-9_]+)/g)]
        .map((m) => (m[1] ?? m[2])!.replace(/_bucket$/, '')));
    assert.ok(named.length > 20);
    for (const name of named) assert.ok(exported.has(name), `${name} is not a metric the controller exports`);
  });

  it('has its ServiceMonitor select every metrics Service of the install, over HTTPS with a token', () => {
    const app = new App();
    const install = new Chart(app, 'install');
    new KeelsonInstall(install, 'install', { image: 'example/keelson:test' });
    const monitoring = new Chart(app, 'monitoring');
    new KeelsonMonitoring(monitoring, 'monitoring', { labels: { release: 'prometheus' } });
    const objects = Testing.synth(install);
    const selected = (o: any) => Object.entries(monitor.spec.selector.matchLabels).every(([k, v]) => o.metadata.labels?.[k] === v);
    const monitor = Testing.synth(monitoring).find((o) => o.kind === 'ServiceMonitor');
    const services = objects.filter((o) => o.kind === 'Service' && selected(o));
    assert.deepEqual(services.map((s) => s.metadata.name), metricsJobs);
    assert.equal(monitor.metadata.labels.release, 'prometheus');
    const [endpoint] = monitor.spec.endpoints;
    assert.deepEqual([endpoint.scheme, endpoint.bearerTokenFile], ['https', '/var/run/secrets/kubernetes.io/serviceaccount/token']);
    for (const service of services) {
      assert.equal(monitor.metadata.namespace, service.metadata.namespace);
      assert.ok(service.spec.ports.some((p: { name: string }) => p.name === endpoint.port));
    }
  });
});
