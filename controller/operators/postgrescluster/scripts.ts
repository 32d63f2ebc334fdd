// What a member runs, as POSIX sh over PostgreSQL's own tools (initdb, pg_basebackup, pg_rewind, pg_ctl, psql),
// which the postgres image has on its PATH. The operator mounts these into member pods, and
// runs the short ones through exec; tests run the same text against PostgreSQL servers on this machine.
//
// Environment, set by the operator from the spec and the cluster's Secrets:
//   PGDATA, PGPORT            the data directory and port; PGDATA is below the root of the member's volume, as a
//                             new one is made beside it (PGDATA.new) and renamed into place
//   SOCKET_DIR                where the server's Unix socket lives (default /var/run/postgresql)
//   LISTEN                    listen_addresses (default '*')
//   MEMBER_ROLE               primary or replica: what the member is to be when it starts; ROLE_FILE, if set,
//                             names the file the member agent writes once it has read the cluster's Lease: the
//                             member waits until it is fresh, and the role in it wins (so a promoted member
//                             restarts as the primary, and a fenced one only as what the Lease says); the script
//                             then stays PID 1 and stops a primary whose file has not said "primary" afresh for
//                             FENCE_AFTER seconds (default 8); a promotion waits for the file to say "primary"
//   PRIMARY_HOST, PRIMARY_PORT  where a replica streams from
//   POSTGRES_PASSWORD, REPLICATION_PASSWORD  the superuser's and the replication user's passwords
//   BOOTSTRAPPED              "true": the cluster's data exists, so a primary with no data stops rather than initdb
//   SYNCHRONOUS_STANDBY_NAMES  the standbys a primary's commits wait for (empty: none), given when it is promoted
//                             and when they change; PROMOTE_TIMEOUT, the seconds a promotion may take (default 60)
//   REPLICATION_SLOT          the member's physical replication slot on the primary, which keeps the WAL it has not
//                             received; SLOTS, the slots a primary keeps (one per other member, space-separated),
//                             and SLOT_PATTERN, what the cluster's slots look like (others are left alone)
//   WAL_KEEP_SIZE, MAX_SLOT_WAL_KEEP_SIZE  how much WAL a primary keeps regardless of slots, and for a slot at most
//   RECOVER_STANZA, RECOVER_PATH, RECOVER_TARGET_TYPE, RECOVER_TARGET  a primary with no data recovers a cluster's
//                             archive to that target (archive.ts's recoveryEnv); RECOVER_SET, one backup, to its end;
//                             RECOVER_FROM_VOLUME, "true": from a backup volume mounted at RECOVER_PATH
//   PGBACKREST_STANZA, PGBACKREST_...  pgBackRest's settings (archive.ts): when set, WAL is archived with it;
//                             ARCHIVE_TIMEOUT, the seconds a quiet primary may keep a WAL segment open
//   CONFIG_DIR                the configuration the operator last accepted (configuration.ts), copied into the data
//                             directory before PostgreSQL starts
//   TLS_SOURCE, TLS_DIR       where the server certificate is mounted (tls.crt, tls.key, ca.crt; tls.ts), and where it
//                             is copied for PostgreSQL to read, again whenever the mounted one changes (then reloaded)
//   PRIMARY_SSLMODE, PRIMARY_CA  how connections to the primary verify it (verify-full; prefer only in the one roll
//                             that brings TLS to a cluster made without it), and against which CA (default the copy of
//                             ca.crt in TLS_DIR)
//   RECLONE_AFTER             seconds a replica may go without streaming from a primary that takes writes before it
//                             is cloned afresh (default 90: past wal_sender_timeout, which frees a slot a gone
//                             connection held); MAX_LAG_BYTES, how far a ready replica's replay may
//                             trail what its primary sent it (default 16 MiB)

import { installConfigurationScript } from './configuration.ts';

/** The role the member agent reads statistics as (metrics.ts): pg_monitor's rights, no password, so it logs in over
 * the pod's Unix socket only. */
export const monitorRole = 'keelson_monitor';
/**
 * SQL that makes monitorRole where it is missing and gives it what it needs, and no more than two connections,
 * escaped for a double-quoted shell word.
 */
