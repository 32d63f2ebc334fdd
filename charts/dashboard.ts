// A Grafana dashboard for the controller: controller-runtime's metric names (the same panels serve a Go controller)
// plus Keelson's own, and PostgresClusters as their members' agents report them (scraped through spec.podMonitor),
// written to dist/monitoring/grafana-dashboard.json. Import it and pick the Prometheus data source.
import { metricsJobs } from './monitoring.ts';

interface Panel {
  title: string;
  unit: string;
  /** PromQL, each with its legend. */
  queries: [expr: string, legend: string][];
}

const on = `job=~"$job"`;
const rate = (metric: string, by: string) => `sum by (${by}) (rate(${metric}{${on}}[$__rate_interval]))`;
const quantile = (q: number, metric: string, by: string) =>
  `histogram_quantile(${q}, sum by (${by}, le) (rate(${metric}_bucket{${on}}[$__rate_interval])))`;

const rows: [string, Panel[]][] = [
  ['Reconciles', [
    { title: 'Reconciles by result', unit: 'ops', queries: [
      [rate('controller_runtime_reconcile_total', 'controller, result'), '{{controller}} {{result}}']] },
    { title: 'Reconcile errors', unit: 'ops', queries: [
      [rate('controller_runtime_reconcile_errors_total', 'controller'), '{{controller}}']] },
    { title: 'Reconcile time', unit: 's', queries: [
      [quantile(0.5, 'controller_runtime_reconcile_time_seconds', 'controller'), '{{controller}} p50'],
      [quantile(0.99, 'controller_runtime_reconcile_time_seconds', 'controller'), '{{controller}} p99']] },
    { title: 'Workers busy', unit: 'short', queries: [
      [`sum by (controller) (controller_runtime_active_workers{${on}})`, '{{controller}} active'],
      [`sum by (controller) (controller_runtime_max_concurrent_reconciles{${on}})`, '{{controller}} max']] },
  ]],
  ['Work queues', [
    { title: 'Depth', unit: 'short', queries: [[`sum by (name) (workqueue_depth{${on}})`, '{{name}}']] },
    { title: 'Adds and retries', unit: 'ops', queries: [
      [rate('workqueue_adds_total', 'name'), '{{name}} adds'], [rate('workqueue_retries_total', 'name'), '{{name}} retries']] },
    { title: 'Wait in queue, p99', unit: 's', queries: [
      [quantile(0.99, 'workqueue_queue_duration_seconds', 'name'), '{{name}}']] },
    { title: 'Longest running reconcile', unit: 's', queries: [
      [`max by (name) (workqueue_longest_running_processor_seconds{${on}})`, '{{name}}']] },
  ]],
  ['Leadership and watches', [
    { title: 'Leader', unit: 'short', queries: [[`leader_election_master_status{${on}}`, '{{pod}}']] },
    { title: 'Watch restarts', unit: 'short', queries: [
      [`sum by (resource, reason) (increase(keelson_watch_restarts_total{${on}}[$__range]))`, '{{resource}} {{reason}}']] },
    { title: 'Seconds since a watch was last heard', unit: 's', queries: [
      [`max by (resource) (keelson_watch_seconds_since_last_event{${on}})`, '{{resource}}']] },
    { title: 'API requests', unit: 'reqps', queries: [
      [rate('keelson_client_requests_total', 'verb, resource, code'), '{{verb}} {{resource}} {{code}}']] },
  ]],
  ['Process', [
    { title: 'CPU', unit: 'percentunit', queries: [[rate('process_cpu_seconds_total', 'pod'), '{{pod}}']] },
    { title: 'Resident memory', unit: 'bytes', queries: [
      [`sum by (pod) (process_resident_memory_bytes{${on}})`, '{{pod}}']] },
    { title: 'Event loop lag, p99', unit: 's', queries: [
      [`max by (pod) (nodejs_eventloop_lag_p99_seconds{${on}})`, '{{pod}}']] },
  ]],
];

const pg = 'postgrescluster=~"$postgrescluster"';
const pgSum = (metric: string, by: string, extra = '') => `sum by (${by}) (${metric}{${pg}${extra}})`;

