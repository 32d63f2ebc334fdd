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
  keelson_postgres_archiver_archived_total: { help: 'WAL segments archived since the statistics were reset',
    type: 'counter' },
  keelson_postgres_archiver_failed_total: { help: 'Failed attempts to archive a WAL segment since the statistics ' +
    'were reset', type: 'counter' },
  keelson_postgres_archiver_last_archived_timestamp_seconds: { help: 'When the last segment was archived (0: none ' +
    'since the statistics were reset)', type: 'gauge' },
  keelson_postgres_archiver_last_failed_timestamp_seconds: { help: 'When archiving last failed (0: never since the ' +
    'statistics were reset)', type: 'gauge' },
  keelson_postgres_archiver_ready_segments: { help: 'Completed WAL segments waiting to be archived', type: 'gauge' },
  keelson_postgres_archiver_oldest_ready_seconds: { help: 'How long the oldest segment waiting to be archived has ' +
    'waited (0: none waits)', type: 'gauge' },
  keelson_postgres_archiver_lag_bytes: { help: 'WAL written but not archived yet: from the end of the last segment ' +
    'archived to the position written', type: 'gauge' },
  keelson_postgres_standby_streaming: { help: 'Per standby connected to this primary: 1 streaming, 0 catching up',
    type: 'gauge' },
  keelson_postgres_replication_lag_bytes: { help: 'Per standby connected to this primary, how far behind it is, ' +
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
  keelson_postgres_database_xid_age: { help: 'Transactions since each database\'s oldest unfrozen transaction ID: ' +
    'wraparound looms past 2 billion', type: 'gauge' },
  keelson_postgres_backends: { help: 'Client connections, per database and state', type: 'gauge' },
  keelson_postgres_longest_transaction_seconds: { help: 'How long the oldest open transaction of a client has run ' +
    '(0: none)', type: 'gauge' },
  keelson_postgres_scrape_errors: { help: 'Per query, 1 when it failed at this scrape (its series are missing; the ' +
    'agent\'s log says why)', type: 'gauge' },
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
    ${epoch('last_archived_time')} AS last_archived, ${epoch('last_failed_time')} AS last_failed, w.ready, w.oldest
    FROM pg_stat_archiver, (SELECT count(*)::int AS ready, ${epoch('now() - min(modification)')} AS oldest
      FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready') w`,
  standbys: `SELECT application_name, sync_state, ${bytesBehind('sent_lsn')} AS sent, ${bytesBehind('flush_lsn')} AS
    flushed, ${bytesBehind('replay_lsn')} AS replayed, ${epoch('flush_lag')} AS flush_lag,
    ${epoch('replay_lag')} AS replay_lag, state FROM pg_stat_replication WHERE state IN ('streaming', 'catchup')`,
  receiver: `SELECT EXISTS (SELECT FROM pg_stat_wal_receiver WHERE status = 'streaming') AS streaming,
    CASE WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
      ELSE greatest(0, ${epoch('now() - pg_last_xact_replay_timestamp()')}) END AS delay`,
  slots: `SELECT slot_name, active, CASE WHEN pg_is_in_recovery() OR restart_lsn IS NULL THEN 0
    ELSE ${bytesBehind('restart_lsn')} END AS retained FROM pg_replication_slots`,
  databases: `SELECT d.datname, pg_database_size(d.oid)::float8 AS size, s.xact_commit::float8 AS committed,
    s.xact_rollback::float8 AS rolled_back, s.deadlocks::float8 AS deadlocks, age(d.datfrozenxid)::float8 AS xid_age
    FROM pg_database d JOIN pg_stat_database s ON s.datid = d.oid WHERE d.datallowconn AND NOT d.datistemplate`,
  backends: `SELECT datname, coalesce(state, 'unknown') AS state, count(*)::int AS count FROM pg_stat_activity
    WHERE backend_type = 'client backend' AND datname IS NOT NULL GROUP BY 1, 2`,
  longestTransaction: `SELECT greatest(0, ${epoch('max(now() - xact_start)')}) AS seconds FROM pg_stat_activity
    WHERE backend_type = 'client backend'`,
} as const;

type Row = Record<string, unknown>;
export type Query = (sql: string) => Promise<Row[]>;

/**
 * One scrape's samples, read with `query`. The server's own facts come first: failing those, the scrape fails
 * (keelson_postgres_up 0). Any other query failing costs only its series, said in keelson_postgres_scrape_errors.
 */
export async function collect(query: Query, onError: (query: string, error: Error) => void = () => undefined):
  Promise<Sample[]> {
  const [server] = await query(queries.server) as [Row];
  const primary = server.in_recovery === false;
  const samples: Sample[] = [
    ['keelson_postgres_in_recovery', {}, primary ? 0 : 1],
    ['keelson_postgres_start_time_seconds', {}, Number(server.started)],
    ['keelson_postgres_wal_position_bytes', {}, Number(server.position)],
    ['keelson_postgres_settings_pending_restart', {}, Number(server.pending_restart)],
  ];
  const add = (name: MetricName, value: unknown, labels: Labels = {}) => samples.push([name, labels, Number(value)]);
  const section = async (name: keyof typeof queries, read: (rows: Row[]) => void) => {
    try {
      read(await query(queries[name]));
    } catch (error) {
      onError(name, error as Error);
      add('keelson_postgres_scrape_errors', 1, { query: name });
    }
  };
  if (primary && server.archive_mode !== 'off') {
    await section('archiver', ([archiver]) => {
      add('keelson_postgres_archiver_archived_total', archiver!.archived);
      add('keelson_postgres_archiver_failed_total', archiver!.failed);
      add('keelson_postgres_archiver_last_archived_timestamp_seconds', archiver!.last_archived);
      add('keelson_postgres_archiver_last_failed_timestamp_seconds', archiver!.last_failed);
      add('keelson_postgres_archiver_ready_segments', archiver!.ready);
      add('keelson_postgres_archiver_oldest_ready_seconds', archiver!.oldest);
      // A backup's label (<segment>.<offset>.backup) counts as its segment; a timeline's history file says nothing,
      // and with nothing archived since the statistics were reset how much waits is unknown, not nil.
      const segment = (archiver!.last_archived_wal as string | null)?.match(/^[0-9A-F]{24}/)?.[0];
      if (segment) add('keelson_postgres_archiver_lag_bytes',
        Math.max(0, Number(server.position) - walSegmentEnd(segment, Number(server.segment_bytes))));
    });
  }
  if (primary) {
    await section('standbys', (standbys) => {
      for (const standby of standbys) {
        const member = String(standby.application_name);
        add('keelson_postgres_standby_streaming', standby.state === 'streaming' ? 1 : 0, { standby: member });
        for (const stage of ['sent', 'flushed', 'replayed'] as const) {
          add('keelson_postgres_replication_lag_bytes', standby[stage], { standby: member, stage });
        }
        add('keelson_postgres_replication_lag_seconds', standby.flush_lag, { standby: member, stage: 'flushed' });
        add('keelson_postgres_replication_lag_seconds', standby.replay_lag, { standby: member, stage: 'replayed' });
      }
      add('keelson_postgres_synchronous_standbys_required', synchronousQuorum(String(server.synchronous)));
      add('keelson_postgres_synchronous_standbys_connected', standbys.filter((s) => s.state === 'streaming' &&
        (s.sync_state === 'quorum' || s.sync_state === 'sync')).length);
    });
  } else {
    await section('receiver', ([receiver]) => {
      add('keelson_postgres_wal_receiver_up', receiver!.streaming ? 1 : 0);
      add('keelson_postgres_replay_delay_seconds', receiver!.delay);
    });
  }
  await section('slots', (slots) => {
    for (const slot of slots) {
      add('keelson_postgres_replication_slot_retained_bytes', slot.retained, { slot: String(slot.slot_name) });
      add('keelson_postgres_replication_slot_active', slot.active ? 1 : 0, { slot: String(slot.slot_name) });
    }
  });
  await section('databases', (databases) => {
    for (const database of databases) {
      const datname = String(database.datname);
      add('keelson_postgres_database_size_bytes', database.size, { datname });
      add('keelson_postgres_transactions_total', database.committed, { datname, outcome: 'committed' });
      add('keelson_postgres_transactions_total', database.rolled_back, { datname, outcome: 'rolled_back' });
      add('keelson_postgres_deadlocks_total', database.deadlocks, { datname });
      add('keelson_postgres_database_xid_age', database.xid_age, { datname });
    }
  });
  await section('backends', (backends) => {
    for (const b of backends) add('keelson_postgres_backends', b.count, { datname: String(b.datname), state: String(b.state) });
  });
  await section('longestTransaction', ([longest]) => add('keelson_postgres_longest_transaction_seconds', longest!.seconds));
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
      const text = Number.isNaN(value) ? 'NaN' : value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : String(value);
      lines.push(`${name}${pairs ? `{${pairs}}` : ''} ${text}`);
    }
  }
  return lines.join('\n') + '\n';
}

