// What the major upgrade pod runs (upgrade.ts): the old image's programs gathered, then pg_upgrade in the new image.
import { installConfigurationScript } from './configuration.ts';
import { clusterSettings } from './scripts.ts';

/** How the upgrade script ends when the old data directory is as it was: the members may start on it again. */
export const untouchedExitCode = 10;
/** How it ends when the old data directory may not be whole: no member is started on it. */
export const notWholeExitCode = 11;

/** Where the upgrade pod's init container leaves the old programs for the new image's pg_upgrade. */
export const oldServerDir = '/old';

/**
 * Run in the old image: copies PostgreSQL FROM_MAJOR's programs, modules and shared files into OLD, laid out as here
 * (so that the server finds its share directory beside its programs), and every shared library they load.
 */
export const collectOldServerScript = `set -eu
mkdir -p "$OLD/usr/lib/postgresql" "$OLD/usr/share/postgresql" "$OLD/libs"
cp -R "/usr/lib/postgresql/$FROM_MAJOR" "$OLD/usr/lib/postgresql/"
cp -R "/usr/share/postgresql/$FROM_MAJOR" "$OLD/usr/share/postgresql/"
# The JIT provider and its bitcode stay behind (the old server runs with jit off): its LLVM alone is 100 MB.
rm -rf "$OLD/usr/lib/postgresql/$FROM_MAJOR/lib/llvmjit"* "$OLD/usr/lib/postgresql/$FROM_MAJOR/lib/bitcode"
loader=$(ls /lib64/ld-linux*.so.* /lib/ld-linux*.so.* 2>/dev/null | head -n 1)
for file in "$OLD/usr/lib/postgresql/$FROM_MAJOR/bin/"* "$OLD/usr/lib/postgresql/$FROM_MAJOR/lib/"*.so; do
  "$loader" --list "$file" 2>/dev/null || :
done | sed -n 's/.* => \\(\\/[^ ]*\\) .*/\\1/p' | sort -u | while read -r library; do
  cp -L "$library" "$OLD/libs/"
done
echo "copied PostgreSQL $FROM_MAJOR and $(ls "$OLD/libs" | wc -l) shared libraries from $(postgres -V)"`;

/**
 * Run in the new image on the primary's volume: upgrades PGDATA from FROM_MAJOR to this image's major with the old
 * programs in OLD. With an object store, the old server's last WAL is archived first, so that a recovery from the
 * backup taken before loses no commit. Each step may be run again (a pod cut short starts over where it can). It exits
 * untouchedExitCode when the old data directory is as it was, notWholeExitCode when it may not be: pg_upgrade had
 * begun to link files from it (it renames its pg_control then).
 */
