// Monitoring the operator with the Prometheus Operator: a ServiceMonitor for the controller's metrics Service and a
// PrometheusRule with the alerts below. The same rule groups are written to dist/monitoring/ as a plain Prometheus
// rule file, which `promtool check rules` and `promtool test rules` check in npm test.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { controllerName, defaultControllers } from './install.ts';

/** The jobs Prometheus gives the metrics Services' targets under the ServiceMonitor: each Service's name. */
export const metricsJobs = Object.keys(defaultControllers).map((name) => `${name}-metrics`);

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: 'warning' | 'critical' };
  annotations: { summary: string; description: string };
}

const job = `job=~"${metricsJobs.join('|')}"`;

/** The alerts, in one group. */
export const alertRules: AlertRule[] = [
  {
    alert: 'KeelsonControllerDown',
    // One absent() per job, so that either Deployment being down is seen, and named.
    expr: metricsJobs.map((name) => `label_replace(absent(up{job="${name}"} == 1), "job", "${name}", "", "")`).join(' or '),
    for: '5m',
    labels: { severity: 'critical' },
    annotations: { summary: 'A Keelson controller is not being scraped',
      description: 'No target of the {{ $labels.job }} job has been up for 5 minutes: its operators do not reconcile.' },
  },
  {
    alert: 'KeelsonNoLeader',
    expr: `max by (job) (leader_election_master_status{${job}}) < 1`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: { summary: 'No replica of {{ $labels.job }} holds its leader Lease',
      description: 'Every replica has reported itself a follower for 5 minutes: none reconciles.' },
  },
  {
    alert: 'KeelsonLeaderChanging',
    expr: `sum by (job) (changes(leader_election_master_status{${job}}[1h])) > 6`,
    for: '0m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Keelson\'s leader changes often',
      description: 'More than three leader handovers in an hour: replicas restarting, or Lease renewals failing.' },
  },
  {
    alert: 'KeelsonReconcileErrors',
    expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${job}}[5m])) > 0`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Keelson\'s {{ $labels.controller }} controller keeps failing to reconcile',
      description: 'Reconcile errors for 15 minutes; the controller\'s log and its objects\' Ready conditions say why.' },
  },
  {
    alert: 'KeelsonWatchRestarting',
    expr: `sum by (resource) (increase(keelson_watch_restarts_total{${job}}[15m])) > 5`,
    for: '0m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Keelson\'s watch on {{ $labels.resource }} keeps restarting',
      description: 'More than five watch restarts in 15 minutes: the apiserver is unreachable, or cuts the watch.' },
  },
  {
    alert: 'KeelsonWorkqueueGrowing',
    expr: `sum by (name) (workqueue_depth{${job}}) > 100 and sum by (name) (deriv(workqueue_depth{${job}}[10m])) > 0`,
    for: '15m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Keelson\'s {{ $labels.name }} queue keeps growing',
      description: 'Over 100 objects waiting and more each minute for 15 minutes: the controller falls behind.' },
  },
];

export const ruleGroups = [{ name: 'keelson', rules: alertRules }];

export interface KeelsonMonitoringProps {
  /** Namespace of the install. @default keelson-system */
  namespace?: string;
  /** Labels your Prometheus selects ServiceMonitors and PrometheusRules by (such as `release: prometheus`). */
  labels?: Record<string, string>;
}

/** A ServiceMonitor and a PrometheusRule for a KeelsonInstall; needs the Prometheus Operator's CRDs. */
export class KeelsonMonitoring extends Construct {
  constructor(scope: Construct, id: string, props: KeelsonMonitoringProps = {}) {
    super(scope, id);
    const metadata = (name: string) => ({ name, namespace: props.namespace ?? 'keelson-system',
      labels: { 'app.kubernetes.io/part-of': 'keelson', ...props.labels } });
    // Prometheus's own ServiceAccount token, which must be bound to the ClusterRole keelson-metrics-reader. The
    // controllers' certificates are self-signed unless --metrics-cert-dir gives them one (cert-manager's, say): then
    // trust its CA here rather than skipping verification.
    new ApiObject(this, 'service-monitor', {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: metadata(controllerName),
      spec: { selector: { matchLabels: { 'app.kubernetes.io/name': 'keelson' } },
        endpoints: [{ port: 'https', scheme: 'https', path: '/metrics', interval: '30s',
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', tlsConfig: { insecureSkipVerify: true } }] },
    });
    new ApiObject(this, 'prometheus-rule', {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: metadata(controllerName),
      spec: { groups: ruleGroups },
    });
  }
}