const monitorRoleSql = `DO \\$\\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${monitorRole}') THEN ` +
  `CREATE ROLE ${monitorRole}; END IF; END \\$\\$; ALTER ROLE ${monitorRole} LOGIN CONNECTION LIMIT 2; ` +
  `GRANT pg_monitor TO ${monitorRole}`;

const common = `set -eu
SOCKET_DIR=\${SOCKET_DIR:-/var/run/postgresql}
LISTEN=\${LISTEN:-*}
# SQL_TIMEOUT, where set, bounds each query: the PID 1 loop, which fences, must never hang on a server that does.
local_sql() {
  \${SQL_TIMEOUT:+timeout "$SQL_TIMEOUT"} psql -X -v ON_ERROR_STOP=1 -h "$SOCKET_DIR" -p "$PGPORT" -U postgres -d postgres \\
    -Atc "$1"
}
set_synchronous() {
  local_sql "ALTER SYSTEM SET synchronous_standby_names = '$1'" >/dev/null
  local_sql "SELECT pg_reload_conf()" >/dev/null
}
# What every connection to the primary (clone, rewind, slots, streaming, backups) adds to its conninfo: TLS, verified
# as PRIMARY_SSLMODE says against PRIMARY_CA. Never exported: PostgreSQL's own connections elsewhere (subscriptions,
# postgres_fdw) keep libpq's defaults.
tls_options() {
  [ -z "\${PRIMARY_SSLMODE:-}" ] || echo " sslmode=$PRIMARY_SSLMODE sslrootcert=\${PRIMARY_CA:-$TLS_DIR/current/ca.crt}"
}
conninfo() {
  echo "host=$PRIMARY_HOST port=$PRIMARY_PORT user=replicator password=$REPLICATION_PASSWORD application_name=$(hostname)$(tls_options)"
}
primary_sql() {
  PGPASSWORD=$REPLICATION_PASSWORD \${SQL_TIMEOUT:+timeout "$SQL_TIMEOUT"} psql -X -v ON_ERROR_STOP=1 -Atc "$1" \
    -d "host=$PRIMARY_HOST port=$PRIMARY_PORT user=replicator dbname=postgres connect_timeout=3$(tls_options)"
}
# SQL that makes slot $1 where it is missing, reserving WAL from now on; one whose WAL was lost (past
# max_slot_wal_keep_size) is made again, as it can serve nobody.
slot_sql() {
  echo "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '$1' AND wal_status = 'lost' AND NOT active;
DO \\$\\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_replication_slots WHERE slot_name = '$1') THEN
    PERFORM pg_create_physical_replication_slot('$1', true);
  END IF;
EXCEPTION WHEN duplicate_object THEN NULL;
END \\$\\$;"
}
# This replica's slot on the primary, so the primary keeps the WAL it has yet to receive.
ensure_slot() { [ -z "\${REPLICATION_SLOT:-}" ] || primary_sql "$(slot_sql "$REPLICATION_SLOT")" >/dev/null; }
`;

/**
 * What every data directory the cluster makes (the shell word `dir`) adds to initdb's postgresql.conf: streaming
 * replication to as many members as the spec allows, and the WAL hints pg_rewind needs.
 */
export const clusterSettings = (dir: string) => `cat >> ${dir}/postgresql.conf <<EOF
wal_level = replica
max_wal_senders = 16
max_replication_slots = 16
hot_standby = on
wal_log_hints = on
EOF`;

/** How the member script ends on a primary's volume with no data once the cluster's data exists. */
export const noDataExitCode = 4;
/** How it ends when asked to start a primary on data of another PostgreSQL major version. */
export const otherMajorExitCode = 5;

/**
 * The member's entry point. A member with no data is created: recovered from a backup (RECOVER_STANZA), cloned from
 * the primary (a replica) or initialised (the seed). A member with data that is to be a replica but was a primary
 * (no standby.signal: it was the primary before a failover) is rewound onto the new primary's timeline first, or
 * cloned afresh if pg_rewind fails. Then the server runs in the foreground.
 */