export interface MetricsServerOptions {
  socketDir: string;
  port: number;
  /** Says why the server, or one query, could not be read. */
  onError: (error: Error, query?: string) => void;
}

/** Past this a scrape gives up (its connection closed): within Prometheus's default scrape timeout of 10 s. */
const scrapeDeadlineMs = 8_000;

/** Reads the server through its socket, as monitorRole, within scrapeDeadlineMs; never waits on a lock. */
export async function scrape({ socketDir, port, onError }: MetricsServerOptions): Promise<Sample[]> {
  const client = new pg.Client({ host: socketDir, port, user: monitorRole, database: 'postgres',
    application_name: 'keelson-agent', connectionTimeoutMillis: 3_000, statement_timeout: 5_000,
    lock_timeout: 1_000, query_timeout: 6_000 } as pg.ClientConfig);
  // A session ended by the server (a crash, a shutdown, pg_terminate_backend) is an 'error' event: unheard, it
  // would end the agent, and with it the renewals that keep the primary up.
  client.on('error', (error) => onError(error));
  const deadline = setTimeout(() => void client.end().catch(() => undefined), scrapeDeadlineMs);
  try {
    await client.connect();
    return await collect(async (sql) => (await client.query(sql)).rows as Row[],
      (query, error) => onError(error, query));
  } finally {
    clearTimeout(deadline);
    await client.end().catch(() => undefined);
  }
}

/**
 * Serves GET /metrics on `host`:metricsPort. Scrapes that come while one runs share it: however many ask, the agent
 * holds one connection at most (the role allows two).
 */
export function serveMetrics(host: string, options: MetricsServerOptions, listenPort = metricsPort): Promise<Server> {
  let running: Promise<string> | undefined;
  const read = () => scrape(options).then((samples) => [['keelson_postgres_up', {}, 1] as Sample, ...samples],
    (error: Error) => {
      options.onError(error);
      return [['keelson_postgres_up', {}, 0] as Sample];
    }).then(exposition, () => exposition([['keelson_postgres_up', {}, 0]]));
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics\n');
      return;
    }
    running ??= read().finally(() => { running = undefined; });
    void running.then((text) => response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text))
      .catch(() => response.destroy());
  });
  return new Promise((resolve, reject) => server.once('error', reject).listen(listenPort, host, () => resolve(server)));
}
