// spec.postgresql: PostgreSQL's parameters and pg_hba.conf rules, written into each member's data directory by exec
// (keelson.conf, included from postgresql.conf, and pg_hba.conf) and applied by a reload. What PostgreSQL would refuse
// as it reads the files at its next start is found on every member first (postgres -C reads them as a start does) and
// the files put back, so no member is left with a file it refuses. A parameter that only a start applies
// (pending_restart) is recorded on the member's pod, and the members are restarted one at a time, replicas first, as
// for a minor version; a restart that still fails (memory the node cannot give) stops the roll.
import { createHash } from 'node:crypto';
import { array, map, object, string, type Infer } from '../../api/schema.ts';
import { podReady, type Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import type { Condition } from '../../runtime/status.ts';
import type { PostgresClusterResource } from './schema.ts';
import { forgetUid } from '../../runtime/memos.ts';

/**
 * What the operator sets itself, or what would stop replication, archiving, failover or the pod's logs if set
 * otherwise: refused by the schema, as CloudNativePG refuses its fixed parameters.
 */
export const ownedParameters = [
  'listen_addresses', 'port', 'unix_socket_directories', 'unix_socket_group', 'unix_socket_permissions',
  'data_directory', 'config_file', 'hba_file', 'ident_file', 'external_pid_file',
  'wal_level', 'hot_standby', 'max_wal_senders', 'max_replication_slots', 'wal_log_hints', 'full_page_writes',
  'archive_mode', 'archive_command', 'archive_library', 'archive_timeout', 'restore_command',
  'archive_cleanup_command', 'recovery_end_command', 'recovery_target', 'recovery_target_action',
  'recovery_target_inclusive', 'recovery_target_lsn', 'recovery_target_name', 'recovery_target_time',
  'recovery_target_timeline', 'recovery_target_xid', 'primary_conninfo', 'primary_slot_name', 'promote_trigger_file',
  'synchronous_standby_names', 'wal_keep_size', 'max_slot_wal_keep_size',
  'logging_collector', 'log_destination', 'log_directory', 'log_filename',
  'ssl', 'ssl_cert_file', 'ssl_key_file', 'ssl_ca_file', 'ssl_crl_file', 'ssl_crl_dir', 'ssl_passphrase_command',
  // The operator's pg_hba rules take SCRAM verifiers, which the passwords it sets are stored as.
  'password_encryption',
  // Directives, not parameters: another file would get around this list.
  'include', 'include_if_exists', 'include_dir',
] as const;

const celList = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(', ')}]`;

export const postgresqlSpec = object({
  parameters: map(string({ description: 'The value, as in postgresql.conf, unquoted.', maxLength: 512,
    pattern: '^[^\\n\\r]*$' }), {
    description: 'PostgreSQL parameters (postgresql.conf), e.g. {"work_mem": "16MB", "shared_buffers": "256MB"}. ' +
      'Applied by a reload; one that needs a restart (pending_restart) restarts the members one at a time, replicas ' +
      'first and the primary after a switchover, as a minor version change does. A value PostgreSQL refuses changes ' +
      'nothing: ConfigurationApplied=False says why. What the operator sets itself (listen_addresses, port, wal_level, ' +
      'archive_*, primary_conninfo, synchronous_standby_names, ssl*, logging and replication settings) is refused. ' +
      'synchronous_commit below on (local, off) lets a failover lose acknowledged writes.', maxProperties: 64,
    rules: [
      { rule: 'self.all(k, size(k) <= 63 && k.matches(\'^[a-z_][a-z0-9_]*([.][a-z_][a-z0-9_]*)?$\'))',
        message: 'parameter names are up to 63 lower case letters, digits and _, with one . for an extension\'s' },
      // No messageExpression naming the one set: over a map's keys, whose length no schema bounds, its estimated
      // cost is past what the apiserver allows.
      { rule: `self.all(k, !(k in ${celList(ownedParameters)}))`, message: 'the operator sets listen_addresses, port, ' +
        'unix_socket_*, data_directory, config_file, hba_file, ident_file, external_pid_file, wal_level, hot_standby, ' +
        'max_wal_senders, max_replication_slots, wal_log_hints, full_page_writes, archive_*, restore_command, ' +
        'recovery_*, primary_conninfo, primary_slot_name, promote_trigger_file, synchronous_standby_names, ' +
        'wal_keep_size, max_slot_wal_keep_size, logging_collector, log_destination, log_directory, log_filename, ' +
        'ssl* and password_encryption itself, and include* would get around that' },
    ] }),
  pgHba: array(string({ description: 'A pg_hba.conf line, e.g. "host app app 10.0.0.0/8 scram-sha-256".',
    maxLength: 512, minLength: 1, pattern: '^[^\\n\\r]*$' }), {
    description: 'pg_hba.conf rules, applied by a reload, after the operator\'s own (local connections in the pod, ' +
      'replication by the replicator role, postgres to its database with its password) and before its last, which lets any role in with its password ' +
      '(host all all all scram-sha-256): a reject rule here keeps a role or database out. A rule PostgreSQL refuses ' +
      'changes nothing: ConfigurationApplied=False says why.', maxItems: 64 }),
}, { description: 'PostgreSQL\'s configuration on every member.' });

export type PostgresqlConfiguration = Infer<typeof postgresqlSpec>;

/** The pod annotation: the configuration (its hash) the member has applied. */
export const configurationAnnotation = 'keelson.dev/configuration';
/** The pod annotation: the parameters the member applies only once restarted. */
export const restartPendingAnnotation = 'keelson.dev/restart-pending';
/** The exit code of the apply script when PostgreSQL refuses the files; they were put back. */
export const refusedExitCode = 3;

/** A value as postgresql.conf reads one: single-quoted, with ' and \ escaped. */
const quoted = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, '\'\'')}'`;