export const majorUpgradeScript = `set -eu
fail() { printf '%s\\n' "$1" >&2; exit ${untouchedExitCode}; }
halt() { printf '%s\\n' "$1" >&2; exit ${notWholeExitCode}; }
to=$(postgres -V | sed 's/^[^0-9]*\\([0-9]*\\).*/\\1/')
old_bin=$OLD/usr/lib/postgresql/$FROM_MAJOR/bin
new=$PGDATA.$to
version() { cat "$1/PG_VERSION" 2>/dev/null || :; }
# pg_upgrade finished, linking from the old directory $1: its output directory goes last, and only on success.
finished() { [ "$(version "$new")" = "$to" ] && [ ! -d "$new/pg_upgrade_output.d" ] && [ -f "$1/global/pg_control.old" ]; }
# The old programs load from OLD only the libraries this image lacks (a newer release keeps the others, compatible,
# under the same names), so that this image's programs, which see OLD too, never load an old one.
for library in "$OLD/libs/"*; do
  for dir in /lib/*-linux-gnu /usr/lib/*-linux-gnu /lib64 /usr/lib64; do
    if [ -e "$dir/\${library##*/}" ]; then rm -f "$library"; break; fi
  done
done
export LD_LIBRARY_PATH=$OLD/libs
cd /tmp
if [ "$(version "$PGDATA")" = "$to" ]; then
  rm -rf "$PGDATA.$FROM_MAJOR" || :
  echo "the data directory is PostgreSQL $to's already" >&2
  exit 0
elif finished "$PGDATA" || { [ ! -d "$PGDATA" ] && finished "$PGDATA.$FROM_MAJOR"; }; then
  echo "pg_upgrade had finished: its data directory is put into place" >&2
else
  current=$(version "$PGDATA")
  [ "$current" = "$FROM_MAJOR" ] || fail "the data directory holds PostgreSQL \${current:-nothing}, not $FROM_MAJOR"
  [ ! -f "$PGDATA/global/pg_control.old" ] || halt "an earlier upgrade was cut short after pg_upgrade began to link \\
files: PostgreSQL $FROM_MAJOR's data directory may not be whole"
  # No server runs on this volume (the operator makes this pod once the primary's is gone): a postmaster.pid is a
  # killed one's, whose PID may be a live process of this pod, which would keep the old server from starting.
  rm -f "$PGDATA/postmaster.pid"
  state=$("$old_bin/pg_controldata" -D "$PGDATA" | sed -n 's/^Database cluster state: *//p')
  # The old server, on a private socket only: to recover from a stop that was not clean, and with an object store to
  # archive its last WAL (the segment in use when it stopped holds commits no archive has yet).
  if [ -n "\${PGBACKREST_STANZA:-}" ] || [ "$state" != "shut down" ]; then
    archiving="-c archive_mode=off"
    [ -z "\${PGBACKREST_STANZA:-}" ] || archiving="-c archive_mode=on -c archive_command='pgbackrest archive-push %p'"
    "$old_bin/pg_ctl" -D "$PGDATA" -w -t 86400 -l /tmp/old-server.log \\
      -o "-c listen_addresses='' -k /tmp -c jit=off $archiving" start >/dev/null || fail "$(tail -n 20 /tmp/old-server.log)"
    if [ -n "\${PGBACKREST_STANZA:-}" ]; then
      old_sql() { psql -X -h /tmp -U postgres -d postgres -Atc "$1"; }
      old_sql "SELECT pg_switch_wal()" >/dev/null || fail "PostgreSQL $FROM_MAJOR did not answer on its socket"
      waited=0
      until [ "$(old_sql "SELECT count(*) FROM pg_ls_archive_statusdir() WHERE name LIKE '%.ready'")" = 0 ]; do
        if [ $waited -ge 600 ]; then
          failed=$(old_sql "SELECT coalesce(last_failed_wal, 'none') FROM pg_stat_archiver") || failed=unknown
          "$old_bin/pg_ctl" -D "$PGDATA" -w -m fast stop >/dev/null || :
          fail "PostgreSQL $FROM_MAJOR's last WAL was not archived within 10 minutes (the segment failing: $failed): \\
nothing was upgraded"
        fi
        sleep 1
        waited=$((waited + 1))
      done
      echo "PostgreSQL $FROM_MAJOR's last WAL is archived" >&2
    fi
    "$old_bin/pg_ctl" -D "$PGDATA" -w -m fast stop >/dev/null || fail "PostgreSQL $FROM_MAJOR did not stop cleanly"
  fi
  checksums=
  "$old_bin/pg_controldata" -D "$PGDATA" | grep -q '^Data page checksum version: *0$' || checksums=--data-checksums
  rm -rf "$new"
  mkdir -p -m 700 "$new"
  initdb -D "$new" -U postgres $checksums --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  ${clusterSettings('"$new"')}
  cp "$PGDATA/pg_hba.conf" "$PGDATA/postgresql.auto.conf" "$new/"
  # The spec's parameters, as the members will start with them: a preloaded library the new version lacks, or a
  # parameter it no longer has, fails the check below rather than the first start.
  (PGDATA=$new; ${installConfigurationScript})
  upgrade() {
    pg_upgrade -b "$old_bin" -B "$(dirname "$(command -v postgres)")" -d "$PGDATA" -D "$new" --socketdir=/tmp \\
      -o "-c archive_mode=off -c jit=off" -O "-c archive_mode=off" "$@" > /tmp/pg_upgrade.log 2>&1 && return
    for report in "$new"/pg_upgrade_output.d/*/*.txt; do
      [ ! -f "$report" ] || { echo "$report:"; head -n 20 "$report"; }
    done >> /tmp/pg_upgrade.log
    grep -v -e '^Checking .* *ok$' -e '^ *$' -e '^---*$' /tmp/pg_upgrade.log | tail -n 40 >&2
    return 1
  }
  echo "checking the upgrade of PostgreSQL $FROM_MAJOR to $to" >&2
  upgrade --check || { rm -rf "$new"; fail "pg_upgrade --check refused the upgrade; the data directory is unchanged"; }
  echo "upgrading PostgreSQL $FROM_MAJOR to $to, with hard links: the data is not copied" >&2
  if ! upgrade --link; then
    [ ! -f "$PGDATA/global/pg_control.old" ] ||
      halt "pg_upgrade failed after it began to link files: PostgreSQL $FROM_MAJOR's data directory may not be whole"
    rm -rf "$new"
    fail "pg_upgrade failed before it changed the data directory"
  fi
fi
# Into place: a member started on the volume finds PostgreSQL $to's data.
placed() { halt "the upgraded data directory could not be put into place"; }
if [ -d "$PGDATA" ]; then { rm -rf "$PGDATA.$FROM_MAJOR" && mv "$PGDATA" "$PGDATA.$FROM_MAJOR"; } || placed; fi
mv "$new" "$PGDATA" || placed
rm -rf "$PGDATA.$FROM_MAJOR" || :
echo "upgraded to PostgreSQL $to" >&2`;

/**
 * Run on the upgraded primary once it takes writes: what pg_upgrade leaves to do. With an object store, pgBackRest's
 * stanza learns the new version (until it does, WAL waits in pg_wal: archive-push refuses it), at once; then,
 * detached, planner statistics, which pg_upgrade does not carry (ANALYZE in stages, so plans are sane within seconds
 * and exact later), and extensions whose new version has a newer SQL version are updated to it, in every database,
 * as pg_upgrade's update_extensions.sql would.
 */
export const afterUpgradeScript = `mkdir -p /tmp/keelson
setsid sh -c 'psql="psql -X -h /var/run/postgresql -U postgres -v ON_ERROR_STOP=1 -Atq"
# Into the backup volume, the operator tells the repository host instead (its archive check): there alone can it be.
[ -z "\${PGBACKREST_STANZA:-}" ] || [ -n "\${PGBACKREST_REPO1_HOST:-}" ] || timeout 300 pgbackrest stanza-upgrade
$psql -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn" | while read -r db; do
  PGDATABASE=$db $psql -c "SELECT format(\\$\\$ALTER EXTENSION %I UPDATE;\\$\\$, name) FROM pg_available_extensions
    WHERE installed_version IS NOT NULL AND installed_version <> default_version" | PGDATABASE=$db $psql
done
vacuumdb -h /var/run/postgresql -U postgres --all --analyze-in-stages' > /tmp/keelson/after-upgrade.log 2>&1 < /dev/null &`;