rows.push(['PostgreSQL', [
  { title: 'Members up, and replicas', unit: 'short', queries: [
    [pgSum('keelson_postgres_up', 'postgrescluster'), '{{postgrescluster}} up'],
    [pgSum('keelson_postgres_in_recovery', 'postgrescluster'), '{{postgrescluster}} replicas']] },
  { title: 'Transactions', unit: 'ops', queries: [
    [`sum by (postgrescluster, outcome) (rate(keelson_postgres_transactions_total{${pg}}[$__rate_interval]))`,
      '{{postgrescluster}} {{outcome}}']] },
  { title: 'WAL written', unit: 'Bps', queries: [
    [`sum by (postgrescluster, pod) (deriv(keelson_postgres_wal_position_bytes{${pg}}[$__rate_interval]) ` +
      `and on (namespace, pod) keelson_postgres_in_recovery{${pg}} == 0)`, '{{pod}}']] },
  { title: 'Archive lag', unit: 'bytes', queries: [
    [`max by (postgrescluster) (keelson_postgres_archiver_lag_bytes{${pg}})`, '{{postgrescluster}} not archived']] },
  { title: 'Replication lag (replayed)', unit: 'bytes', queries: [
    [`max by (postgrescluster, standby) (keelson_postgres_replication_lag_bytes{${pg}, stage="replayed"})`,
      '{{standby}}']] },
  { title: 'Synchronous standbys', unit: 'short', queries: [
    [pgSum('keelson_postgres_synchronous_standbys_connected', 'postgrescluster'), '{{postgrescluster}} connected'],
    [pgSum('keelson_postgres_synchronous_standbys_required', 'postgrescluster'), '{{postgrescluster}} required']] },
  { title: 'Connections', unit: 'short', queries: [[pgSum('keelson_postgres_backends', 'postgrescluster, state'),
    '{{postgrescluster}} {{state}}']] },
  { title: 'Time since the latest base backup', unit: 's', queries: [
    [`time() - max by (namespace, name) (keelson_postgrescluster_last_backup_timestamp_seconds{${on}} > 0)`,
      '{{namespace}}/{{name}}']] },
]]);

const datasource = { type: 'prometheus', uid: '${datasource}' };

function panels(): object[] {
  const out: object[] = [];
  let y = 0;
  let id = 1;
  for (const [title, row] of rows) {
    out.push({ id: id++, type: 'row', title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    row.forEach((panel, i) => {
      out.push({ id: id++, type: 'timeseries', title: panel.title, datasource,
        gridPos: { h: 8, w: 6, x: 6 * (i % 4), y: y + 8 * Math.floor(i / 4) },
        fieldConfig: { defaults: { unit: panel.unit }, overrides: [] },
        targets: panel.queries.map(([expr, legendFormat], n) =>
          ({ refId: String.fromCharCode(65 + n), datasource, expr, legendFormat })) });
    });
    y += 8 * Math.ceil(row.length / 4);
  }
  return out;
}

/** The dashboard's JSON model. */
export const dashboard = {
  uid: 'keelson-controller',
  title: 'Keelson controller',
  tags: ['keelson', 'kubernetes', 'operator'],
  schemaVersion: 39,
  editable: true,
  time: { from: 'now-6h', to: 'now' },
  templating: { list: [
    { name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Data source' },
    { name: 'job', type: 'query', datasource, label: 'Job', query: 'label_values(workqueue_depth, job)',
      current: { text: metricsJobs, value: metricsJobs }, includeAll: false, multi: true, refresh: 2 },
    { name: 'postgrescluster', type: 'query', datasource, label: 'PostgresCluster',
      query: 'label_values(keelson_postgres_up, postgrescluster)',
      includeAll: true, allValue: '.*', multi: true, refresh: 2 },
  ] },
  panels: panels(),
};

/** Every PromQL expression of the dashboard. */
export const dashboardQueries = rows.flatMap(([, row]) => row.flatMap((panel) => panel.queries.map(([expr]) => expr)));
