// PostgreSQL's own metrics, served by the member agent on metricsPort: what CloudNativePG exports by default (the
// archiver, replication seen from both ends, slots, databases, backends), read afresh at each scrape through the
// pod's Unix socket as monitorRole, which has pg_monitor's rights and no password (it can log in over the socket
// only). Names are keelson_postgres_*; Prometheus adds the namespace and pod, and the PodMonitor the cluster.
import { createServer, type Server } from 'node:http';
import pg from 'pg';
import { metricsPort } from './plan.ts';
import { monitorRole } from './scripts.ts';

type Labels = Record<string, string>;
interface Family { help: string; type: 'gauge' | 'counter' }

/** Every series the agent may export, with its help. */
export const agentMetrics = {
  keelson_postgres_up: { help: 'Whether the agent could read PostgreSQL\'s statistics at this scrape', type: 'gauge' },
  keelson_postgres_in_recovery: { help: '1 on a replica (in recovery), 0 on the primary', type: 'gauge' },
  keelson_postgres_start_time_seconds: { help: 'When the server started, in seconds since the epoch', type: 'gauge' },
  keelson_postgres_wal_position_bytes: { help: 'The WAL position written (primary) or replayed (replica), in ' +
    'bytes: its rate is the WAL written per second', type: 'gauge' },
  keelson_postgres_settings_pending_restart: { help: 'Settings changed that take effect only once the server ' +
    'restarts', type: 'gauge' },
  keelson_postgres_archiver_archived_total: { help: 'WAL segments archived since the server started', type: 'counter' },
  keelson_postgres_archiver_failed_total: { help: 'Failed attempts to archive a WAL segment since the server started',
    type: 'counter' },
  keelson_postgres_archiver_last_archived_timestamp_seconds: { help: 'When the last segment was archived (0: none ' +
    'since the server started)', type: 'gauge' },
  keelson_postgres_archiver_last_failed_timestamp_seconds: { help: 'When archiving last failed (0: never since the ' +
    'server started)', type: 'gauge' },
  keelson_postgres_archiver_ready_segments: { help: 'Completed WAL segments waiting to be archived', type: 'gauge' },
  keelson_postgres_archiver_oldest_ready_seconds: { help: 'How long the oldest segment waiting to be archived has ' +
    'waited (0: none waits)', type: 'gauge' },
  keelson_postgres_archiver_lag_bytes: { help: 'WAL written but not archived yet: from the end of the last segment ' +
    'archived to the position written', type: 'gauge' },
  keelson_postgres_replication_lag_bytes: { help: 'Per standby streaming from this primary, how far behind it is, ' +
    'by stage: sent, flushed (on its disk) and replayed', type: 'gauge' },
  keelson_postgres_replication_lag_seconds: { help: 'Per standby, the time its last commits took to be flushed and ' +
    'replayed there (PostgreSQL\'s flush_lag and replay_lag)', type: 'gauge' },
  keelson_postgres_synchronous_standbys_required: { help: 'Standbys each commit must reach before it is ' +
    'acknowledged (the quorum of synchronous_standby_names)', type: 'gauge' },
  keelson_postgres_synchronous_standbys_connected: { help: 'Standbys streaming that count towards that quorum',
    type: 'gauge' },
  keelson_postgres_wal_receiver_up: { help: 'On a replica: 1 while it streams from the primary', type: 'gauge' },
  keelson_postgres_replay_delay_seconds: { help: 'On a replica: how old the last transaction replayed is while WAL ' +
    'received waits to be replayed (0 when all of it is)', type: 'gauge' },
  keelson_postgres_replication_slot_retained_bytes: { help: 'WAL each replication slot keeps on this server',
    type: 'gauge' },
  keelson_postgres_replication_slot_active: { help: 'Whether a standby streams through the slot', type: 'gauge' },
  keelson_postgres_database_size_bytes: { help: 'The size of each database', type: 'gauge' },
  keelson_postgres_transactions_total: { help: 'Transactions per database, committed or rolled back',
    type: 'counter' },
  keelson_postgres_deadlocks_total: { help: 'Deadlocks detected per database', type: 'counter' },
  keelson_postgres_backends: { help: 'Client connections, per database and state', type: 'gauge' },
} satisfies Record<string, Family>;

export type MetricName = keyof typeof agentMetrics;
export type Sample = [MetricName, Labels, number];