export const memberScript = `${common}
# Sets this cluster's passwords in data directory $1 with the server up on a private socket only, so that nothing (a
# readiness probe, a client) takes the member for ready before it is.
set_passwords() {
  socket=$SOCKET_DIR
  SOCKET_DIR=$(mktemp -d)
  log=$(mktemp)
  # With archiving, what this start writes is archived too: a recovery's promotion makes a timeline whose history
  # file a later recovery needs (archive_mode=on here: what it restores from another archive is not pushed again).
  archiving=
  [ -z "\${PGBACKREST_STANZA:-}" ] ||
    archiving="-c archive_mode=on -c archive_command='pgbackrest archive-push %p'"
  pg_ctl -D "$1" -w -t 86400 -l "$log" \\
    -o "-c listen_addresses='' -c synchronous_standby_names='' -p $PGPORT -k $SOCKET_DIR $archiving" \\
    start >/dev/null || { cat "$log" >&2; exit 1; }
  # A recovery replays up to its target first, then promotes: only then are roles writable. One that cannot reach
  # its target stops PostgreSQL, whose log says why.
  while state=$(local_sql "SELECT pg_is_in_recovery()" 2>/dev/null || echo down); [ "$state" = t ]; do sleep 1; done
  [ "$state" = f ] || { echo "PostgreSQL stopped before it could take writes:" >&2; cat "$log" >&2; exit 1; }
  local_sql "ALTER ROLE postgres PASSWORD '$POSTGRES_PASSWORD'" >/dev/null
  local_sql "DO \\$\\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'replicator') THEN CREATE ROLE replicator REPLICATION LOGIN; END IF; END \\$\\$" >/dev/null
  local_sql "ALTER ROLE replicator PASSWORD '$REPLICATION_PASSWORD'" >/dev/null
  local_sql "${monitorRoleSql}" >/dev/null
  pg_ctl -D "$1" -w -m fast stop >/dev/null
  rm -f "$log"
  rmdir "$SOCKET_DIR"
  SOCKET_DIR=$socket
}
# What a clone, a rewind or a restore copies from another primary's postgresql.auto.conf: its standbys are not this
# member's (until the operator names this one's, none is waited for), nor is its primary.
drop_copied_settings() {
  sed -i '/^primary_conninfo/d; /^primary_slot_name/d; /^synchronous_standby_names/d' "$1/postgresql.auto.conf"
}
# Streams from the primary through this member's slot, with the cluster's passwords of now. Slots are the primary's:
# one a replica kept from when it was a primary would hold its WAL for nobody.
follow_primary() {
  touch "$1/standby.signal"
  drop_copied_settings "$1"
  echo "primary_conninfo = '$(conninfo)'" >> "$1/postgresql.auto.conf"
  [ -z "\${REPLICATION_SLOT:-}" ] || echo "primary_slot_name = '$REPLICATION_SLOT'" >> "$1/postgresql.auto.conf"
  rm -rf "$1/pg_replslot/"*
}
# Recovery from a cluster's archive (RECOVER_STANZA at RECOVER_PATH, in the repository pgBackRest is configured with,
# or with RECOVER_FROM_VOLUME=true in a backup volume mounted there): the backup RECOVER_SET, to its end; else the
# latest base backup before RECOVER_TARGET (of RECOVER_TARGET_TYPE time, lsn or name), then its WAL up to the target
# (none: all of it), replayed on a private socket until promoted.
recover() {
  echo "recovering $RECOVER_STANZA from $RECOVER_PATH\${RECOVER_SET:+, backup $RECOVER_SET}\${RECOVER_TARGET:+ up to \
$RECOVER_TARGET_TYPE $RECOVER_TARGET}" >&2
  # archive-get reads the data directory's pg_control too: the one being made, until it is renamed into place.
  from="--stanza=$RECOVER_STANZA --repo1-path=$RECOVER_PATH --pg1-path=$1"
  # Another cluster's volume is read as a directory, not through this cluster's repository host.
  [ "\${RECOVER_FROM_VOLUME:-}" != true ] || from="$from --reset-repo1-host --repo1-type=posix"
  if [ -n "\${RECOVER_SET:-}" ]; then
    target="--set=$RECOVER_SET --type=immediate --target-action=promote"
  elif [ -n "\${RECOVER_TARGET:-}" ]; then
    target="--type=$RECOVER_TARGET_TYPE --target-action=promote"
  else
    target=
  fi
  # RECOVER_TARGET alone is quoted: a time has a space in it.
  pgbackrest $from $target \${RECOVER_TARGET:+"--target=$RECOVER_TARGET"} \
    --recovery-option="restore_command=pgbackrest $from archive-get %f \\"%p\\"" restore
  drop_copied_settings "$1"
  set_passwords "$1"
  # Its target is behind it: a replica cloned from it, or it as one after a failover, must not stop there.
  sed -i '/^recovery_target/d; /^restore_command/d' "$1/postgresql.auto.conf"
}
clone() {
  echo "cloning from $PRIMARY_HOST:$PRIMARY_PORT" >&2
  ensure_slot
  # Through the member's own slot, made above: no temporary one, and the WAL it needs kept from the start.
  PGPASSWORD=$REPLICATION_PASSWORD pg_basebackup -d "host=$PRIMARY_HOST port=$PRIMARY_PORT user=replicator$(tls_options)" \\
    -D "$1" \\
    -X stream --checkpoint=fast \${REPLICATION_SLOT:+-S "$REPLICATION_SLOT"}
  follow_primary "$1"
}
initialise() {
  echo "initialising a new cluster" >&2
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb -D "$1" -U postgres --pwfile="$pwfile" --data-checksums --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  ${clusterSettings('"$1"')}
  cat >> "$1/pg_hba.conf" <<EOF
host replication replicator all scram-sha-256
host all all all scram-sha-256
EOF
  set_passwords "$1"
}
# Makes the data directory with $1 (restore, clone or initialise) beside it, on the same volume, and renames it into
# place once whole: a member stopped halfway starts over, not on half a data directory. What is in the way goes: a
# leftover of such a start, or a data directory without PG_VERSION (a clone made in place, as before, cut short).
create() {
  rm -rf "$PGDATA.new"
  mkdir -p -m 700 "$PGDATA.new"
  "$1" "$PGDATA.new"
  rm -rf "$PGDATA"
  mv "$PGDATA.new" "$PGDATA"
}

# Copies the mounted certificate where PostgreSQL reads it (TLS_DIR/current), the key readable by this user only, as
# PostgreSQL asks; succeeds when anything changed. The three files are taken from one of kubelet's snapshots (..data,
# swapped whole) into a fresh directory, and current is pointed at it only once all are there.
tls_copied() {
  tls_from=$(readlink -f "$TLS_SOURCE/..data" 2>/dev/null) && [ -d "$tls_from" ] || tls_from=$TLS_SOURCE
  for tls_file in tls.crt tls.key ca.crt; do
    cmp -s "$tls_from/$tls_file" "$TLS_DIR/current/$tls_file" || break
    [ $tls_file != ca.crt ] || return 1
  done
  tls_next=a
  [ "$(readlink "$TLS_DIR/current" 2>/dev/null)" != a ] || tls_next=b
  rm -rf "\${TLS_DIR:?}/$tls_next"
  (umask 077 && mkdir "$TLS_DIR/$tls_next" &&
    cp "$tls_from/tls.crt" "$tls_from/tls.key" "$tls_from/ca.crt" "$TLS_DIR/$tls_next/") &&
    ln -sfn "$tls_next" "$TLS_DIR/current"
}
# Now, for the CA a clone or a rewind verifies the primary with; again just before PostgreSQL starts.
[ -z "\${TLS_SOURCE:-}" ] || tls_copied || :

FENCE_AFTER=\${FENCE_AFTER:-8}
# The seconds since the agent last wrote its word; a word withdrawn meanwhile is as old as can be.
role_age() { echo $(($(date +%s) - $(stat -c %Y "$ROLE_FILE" 2>/dev/null || echo 0))); }
if [ -n "\${ROLE_FILE:-}" ]; then
  waited=0
  until [ -f "$ROLE_FILE" ] && [ "$(role_age)" -lt "$FENCE_AFTER" ]; do
    [ $((waited % 15)) -eq 0 ] && echo "waiting for the member agent to confirm this member's role" >&2
    sleep 1
    waited=$((waited + 1))
  done
  MEMBER_ROLE=$(cat "$ROLE_FILE")
  echo "starting as $MEMBER_ROLE" >&2
fi
# After a major upgrade (upgrade.ts) the primary's data is the new major's; a replica's, still the old one's, is a
# copy of what the primary had, and is cloned afresh. A primary's of another major stops here: the operator upgrades it.
data_major=$(cat "$PGDATA/PG_VERSION" 2>/dev/null || :)
server_major=$(postgres -V | sed 's/^[^0-9]*\\([0-9]*\\).*/\\1/')
if [ -n "$data_major" ] && [ "$data_major" != "$server_major" ]; then
  if [ "$MEMBER_ROLE" = replica ]; then
    echo "this replica's data is PostgreSQL $data_major's and this server is $server_major: cloned afresh" >&2
    create clone
  else
    echo "this member's data is PostgreSQL $data_major's and this server is $server_major: it is not started" >&2
    exit ${otherMajorExitCode}
  fi
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -n "\${RECOVER_STANZA:-}" ] && [ "$MEMBER_ROLE" = primary ]; then
    create recover
  elif [ "$MEMBER_ROLE" = replica ]; then
    create clone
  elif [ "\${BOOTSTRAPPED:-}" = true ]; then
    # A volume that came back empty (a node reimaged, a claim made again) under the member the Lease names: initdb
    # here would make a new, empty cluster that every replica then cloned. It stops instead, with an exit code of its
    # own, and a replica with the data is promoted in its place.
    echo "this member is to be the primary, but its volume has no data and the cluster's data exists: it is not" \
      "initialised again; a replica is promoted in its place, or, with none left, deleting its claim and pod" \
      "restores the cluster from its backups" >&2
    exit ${noDataExitCode}
  else
    create initialise
  fi
elif [ "$MEMBER_ROLE" = replica ] && [ ! -f "$PGDATA/standby.signal" ]; then
  echo "rewinding onto $PRIMARY_HOST:$PRIMARY_PORT" >&2
  source="host=$PRIMARY_HOST port=$PRIMARY_PORT user=postgres dbname=postgres$(tls_options)"
  # While the primary cannot be reached, the member stops here with its data: only a rewind that failed replaces it.
  PGPASSWORD=$POSTGRES_PASSWORD psql -X -d "$source" -c CHECKPOINT >/dev/null
  if PGPASSWORD=$POSTGRES_PASSWORD pg_rewind -D "$PGDATA" --source-server="$source"; then
    follow_primary "$PGDATA"
  else
    # A replica to be: what its data has that the primary's lacks, a rewind would have dropped as well, so a fresh
    # clone loses nothing more, and does not fail again at every start.
    echo "pg_rewind failed: this member's data is replaced by a fresh clone" >&2
    create clone
  fi
elif [ -f "$PGDATA/standby.signal" ]; then
  follow_primary "$PGDATA"
fi
if [ -f "$PGDATA/standby.signal" ]; then
  # While the primary is out of reach the slot is made later, by the loop below, before the replica can stream.
  ensure_slot 2>/dev/null || echo "could not make replication slot \${REPLICATION_SLOT:-} on $PRIMARY_HOST yet" >&2
fi
${installConfigurationScript}
set -- -D "$PGDATA" -p "$PGPORT" -k "$SOCKET_DIR" -c listen_addresses="$LISTEN"
[ -z "\${WAL_KEEP_SIZE:-}" ] || set -- "$@" -c wal_keep_size="$WAL_KEEP_SIZE"
if [ -n "\${TLS_SOURCE:-}" ]; then
  tls_copied || :
  set -- "$@" -c ssl=on -c "ssl_cert_file=$TLS_DIR/current/tls.crt" -c "ssl_key_file=$TLS_DIR/current/tls.key"
fi
[ -z "\${MAX_SLOT_WAL_KEEP_SIZE:-}" ] || set -- "$@" -c max_slot_wal_keep_size="$MAX_SLOT_WAL_KEEP_SIZE"
# Archiving, where pgBackRest is configured: a primary pushes each completed WAL segment (and one at least every
# ARCHIVE_TIMEOUT seconds), and a replica whose primary no longer has a segment fetches it from the archive.
if [ -n "\${PGBACKREST_STANZA:-}" ]; then
  set -- "$@" -c archive_mode=on -c "archive_command=pgbackrest archive-push %p" \
    -c "restore_command=pgbackrest archive-get %f \"%p\"" -c archive_timeout="\${ARCHIVE_TIMEOUT:-60}"
fi
[ -n "\${ROLE_FILE:-}" ] || exec postgres "$@"
# A primary sets the passwords it was given once it takes writes, as it starts on its data or is promoted: the
# operator makes the credentials Secret again with new ones when it was deleted while no member ran to say the old.
# Run in the background, so that a lock it waits on never holds up the fence; the file says it is done (one left by
# an earlier start of the container, whose run directory outlives it, is not this start's).
reset_passwords=1
passwords_set="$SOCKET_DIR/.passwords-set.$PGPORT"
rm -f "$passwords_set"
next_reset=0

# From here this script stays the container's PID 1, PostgreSQL its child: a primary is stopped (immediate shutdown)
# as soon as the agent's word is not "primary", or has not changed for FENCE_AFTER seconds, counted on the boot
# clock, which nobody sets. So an agent that is dead, hung or cut off fences as surely as one that says so.
# A server certificate kubelet brings is copied in and reloaded within 10 s.
# A replica that does not stream, nor replay, for RECLONE_AFTER seconds while another member takes writes as the
# primary and its agent says the Lease names that one (its WAL gone from the primary, its timeline not the
# primary's) is cloned afresh: what only it had was never acknowledged.
postgres "$@" &
pid=$!
trap 'kill -TERM $pid' TERM
trap 'kill -INT $pid' INT
uptime() { cut -d. -f1 /proc/uptime; }
RECLONE_AFTER=\${RECLONE_AFTER:-90}
SQL_TIMEOUT=10
mark=
stuck=
replayed=
next_check=0
# Not at once: PostgreSQL has just read the certificate, and a SIGHUP before it sets its handlers would end it.
next_tls=$(($(cut -d. -f1 /proc/uptime) + 10))
while kill -0 "$pid" 2>/dev/null; do
  now=$(uptime)
  current=$(stat -c '%i %y' "$ROLE_FILE" 2>/dev/null || echo none)
  if [ "$current" != "$mark" ]; then
    # First seen now, but written earlier: its age so far counts.
    age=0
    [ "$current" = none ] || age=$(role_age)
    [ "$age" -ge 0 ] || age=0
    mark=$current
    seen=$((now - age))
  fi
  word=$(cat "$ROLE_FILE" 2>/dev/null || echo nothing)
  if [ ! -f "$PGDATA/standby.signal" ]; then
    if [ "$word" != primary ] || [ $((now - seen)) -ge "$FENCE_AFTER" ]; then
      echo "stopping PostgreSQL: the member agent says $word, unchanged for $((now - seen))s" >&2
      kill -QUIT "$pid"
      wait "$pid"
      exit 3
    fi
    # Committed locally (synchronous standbys may be the very members that cannot log in yet), and never logged:
    # settings of the session, which apply before the statement is read (one SET in it would come too late).
    if [ -f "$passwords_set" ]; then
      reset_passwords=
    elif [ -n "$reset_passwords" ] && [ "$now" -ge "$next_reset" ]; then
      next_reset=$((now + 5))
      (SQL_TIMEOUT=5
        export PGOPTIONS="-c log_statement=none -c log_min_error_statement=panic -c log_min_duration_statement=-1 \
-c lock_timeout=1s -c synchronous_commit=local"
        local_sql "ALTER ROLE postgres PASSWORD '$POSTGRES_PASSWORD'; ALTER ROLE replicator PASSWORD '$REPLICATION_PASSWORD'" \
          >/dev/null 2>&1 && touch "$passwords_set") &
    fi
  elif [ "$now" -ge "$next_check" ]; then
    # Promoted, it sets them again.
    rm -f "$passwords_set"
    reset_passwords=1
    next_check=$((now + 5))
    state=$(local_sql "SELECT coalesce((SELECT status FROM pg_stat_wal_receiver), 'none') || ' ' ||
      pg_last_wal_replay_lsn()" 2>/dev/null || echo down)
    # Only time while another member takes writes counts: not a failover, in which this member may be the one promoted,
    # nor while a connection of this member's that is gone still holds its slot there (until wal_sender_timeout).
    if [ "\${state%% *}" = streaming ] || [ "$state" = down ] || [ "$state" != "$replayed" ] || [ "$word" != replica ] ||
      [ "$(primary_sql "SELECT pg_is_in_recovery() OR EXISTS (SELECT FROM pg_replication_slots
        WHERE slot_name = '\${REPLICATION_SLOT:-}' AND active)" 2>/dev/null || :)" != f ]; then
      stuck=
    else
      stuck=\${stuck:-$now}
      # After a failover the new primary may not have this member's slot yet: once it has, the next try streams.
      ensure_slot 2>/dev/null || :
      if [ $((now - stuck)) -ge "$RECLONE_AFTER" ] && [ "$(cat "$ROLE_FILE" 2>/dev/null || :)" = replica ] &&
        [ "$(local_sql "SELECT pg_is_in_recovery()" 2>/dev/null || :)" = t ]; then
        echo "not streaming for $((now - stuck))s from $PRIMARY_HOST, which takes writes: cloning afresh" >&2
        kill -INT "$pid"
        wait "$pid" || :
        create clone
        postgres "$@" &
        pid=$!
        next_tls=$((now + 10))
        stuck=
      fi
    fi
    replayed=$state
  fi
  if [ -n "\${TLS_SOURCE:-}" ] && [ "$now" -ge "$next_tls" ]; then
    next_tls=$((now + 10))
    if tls_copied; then
      echo "reloading PostgreSQL: its server certificate changed" >&2
      kill -HUP "$pid" 2>/dev/null || :
    fi
  fi
  sleep 1 &
  wait $!
done
wait "$pid"`;