export function parameterFile(parameters: Record<string, string> = {}): string {
  const lines = Object.keys(parameters).sort().map((name) => `${name} = ${quoted(parameters[name]!)}`);
  return ['# Written by the operator from spec.postgresql.parameters; changes here are overwritten.', ...lines, ''].join('\n');
}

/**
 * What the operator, the agent and the member scripts need, ahead of the user's rules: connections in the pod,
 * replication, the replicator's to the postgres database (a replica makes its slot on the primary so), and the
 * superuser's, which pg_rewind makes from a member coming back.
 */
const operatorRules = [
  'local all all trust',
  'local replication all trust',
  'host replication replicator all scram-sha-256',
  'host postgres replicator all scram-sha-256',
  'host postgres postgres all scram-sha-256',
];

/** The operator's rules first, the user's, then the default: any role in with its password. */
export function hbaFile(rules: readonly string[] = []): string {
  return ['# Written by the operator from spec.postgresql.pgHba; changes here are overwritten.', ...operatorRules,
    ...rules, 'host all all all scram-sha-256', ''].join('\n');
}

/** What members are to run with: a member whose pod says otherwise applies it. */
export function configurationHash(config: PostgresqlConfiguration | undefined): string {
  return createHash('sha256').update(JSON.stringify([parameterFile(config?.parameters), hbaFile(config?.pgHba)]))
    .digest('hex').slice(0, 16);
}

/**
 * What a standby must have at least as much of as its primary, or it stops: lowered, a restart of the replicas
 * first (the roll's order) would stop them.
 */
const standbyMinimums = ['max_connections', 'max_worker_processes', 'max_prepared_transactions', 'max_locks_per_transaction'];

/** The standby minimums the files lower below what the server runs with, by name. */
const loweredQuery = `SELECT string_agg(s.name, ', ' ORDER BY s.name) FROM pg_settings s WHERE s.name IN
  (${standbyMinimums.map((n) => `'${n}'`).join(', ')}) AND coalesce((SELECT f.setting FROM pg_file_settings f
  WHERE f.name = s.name ORDER BY f.seqno DESC LIMIT 1), s.boot_val)::numeric < s.setting::numeric`.replace(/\n */g, ' ');

/** Makes postgresql.conf (in the working directory, or $1) read keelson.conf last, once. */
const includeScript = (conf = 'postgresql.conf') => `grep -qx "include_if_exists = 'keelson.conf'" ${conf} || ` +
  `echo "include_if_exists = 'keelson.conf'" >> ${conf}`;

/** The ConfigMap's files, as the member script copies them into a data directory before PostgreSQL starts. */
export const configurationFiles = (config: PostgresqlConfiguration | undefined) =>
  ({ 'keelson.conf': parameterFile(config?.parameters), 'pg_hba.conf': hbaFile(config?.pgHba) });

/**
 * For the member script: the configuration the operator last accepted (the ConfigMap at CONFIG_DIR, where mounted),
 * over what the data directory holds, so that a member made again, or restarting after a value that kept it from
 * starting was fixed, starts with it.
 */
export const installConfigurationScript = `if [ -n "\${CONFIG_DIR:-}" ] && [ -f "$CONFIG_DIR/keelson.conf" ]; then
  cp "$CONFIG_DIR/keelson.conf" "$CONFIG_DIR/pg_hba.conf" "$PGDATA/"
  ${includeScript('"$PGDATA/postgresql.conf"')}
fi`;

const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
// Its own sessions load no library a spec named: one that is missing would keep them out too.
const sql = 'PGOPTIONS="-c session_preload_libraries= -c local_preload_libraries=" psql -X -v ON_ERROR_STOP=1 ' +
  '-h "${SOCKET_DIR:-/var/run/postgresql}" -U postgres -d postgres -Atc';

