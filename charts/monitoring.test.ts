// The alerting rules and the dashboard: promtool (pinned, built from its Go module) checks the rules and runs each
// alert against series that should fire it and series that should not; every metric they name is one the
// controller exports; the ServiceMonitor finds the install's metrics Service.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { App, Chart, Testing } from 'cdk8s';
import { Metrics } from '../controller/runtime/metrics.ts';
import { repoRoot } from '../cluster/paths.ts';
import { goTool } from '../test/support/tools.ts';
import { dashboardQueries } from './dashboard.ts';
import { KeelsonInstall } from './install.ts';
import { alertRules, KeelsonMonitoring, metricsJobs } from './monitoring.ts';

const run = promisify(execFile);
const rulesFile = join(repoRoot, 'dist/monitoring/prometheus-rules.yaml');
let promtool: string;
let scratch: string;

before(async () => {
  promtool = await goTool('promtool');
  scratch = await mkdtemp(join(tmpdir(), 'keelson-monitoring-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

interface Case {
  alert: string;
  /** Series in promtool's notation, the job's label added. */
  series: Record<string, string>;
  at: string;
  /** The alert's labels when it should fire (severity added), or undefined when it should not. */
  fires?: Record<string, string>;
}

const [job, podJob] = metricsJobs as [string, string];
const on = (labels: string, of = job) => `{job="${of}", ${labels}}`;
const cases: Case[] = [
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
];

/** An annotation as Prometheus renders it for these labels. */
const rendered = (text: string, labels: Record<string, string>) =>
  text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, name: string) => labels[name] ?? '');

describe('alerting rules', () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await run(promtool, ['check', 'rules', rulesFile]);
    assert.match(stdout, new RegExp(`SUCCESS: ${alertRules.length} rules found`));
  });

  it('fire on the series each is for, and stay quiet on healthy ones (promtool test rules)', async () => {
    assert.deepEqual([...new Set(cases.map((c) => c.alert))], alertRules.map((r) => r.alert), 'a case per alert');
    const tests = cases.map(({ alert, series, at, fires }) => {
      const rule = alertRules.find((r) => r.alert === alert)!;
      const labels = { ...fires, severity: rule.labels.severity };
      return {
        interval: '1m',
        input_series: Object.entries(series).map(([name, values]) => ({ series: name, values })),
        alert_rule_test: [{ eval_time: at, alertname: alert, exp_alerts: fires ? [{ exp_labels: labels,
          exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, rendered(v, labels)])) }]
          : [] }],
      };
    });
    const file = join(scratch, 'rules.test.yaml');
    await writeFile(file, JSON.stringify({ rule_files: [rulesFile], evaluation_interval: '1m', tests }));
    const result = await run(promtool, ['test', 'rules', file]).catch((error) => error);
    assert.equal(result.code ?? 0, 0, `${result.stdout}${result.stderr}`);
  });
});

describe('monitoring', () => {
  it('names only metrics the controller exports, in the rules and on the dashboard', async () => {
    const exported = new Set((await new Metrics().registry.getMetricsAsJSON()).map((m) => m.name));
    exported.add('up');
    const named = [...alertRules.map((r) => r.expr), ...dashboardQueries]
      .flatMap((expr) => [...expr.matchAll(/\b([a-z_:][a-z0-9_:]*)\{/g)].map((m) => m[1]!.replace(/_bucket$/, '')));
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