/**
 * Prints "primary <lsn>" or "replica <lsn> <replayed lsn>": how far the member's WAL goes. A replica's goes as far as
 * it flushed what it received, replayed or not (promoted, it replays it all); nothing received yet, as far as it
 * replayed. A replica first ends its WAL receiver, which flushes what it has as it exits: the connection to a primary
 * cut off may still bring WAL the old primary's kernel held back, once the network heals, after this answer. The
 * replica would then go past the fork point of the member promoted on this answer, and could not follow it. The
 * startup process starts a new receiver, which reaches only a primary that takes writes. A receiver that does not end
 * within 3 s (hung on its disk, say) is not waited for: the member answers with what it flushed, as it would have,
 * and can still take held-back WAL after its answer; a member that then cannot follow is cloned afresh (RECLONE_AFTER).
 */
export const positionScript = `${common}
receiver=$(local_sql "SELECT pid FROM pg_stat_wal_receiver")
if [ -n "$receiver" ]; then
  kill -TERM "$receiver" 2>/dev/null || :
  tries=0
  while kill -0 "$receiver" 2>/dev/null && [ $tries -lt 30 ]; do
    tries=$((tries + 1))
    sleep 0.1
  done
fi
local_sql "SELECT CASE WHEN pg_is_in_recovery()
  THEN 'replica ' || greatest(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) || ' ' || pg_last_wal_replay_lsn()
  ELSE 'primary ' || pg_current_wal_lsn() END"`;