/**
 * Puts the files in place and checks them as PostgreSQL's next start and the hba view read them: each preloaded
 * library installed, no standby minimum lowered. Refused, it exits refusedExitCode with PostgreSQL's words; `check`
 * then ends there either way, and the old files are back whatever ends the script before the reload. `apply` reloads
 * and prints the parameters still pending a restart, one per line.
 */
export function configurationScript(config: PostgresqlConfiguration | undefined, mode: 'check' | 'apply'): string {
  const files = configurationFiles(config);
  return `set -eu
cd "$PGDATA"
printf '%s' '${base64(files['keelson.conf'])}' | base64 -d > keelson.conf.new
printf '%s' '${base64(files['pg_hba.conf'])}' | base64 -d > pg_hba.conf.new
${includeScript()}
if [ -f keelson.conf ]; then cp keelson.conf keelson.conf.old; else : > keelson.conf.old; fi
cp pg_hba.conf pg_hba.conf.old
trap 'mv keelson.conf.old keelson.conf; mv pg_hba.conf.old pg_hba.conf' EXIT
mv keelson.conf.new keelson.conf
mv pg_hba.conf.new pg_hba.conf
refuse() { printf '%s\\n' "$1" >&2; exit ${refusedExitCode}; }
libdir=$(${sql} "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
# A library a start, or every new session, would fail to load: local ones come from plugins/.
for setting in shared_preload_libraries session_preload_libraries local_preload_libraries; do
  if ! out=$(postgres -D "$PGDATA" -C $setting 2>&1); then
    refuse "$(printf '%s\\n' "$out" | grep -E '(LOG|ERROR|DETAIL):' | grep -v 'contains errors' | sed -E 's/^.*(LOG|ERROR|DETAIL): +//' | head -n 5)"
  fi
  dir=$libdir
  [ $setting != local_preload_libraries ] || dir=$libdir/plugins
  set -f
  for lib in $(printf '%s' "$out" | tail -n 1 | tr ',' ' '); do
    [ -f "$dir/$(basename "$lib" .so).so" ] || refuse "$setting: library \\"$lib\\" is not installed in the image"
  done
  set +f
done
hba=$(${sql} "SELECT 'pg_hba.conf rule ' || (line_number - ${operatorRules.length + 1}) || ': ' || error FROM pg_hba_file_rules WHERE error IS NOT NULL")
[ -z "$hba" ] || refuse "$hba"
lowered=$(${sql} "${loweredQuery}")
[ -z "$lowered" ] || refuse "$lowered: lowering it needs the primary restarted before its standbys, which keelson does \\
not do yet; a standby started with less than its primary has stops"
${mode === 'check' ? 'exit 0' : `trap - EXIT
rm -f keelson.conf.old pg_hba.conf.old
before=$(${sql} "SELECT pg_conf_load_time()")
${sql} "SELECT pg_reload_conf()" > /dev/null
waited=0
while [ "$(${sql} "SELECT pg_conf_load_time()")" = "$before" ]; do
  [ $waited -lt 100 ] || { echo "PostgreSQL did not reload its configuration within 10 s" >&2; exit 1; }
  sleep 0.1
  waited=$((waited + 1))
done
${sql} "SELECT name FROM pg_settings WHERE pending_restart ORDER BY name"`}
`;
}

/** A member script that exited with a code other than 0, with what it wrote on stderr. */
export class ScriptFailed extends Error {
  constructor(readonly pod: string, readonly exitCode: number, readonly stderr: string) {
    super(`${pod}: ${stderr.trim() || `exit ${exitCode}`}`);
  }
}

export interface ConfigurationDeps {
  run(namespace: string, pod: string, script: string): Promise<string>;
  annotate(namespace: string, pod: string, annotations: Record<string, string | null>): Promise<void>;
  /** Keeps the configuration a member accepted where members starting read it (objects.ts's configurationMap). */
  store(cluster: Cluster, config: PostgresqlConfiguration | undefined): Promise<void>;
  record(cluster: Cluster, type: 'Normal' | 'Warning', reason: string, note: string): void;
}

type Cluster = PostgresClusterResource & Owner;
type Pending = Omit<Condition, 'lastTransitionTime'>;


/** The postgres container's restarts: one copies the ConfigMap over the data directory, which may lag behind. */
const restarts = (pod: Pod) => pod.status?.containerStatuses?.find((c) => c.name === 'postgres')?.restartCount ?? 0;

