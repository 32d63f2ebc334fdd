// Alerting rules run by promtool (pinned, built from its Go module) against series given by hand or scraped from a
// real exporter: `promtool test rules` with the rule file the install ships.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alertRules } from '../../charts/monitoring.ts';
import { repoRoot } from '../../cluster/paths.ts';
import { goTool } from './tools.ts';

export const rulesFile = join(repoRoot, 'dist/monitoring/prometheus-rules.yaml');

export interface AlertCase {
  alert: string;
  /** Series in promtool's notation (name{labels}: values), one sample a minute. */
  series: Record<string, string>;
  at: string;
  /** The alert's labels when it should fire (severity added), or undefined when it should not. */
  fires?: Record<string, string>;
}

/** An annotation as Prometheus renders it for these labels. */
const rendered = (text: string, labels: Record<string, string>) =>
  text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, name: string) => labels[name] ?? '');

/** Runs every case through `promtool test rules`; its exit code and output (0: every case held). */
export async function testAlerts(cases: AlertCase[]): Promise<{ code: number; output: string }> {
  const promtool = await goTool('promtool');
  const tests = cases.map(({ alert, series, at, fires }) => {
    const rule = alertRules.find((r) => r.alert === alert);
    if (!rule) throw new Error(`no alert ${alert}`);
    const labels = { ...fires, severity: rule.labels.severity };
    return {
      interval: '1m',
      input_series: Object.entries(series).map(([name, values]) => ({ series: name, values })),
      alert_rule_test: [{ eval_time: at, alertname: alert, exp_alerts: fires ? [{ exp_labels: labels,
        exp_annotations: Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, rendered(v, labels)])) }]
        : [] }],
    };
  });
  const scratch = await mkdtemp(join(tmpdir(), 'keelson-promtool-'));
  try {
    const file = join(scratch, 'rules.test.yaml');
    await writeFile(file, JSON.stringify({ rule_files: [rulesFile], evaluation_interval: '1m', tests }));
    const result = await promisify(execFile)(promtool, ['test', 'rules', file]).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) =>
        ({ code: error.code ?? 1, output: `${error.stdout ?? ''}${error.stderr ?? ''}` }));
    return result;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