/**
 * Promotes a replica and waits until it takes writes, then checkpoints: until a checkpoint records the new timeline,
 * pg_rewind takes the new primary for one on the old timeline and rewinds nothing. It replays all the WAL the member
 * received first, a paused replay included (PostgreSQL 13 and later end the pause). The standbys its commits wait for
 * (SYNCHRONOUS_STANDBY_NAMES, empty for none) are set while it is still in recovery, so that no commit it takes is
 * acknowledged by it alone. A promotion that does not end within PROMOTE_TIMEOUT seconds (default 60) is an error. A
 * member promoted already gets the setting all the same, so a promotion cut short is finished by running this again.
 * The slots of the other members (SLOTS) are made before it takes writes.
 */
export const promoteScript = `${common}
if [ -n "\${ROLE_FILE:-}" ]; then
  # The member's PID 1 stops a primary its agent has not confirmed: the promotion waits for the agent's word.
  tries=0
  until [ "$(cat "$ROLE_FILE" 2>/dev/null)" = primary ]; do
    tries=$((tries + 1))
    # Up to the promise a member that vouched for the old primary keeps (agent.ts), and more.
    [ $tries -le 150 ] || { echo "the member agent has not confirmed within 30 s that this member holds the Lease" >&2; exit 1; }
    sleep 0.2
  done
fi
set_synchronous "\${SYNCHRONOUS_STANDBY_NAMES?names the standbys a commit on the promoted member waits for (empty: none)}"
# Made while still in recovery, so the WAL the other members have yet to receive outlives the checkpoint below.
for slot in \${SLOTS:-}; do local_sql "$(slot_sql "$slot")" >/dev/null; done
if [ "$(local_sql "SELECT pg_is_in_recovery()")" = t ]; then
  timeout=\${PROMOTE_TIMEOUT:-60}
  promoted=$(local_sql "SELECT pg_promote(wait => true, wait_seconds => $timeout)")
  [ "$promoted" = t ] || { echo "the member did not finish promoting within $timeout s: it is still in recovery" >&2; exit 1; }
fi
local_sql "CHECKPOINT" >/dev/null`;