/**
 * Brings the members to spec.postgresql while the cluster is steady (or a roll waits for a member it restarted, which
 * a corrected spec may be what it needs): checked on every ready member first, so that what one refuses changes
 * none; then stored for members starting; then applied to each member behind, one exec each, and recorded on its pod
 * with the container's restart count, since a restart copies the stored files over what was applied. Says in
 * ConfigurationApplied how far that is. One PostgreSQL refused is not tried again until the spec changes.
 */
export class MemberConfigurations {
  /** By cluster uid: the configuration PostgreSQL refused, and its words. */
  private readonly refused = new Map<string, { hash: string; message: string }>();

  constructor(private readonly deps: ConfigurationDeps) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.refused, uid);
  }

  async follow(cluster: Cluster, config: PostgresqlConfiguration | undefined, members: Pod[],
    { mayApply, size, generation }: { mayApply: boolean; size: number; generation: number | undefined }): Promise<Pending> {
    const hash = configurationHash(config);
    const uid = cluster.metadata.uid;
    const condition = (status: 'True' | 'False', reason: string, message: string): Pending =>
      ({ type: 'ConfigurationApplied', status, reason, message, observedGeneration: generation });
    if (this.refused.get(uid)?.hash !== hash) this.refused.delete(uid);
    const live = members.filter((p) => !p.metadata.deletionTimestamp);
    const stamp = (pod: Pod) => `${hash}/${restarts(pod)}`;
    // What this pass wrote, ahead of the cache.
    const written = new Map<string, Record<string, string | undefined>>();
    const annotation = (pod: Pod, key: string) => (written.get(pod.metadata.name) ?? pod.metadata.annotations)?.[key];
    const behind = () => live.filter((p) => annotation(p, configurationAnnotation) !== stamp(p));
    const run = (pod: Pod, mode: 'check' | 'apply') =>
      this.deps.run(pod.metadata.namespace!, pod.metadata.name, configurationScript(config, mode));
    const accepted = live.some((p) => annotation(p, configurationAnnotation)?.startsWith(`${hash}/`));
    try {
      if (mayApply && !this.refused.has(uid) && behind().some(podReady)) {
        for (const pod of live.filter(podReady)) await run(pod, 'check');
        await this.deps.store(cluster, config);
        for (const pod of behind().filter(podReady)) {
          const pending = (await run(pod, 'apply')).trim().split('\n').filter(Boolean);
          const name = pod.metadata.name;
          await this.deps.annotate(pod.metadata.namespace!, name, { [configurationAnnotation]: stamp(pod),
            [restartPendingAnnotation]: pending.length ? pending.join(',') : null });
          written.set(name, { [configurationAnnotation]: stamp(pod), [restartPendingAnnotation]: pending.join(',') || undefined });
          this.deps.record(cluster, 'Normal', 'ConfigurationReloaded', `Reloaded ${name} with spec.postgresql` +
            (pending.length ? `; ${pending.join(', ')} wait${pending.length > 1 ? '' : 's'} for its restart` : ''));
        }
      } else if (accepted && !this.refused.has(uid)) {
        // Kept as accepted: made again if deleted, put back if edited.
        await this.deps.store(cluster, config);
      }
    } catch (error) {
      if (!(error instanceof ScriptFailed) || error.exitCode !== refusedExitCode) {
        return condition('False', 'ApplyFailed', `could not apply spec.postgresql: ${(error as Error).message.slice(0, 600)}`);
      }
      const message = `PostgreSQL refused spec.postgresql on ${error.pod}, and no member was changed: ` +
        error.stderr.trim().slice(0, 900);
      this.refused.set(uid, { hash, message });
      this.deps.record(cluster, 'Warning', 'InvalidConfiguration', message);
    }
    const refusal = this.refused.get(uid);
    if (refusal) return condition('False', 'InvalidConfiguration', refusal.message);
    const restarting = live.filter((p) => annotation(p, restartPendingAnnotation));
    if (restarting.length) {
      const parameters = [...new Set(restarting.flatMap((p) => annotation(p, restartPendingAnnotation)!.split(',')))];
      const names = restarting.map((p) => p.metadata.name).join(', ');
      return condition('False', 'RestartPending', `${parameters.join(', ')} need${parameters.length > 1 ? '' : 's'} a ` +
        (size > 1 ? `restart: members restart one at a time, replicas first (${names} still to go)`
          : `restart, which a lone member is not given: delete pod ${names} when it may restart`));
    }
    const waiting = behind();
    if (waiting.length || live.length < size) {
      return condition('False', 'Applying', `spec.postgresql is applied to ${waiting.length
        ? waiting.map((p) => p.metadata.name).join(', ') : 'every member'} once the cluster is steady and ` +
        `${live.length < size ? `all ${size} members run and ` : ''}they are ready`);
    }
    return condition('True', 'Applied', 'spec.postgresql is in force on every member');
  }
}
