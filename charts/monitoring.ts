// Monitoring the operator with the Prometheus Operator: a ServiceMonitor for the controller's metrics Service and a
// PrometheusRule with the alerts below. The same rule groups are written to dist/monitoring/ as a plain Prometheus
// rule file, which `promtool check rules` and `promtool test rules` check in npm test.
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { stalledAfterSeconds } from '../controller/operators/postgrescluster/archiving.ts';
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

/** The controller's own alerts. */
const controllerAlerts: AlertRule[] = [
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

const mib = 1024 * 1024;

/**
 * PostgresCluster's alerts, on the series its members' agents export (scraped through spec.podMonitor: labelled with
 * the namespace, pod and cluster) and on the controller's own.
 */
const postgresAlerts: AlertRule[] = [
  {
    alert: 'KeelsonPostgresDown',
    expr: 'keelson_postgres_up == 0',
    // Past a long clone or restore, during which the server does not answer yet.
    for: '10m',
    labels: { severity: 'critical' },
    annotations: { summary: 'PostgreSQL of {{ $labels.pod }} cannot be read',
      description: 'The member agent of {{ $labels.pod }} (cluster {{ $labels.postgrescluster }}) has not reached its ' +
        'PostgreSQL for 5 minutes: it is down, starting, or refuses connections; the agent\'s log says which.' },
  },
  {
    alert: 'KeelsonPostgresArchivingFailing',
    // As the ContinuousArchiving condition has it: the latest attempt failed, or a segment waits past two
    // archive_timeouts.
    expr: 'keelson_postgres_archiver_last_failed_timestamp_seconds > ' +
      'keelson_postgres_archiver_last_archived_timestamp_seconds or ' +
      `keelson_postgres_archiver_oldest_ready_seconds >= ${stalledAfterSeconds}`,
    for: '5m',
    labels: { severity: 'critical' },
    annotations: { summary: 'WAL of {{ $labels.postgrescluster }} is not reaching its archive',
      description: '{{ $labels.pod }} has failed to archive WAL, or let a segment wait over 2 minutes, for 5 ' +
        'minutes: point-in-time recovery stops at the last segment archived, and pg_wal grows. PostgreSQL keeps ' +
        'every segment until it is archived; see the cluster\'s ContinuousArchiving condition.' },
  },
  {
    alert: 'KeelsonPostgresReplicationLag',
    expr: `keelson_postgres_replication_lag_bytes{stage="replayed"} > ${64 * mib} or ` +
      'keelson_postgres_replication_lag_seconds{stage="replayed"} > 30',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Standby {{ $labels.standby }} of {{ $labels.postgrescluster }} lags',
      description: '{{ $labels.standby }} has been over 64 MiB or 30 seconds behind the primary {{ $labels.pod }} ' +
        'for 5 minutes: reads from it are stale, and a failover to it waits for its replay.' },
  },
  {
    alert: 'KeelsonPostgresReplicaNotStreaming',
    expr: 'keelson_postgres_in_recovery == 1 and keelson_postgres_wal_receiver_up == 0',
    for: '5m',
    labels: { severity: 'warning' },
    annotations: { summary: 'Replica {{ $labels.pod }} of {{ $labels.postgrescluster }} does not stream',
      description: '{{ $labels.pod }} has not streamed from the primary for 5 minutes: it falls behind, and is out ' +
        'of the read-only Service; it is cloned afresh if it cannot catch up.' },
  },
  {
    alert: 'KeelsonPostgresSynchronousStandbyMissing',
    expr: 'keelson_postgres_synchronous_standbys_connected < keelson_postgres_synchronous_standbys_required',
    // Past a member's restart in a roll, during which its commits wait for a moment.
    for: '2m',
    labels: { severity: 'critical' },
    annotations: { summary: '{{ $labels.postgrescluster }} has fewer synchronous standbys than its commits wait for',
      description: 'The primary {{ $labels.pod }} has had fewer standbys streaming than spec.synchronousReplicas ' +
        'for 2 minutes: its commits wait, and writes stall until one is back.' },
  },
  {
    alert: 'KeelsonPostgresBackupTooOld',
    // Every replica of the controller exports them: one alert per cluster.
    expr: `max by (namespace, name) (keelson_postgrescluster_last_backup_timestamp_seconds{${job}}) < ` +
      `max by (namespace, name) (keelson_postgrescluster_backup_scheduled_timestamp_seconds{${job}}) and ` +
      `time() - max by (namespace, name) (keelson_postgrescluster_backup_scheduled_timestamp_seconds{${job}}) > 3600`,
    for: '0m',
    labels: { severity: 'warning' },
    annotations: { summary: 'PostgresCluster {{ $labels.namespace }}/{{ $labels.name }} missed its scheduled backup',
      description: 'spec.backup.schedule asked for a base backup over an hour ago, and none has ended since: ' +
        'see the cluster\'s status.scheduledBackup and Events.' },
  },
  {
    alert: 'KeelsonPostgresCertificateExpiring',
    // The operator renews its own 30 days ahead; a user's issuer should have by now too.
    expr: `max by (namespace, name) (keelson_postgrescluster_certificate_expiry_timestamp_seconds{${job}}) - time() < ` +
      `${14 * 86_400}`,
    for: '1h',
    labels: { severity: 'warning' },
    annotations: { summary: 'The certificate of PostgresCluster {{ $labels.namespace }}/{{ $labels.name }} expires ' +
      'within 14 days', description: 'The certificate in Secret <name>-tls, which members serve, has not been ' +
      'renewed: see the cluster\'s TLSReady condition and Events, and, with spec.tls.serverSecret, the issuer of that ' +
      'Secret.' },
  },
];

export const alertRules: AlertRule[] = [...controllerAlerts, ...postgresAlerts];
export const ruleGroups = [{ name: 'keelson', rules: controllerAlerts }, { name: 'keelson-postgresql', rules: postgresAlerts }];

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
        // honorLabels: the series the controller labels with a resource's namespace keep it (not the install's).
        endpoints: [{ port: 'https', scheme: 'https', path: '/metrics', interval: '30s', honorLabels: true,
          bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', tlsConfig: { insecureSkipVerify: true } }] },
    });
    new ApiObject(this, 'prometheus-rule', {
      apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: metadata(controllerName),
      spec: { groups: ruleGroups },
    });
  }
}