/**
 * Sets synchronous_standby_names on the primary (SYNCHRONOUS_STANDBY_NAMES, from the operator) and reloads. When the
 * change drops a standby, which may have been the only one to confirm a commit, CATCH_UP lists (as SQL strings) the
 * standbys kept: it returns only once QUORUM of them have flushed everything written before the change. Then it
 * makes the slots SLOTS names, drops every other slot of the cluster's (SLOT_PATTERN, a regular expression) that no
 * member streams from, and prints the slots left.
 */
export const synchronousScript = `${common}
set_synchronous "$SYNCHRONOUS_STANDBY_NAMES"
if [ -n "\${CATCH_UP:-}" ]; then
  written=$(local_sql "SELECT pg_current_wal_lsn()")
  tries=0
  until [ "$(local_sql "SELECT count(*) FROM pg_stat_replication WHERE application_name IN ($CATCH_UP) AND flush_lsn >= '$written'")" -ge "$QUORUM" ]; do
    tries=$((tries + 1))
    [ $tries -le 100 ] || { echo "fewer than $QUORUM of $CATCH_UP flushed $written within 20s" >&2; exit 3; }
    sleep 0.2
  done
fi
keep=
for slot in \${SLOTS:-}; do
  local_sql "$(slot_sql "$slot")" >/dev/null
  keep="$keep'$slot',"
done
local_sql "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
  WHERE slot_type = 'physical' AND NOT active AND NOT temporary AND slot_name ~ '\${SLOT_PATTERN:-^$}'
    AND slot_name NOT IN (\${keep}'')" >/dev/null
local_sql "SELECT slot_name FROM pg_replication_slots WHERE slot_type = 'physical' AND NOT temporary ORDER BY slot_name"`;