/** How many standbys synchronous_standby_names makes each commit wait for: ANY/FIRST n (...), n (...), or a list. */
export function synchronousQuorum(setting: string): number {
  const names = setting.trim();
  if (!names) return 0;
  const counted = /^(?:(?:ANY|FIRST)\s+)?(\d+)\s*\(/i.exec(names);
  return counted ? Number(counted[1]) : 1;
}

/** Where a WAL segment ends, in bytes: its log and segment numbers are the file name's second and third 8 digits. */
export function walSegmentEnd(walName: string, segmentBytes: number): number {
  if (!/^[0-9A-F]{24}$/.test(walName)) throw new Error(`not a WAL segment name: "${walName}"`);
  const log = parseInt(walName.slice(8, 16), 16);
  const segment = parseInt(walName.slice(16, 24), 16);
  return log * 2 ** 32 + (segment + 1) * segmentBytes;
}

const epoch = (column: string) => `coalesce(extract(epoch FROM ${column}), 0)::float8`;
const bytesBehind = (lsn: string) => `coalesce(pg_current_wal_lsn() - ${lsn}, 0)::float8`;

export const queries = {
  server: `SELECT pg_is_in_recovery() AS in_recovery, ${epoch('pg_postmaster_start_time()')} AS started,
    (CASE WHEN pg_is_in_recovery() THEN coalesce(pg_last_wal_replay_lsn(), '0/0') ELSE pg_current_wal_lsn() END
      - '0/0'::pg_lsn)::float8 AS position,
    (SELECT setting::float8 FROM pg_settings WHERE name = 'wal_segment_size') AS segment_bytes,
    current_setting('archive_mode') AS archive_mode, current_setting('synchronous_standby_names') AS synchronous,
    (SELECT count(*) FROM pg_settings WHERE pending_restart)::int AS pending_restart`,
  archiver: `SELECT archived_count::float8 AS archived, failed_count::float8 AS failed, last_archived_wal,
    ${epoch('last_archived_time')} AS last_archived, ${epoch('last_failed_time')} AS last_failed,
    (SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready')::int AS ready,
    (SELECT ${epoch('now() - min(modification)')} FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') AS oldest
    FROM pg_stat_archiver`,
  standbys: `SELECT application_name, sync_state, ${bytesBehind('sent_lsn')} AS sent, ${bytesBehind('flush_lsn')} AS
    flushed, ${bytesBehind('replay_lsn')} AS replayed, ${epoch('flush_lag')} AS flush_lag,
    ${epoch('replay_lag')} AS replay_lag FROM pg_stat_replication WHERE state = 'streaming'`,
  receiver: `SELECT EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming') AS streaming,
    CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
      ELSE ${epoch('now() - pg_last_xact_replay_timestamp()')} END AS delay`,
  slots: `SELECT slot_name, active, CASE WHEN pg_is_in_recovery() OR restart_lsn IS NULL THEN 0
    ELSE ${bytesBehind('restart_lsn')} END AS retained FROM pg_replication_slots`,
  databases: `SELECT d.datname, pg_database_size(d.datname)::float8 AS size, s.xact_commit::float8 AS committed,
    s.xact_rollback::float8 AS rolled_back, s.deadlocks::float8 AS deadlocks
    FROM pg_database d JOIN pg_stat_database s ON s.datid = d.oid WHERE d.datallowconn AND NOT d.datistemplate`,
  backends: `SELECT datname, coalesce(state, 'unknown') AS state, count(*)::int AS count FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND datname IS NOT NULL GROUP BY 1, 2`,
} as const;

type Row = Record<string, unknown>;
export type Query = (sql: string) => Promise<Row[]>;

/** One scrape's samples, read with `query`. */
export async function collect(query: Query): Promise<Sample[]> {
  const [server] = await query(queries.server) as [Row];
  const primary = server.in_recovery === false;
  const samples: Sample[] = [
    ['keelson_postgres_in_recovery', {}, primary ? 0 : 1],
    ['keelson_postgres_start_time_seconds', {}, Number(server.started)],
    ['keelson_postgres_wal_position_bytes', {}, Number(server.position)],
    ['keelson_postgres_settings_pending_restart', {}, Number(server.pending_restart)],
  ];
  if (primary) {
    if (server.archive_mode !== 'off') {
      const [archiver] = await query(queries.archiver) as [Row];
      const last = archiver.last_archived_wal as string | null;
      samples.push(['keelson_postgres_archiver_archived_total', {}, Number(archiver.archived)],
        ['keelson_postgres_archiver_failed_total', {}, Number(archiver.failed)],
        ['keelson_postgres_archiver_last_archived_timestamp_seconds', {}, Number(archiver.last_archived)],
        ['keelson_postgres_archiver_last_failed_timestamp_seconds', {}, Number(archiver.last_failed)],
        ['keelson_postgres_archiver_ready_segments', {}, Number(archiver.ready)],
        ['keelson_postgres_archiver_oldest_ready_seconds', {}, Number(archiver.oldest)]);
      // Nothing archived since the start: how much waits is unknown, not nil.
      // A backup's label (<segment>.<offset>.backup) counts as its segment; a timeline's history file says nothing.
      const segment = last?.match(/^[0-9A-F]{24}/)?.[0];
      if (segment) samples.push(['keelson_postgres_archiver_lag_bytes', {},
        Math.max(0, Number(server.position) - walSegmentEnd(segment, Number(server.segment_bytes)))]);
    }
    const standbys = await query(queries.standbys);
    for (const standby of standbys) {
      const member = String(standby.application_name);
      for (const stage of ['sent', 'flushed', 'replayed'] as const) {
        samples.push(['keelson_postgres_replication_lag_bytes', { standby: member, stage }, Number(standby[stage])]);
      }
      samples.push(['keelson_postgres_replication_lag_seconds', { standby: member, stage: 'flushed' },
        Number(standby.flush_lag)],
      ['keelson_postgres_replication_lag_seconds', { standby: member, stage: 'replayed' }, Number(standby.replay_lag)]);
    }
    samples.push(['keelson_postgres_synchronous_standbys_required', {}, synchronousQuorum(String(server.synchronous))],
      ['keelson_postgres_synchronous_standbys_connected', {},
        standbys.filter((s) => s.sync_state === 'quorum' || s.sync_state === 'sync').length]);
  } else {
    const [receiver] = await query(queries.receiver) as [Row];
    samples.push(['keelson_postgres_wal_receiver_up', {}, receiver.streaming ? 1 : 0],
      ['keelson_postgres_replay_delay_seconds', {}, Number(receiver.delay)]);
  }
  for (const slot of await query(queries.slots)) {
    const labels = { slot: String(slot.slot_name) };
    samples.push(['keelson_postgres_replication_slot_retained_bytes', labels, Number(slot.retained)],
      ['keelson_postgres_replication_slot_active', labels, slot.active ? 1 : 0]);
  }
  for (const database of await query(queries.databases)) {
    const datname = String(database.datname);
    samples.push(['keelson_postgres_database_size_bytes', { datname }, Number(database.size)],
      ['keelson_postgres_transactions_total', { datname, outcome: 'committed' }, Number(database.committed)],
      ['keelson_postgres_transactions_total', { datname, outcome: 'rolled_back' }, Number(database.rolled_back)],
      ['keelson_postgres_deadlocks_total', { datname }, Number(database.deadlocks)]);
  }
  for (const backends of await query(queries.backends)) {
    samples.push(['keelson_postgres_backends', { datname: String(backends.datname), state: String(backends.state) },
      Number(backends.count)]);
  }
  return samples;
}

const escape = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

/** Prometheus's text format: each family's HELP and TYPE once, before its samples. */
export function exposition(samples: Sample[]): string {
  const lines: string[] = [];
  for (const [name, family] of Object.entries(agentMetrics) as [MetricName, Family][]) {
    const own = samples.filter(([n]) => n === name);
    if (!own.length) continue;
    lines.push(`# HELP ${name} ${family.help}.`, `# TYPE ${name} ${family.type}`);
    for (const [, labels, value] of own) {
      const pairs = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`).join(',');
      lines.push(`${name}${pairs ? `{${pairs}}` : ''} ${Number.isFinite(value) ? value : 'NaN'}`);
    }
  }
  return lines.join('\n') + '\n';
}

export interface MetricsServerOptions {
  socketDir: string;
  port: number;
  /** Says why a scrape could not read the server (it answers keelson_postgres_up 0 meanwhile). */
  onError: (error: Error) => void;
}

/** Reads the server through its socket, as monitorRole, within a few seconds; never waits on a lock. */
export async function scrape({ socketDir, port }: Omit<MetricsServerOptions, 'onError'>): Promise<Sample[]> {
  const client = new pg.Client({ host: socketDir, port, user: monitorRole, database: 'postgres',
    application_name: 'keelson-agent', connectionTimeoutMillis: 3_000, statement_timeout: 5_000,
    lock_timeout: 1_000, query_timeout: 6_000 } as pg.ClientConfig);
  try {
    await client.connect();
    return await collect(async (sql) => (await client.query(sql)).rows as Row[]);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Serves GET /metrics on `host`:metricsPort. */
export function serveMetrics(host: string, options: MetricsServerOptions, listenPort = metricsPort): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    scrape(options).then((samples) => [['keelson_postgres_up', {}, 1] as Sample, ...samples], (error: Error) => {
      options.onError(error);
      return [['keelson_postgres_up', {}, 0] as Sample];
    }).then((samples) => response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
      .end(exposition(samples)));
  });
  return new Promise((resolve, reject) => server.once('error', reject).listen(listenPort, host, () => resolve(server)));
}