/**
 * The readiness of a member: a primary that answers; a replica only while it streams from the primary and has
 * replayed to within MAX_LAG_BYTES of what the primary last said it had sent, so that reads through the replicas'
 * Service are never much staler than the primary.
 */
export const readyScript = `${common}
state=$(local_sql "SELECT CASE WHEN NOT pg_is_in_recovery() THEN 'primary' ELSE coalesce((SELECT status || ' ' ||
  coalesce(pg_wal_lsn_diff(latest_end_lsn, pg_last_wal_replay_lsn())::bigint, -1) FROM pg_stat_wal_receiver), 'none') END")
case "$state" in
  primary) ;;
  streaming\\ *)
    lag=\${state#streaming }
    # -1: nothing heard from the primary yet, so how far behind is not known.
    [ "$lag" -ge 0 ] || { echo "streaming, but nothing heard from the primary yet" >&2; exit 1; }
    [ "$lag" -le "\${MAX_LAG_BYTES:-16777216}" ] || { echo "replay is $lag bytes behind what the primary sent" >&2; exit 1; } ;;
  *) echo "not streaming from the primary (WAL receiver: $state)" >&2; exit 1 ;;
esac`;

/** Makes the role the member agents read statistics as, on the primary: the operator runs it once per primary pod. */
export const monitorRoleScript = `${common}
local_sql "${monitorRoleSql}" >/dev/null`;

/** A log sequence number (e.g. 0/3000148) as a number, to find the replica that holds the most WAL. */
export function lsnValue(lsn: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(lsn.trim());
  if (!match) throw new Error(`not a WAL position: "${lsn}"`);
  return (BigInt(`0x${match[1]}`) << 32n) + BigInt(`0x${match[2]}`);
}

export interface Position {
  role: 'primary' | 'replica';
  /** How far the WAL the member holds durably goes: a promoted replica has all of it. */
  lsn: bigint;
  /** How far a replica has replayed it (lsn where not told). */
  replayed: bigint;
}

export function parsePosition(output: string): Position {
  const [role, lsn, replayed] = output.trim().split(/\s+/);
  if (role !== 'primary' && role !== 'replica') throw new Error(`unexpected member position: "${output.trim()}"`);
  const held = lsnValue(lsn ?? '');
  return { role, lsn: held, replayed: replayed === undefined ? held : lsnValue(replayed) };
}
