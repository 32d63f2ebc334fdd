// PostgresCluster members on simulated nodes: volumes for their claims, exec into them served on this machine, and
// their agents. The member scripts' PostgreSQL behaviour is proven against real servers (member.test.ts) and on the
// real node; here the operator's orchestration is, so exec runs the operator's real scripts with a psql on PATH that
// answers as each member would: its role and WAL position from a file the test writes, a promotion and the
// replication slots made recorded in others; and a pgBackRest that lists each backup it is asked for at once. Each
// member's agent is the real one, renewing the Lease while it names the member, its word read by no member script.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { MemberAgent } from '../../controller/operators/postgrescluster/agent.ts';
import { names } from '../../controller/operators/postgrescluster/objects.ts';
import { agentPermissions } from '../../controller/operators/postgrescluster/permissions.ts';
import { Client } from '../../controller/runtime/client.ts';
import { RestClient } from '../../controller/runtime/rest.ts';
import type { LocalCluster } from '../../cluster/cluster.ts';
import { serveExec } from '../../cluster/kwok.ts';

const psql = `#!/bin/sh
case "$*" in
  *"pg_create_physical_replication_slot("*)
    echo "$*" | sed -n "s/.*pg_create_physical_replication_slot('\\([a-z0-9_]*\\)'.*/\\1/p" >> slots ;;
  *"slot_name NOT IN ("*)
    keep=$(echo "$*" | sed -n 's/.*NOT IN (\\(.*\\))/\\1/p')
    for s in $(cat slots 2>/dev/null); do case "$keep" in *"'$s'"*) echo "$s" ;; esac; done > slots.new
    mv slots.new slots ;;
  *"SELECT slot_name FROM"*) sort -u slots 2>/dev/null ;;
  *"CASE WHEN pg_is_in_recovery()"*) cat position ;;
  *"SELECT pg_is_in_recovery()"*) if [ -f promoted ]; then echo f; else echo t; fi ;;
  *pg_promote*) echo primary > promoted; echo t ;;
  *synchronous_standby_names*) echo "$*" > synchronous ;;
  *pg_current_wal_lsn*) echo 0/0 ;;
  *pg_stat_replication*) echo 9 ;;
esac
`;

/**
 * pgBackRest as the operator drives it, for a cluster's members and repository host (KEELSON_REPOSITORY, shared): a
 * backup is listed at once, with the annotations it was given; each command is recorded in `commands`, after the pod
 * it ran in.
 */
const pgBackRest = `#!/bin/sh
repository=\${KEELSON_REPOSITORY:?}
case " $* " in
  *" info "*) cat "$repository/info.json" 2>/dev/null || echo '[]' ;;
  *" backup "*)
    request=$(echo "$*" | sed -n 's/.*keelson.dev.request=\\([^ ]*\\).*/\\1/p')
    started=$(echo "$*" | sed -n 's/.*keelson.dev.started=\\([^ ]*\\).*/\\1/p')
    now=$(date +%s)
    cat > "$repository/info.json" <<EOF
[{"name": "s", "status": {"lock": {"backup": {"held": false}}}, "backup": [{"label": "$(date -u +%Y%m%d-%H%M%SF)",
  "type": "full", "annotation": {"keelson.dev/request": "$request", "keelson.dev/started": "$started"},
  "archive": {"start": "000000010000000000000002", "stop": "000000010000000000000002"},
  "timestamp": {"start": $now, "stop": $now}, "info": {"size": 1, "repository": {"size": 1}}}]}]
EOF
    echo "$(basename "$PWD") $*" >> "$repository/commands" ;;
  *) echo "$(basename "$PWD") $*" >> "$repository/commands" ;;
esac
`;

/** The passwords each simulated member says it was started with (a pod's would come from the cluster's Secret). */
export const memberPasswords = { POSTGRES_PASSWORD: 'kwokPostgres1', REPLICATION_PASSWORD: 'kwokReplication1' };

export interface MemberExec {
  /** What the member answers when asked how far it replayed, e.g. "replica 0/3000000". */
  setPosition(member: string, position: string): Promise<void>;
  promoted(member: string): Promise<boolean>;
  /** Stops the members' agents. */
  stop(): void;
}

/**
 * Serves exec into the members `members` of the PostgresCluster `name` in `namespace`, each in a directory of its own
 * under `scratch`, and runs their agents.
 */
export async function serveMemberExec(cluster: LocalCluster, namespace: string, name: string, members: string[],
  scratch: string): Promise<MemberExec> {
  const bin = join(scratch, 'bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'psql'), psql);
  await chmod(join(bin, 'psql'), 0o755);
  await writeFile(join(bin, 'pgbackrest'), pgBackRest);
  await chmod(join(bin, 'pgbackrest'), 0o755);
  const dir = (member: string) => join(scratch, member);
  const repository = join(scratch, `${name}-repository`);
  await mkdir(repository, { recursive: true });
  const env = { PATH: `${bin}:/usr/bin:/bin`, PGPORT: '5432', KEELSON_REPOSITORY: repository, ...memberPasswords };
  // The repository host of a cluster that backs up into its volume.
  await mkdir(dir(`${name}-repo`), { recursive: true });
  await serveExec(cluster, { namespace, pod: `${name}-repo` }, dir(`${name}-repo`), env);
  const client = new Client(new RestClient(cluster.adminConfig()), agentPermissions, 'keelson-member-agent');
  const stopAgents = new AbortController();
  for (const member of members) {
    await mkdir(dir(member), { recursive: true });
    await writeFile(join(dir(member), 'position'), 'replica 0/1000000\n');
    await serveExec(cluster, { namespace, pod: member }, dir(member), env);
    void new MemberAgent({ client, namespace, lease: names.lease(name), member, roleFile: join(dir(member), 'role'),
      log: pino({ level: 'silent' }) })
      .run(stopAgents.signal);
  }
  return {
    setPosition: (member, position) => writeFile(join(dir(member), 'position'), `${position}\n`),
    promoted: async (member) => (await readFile(join(dir(member), 'promoted'), 'utf8').catch(() => '')) !== '',
    stop: () => stopAgents.abort(),
  };
}

/** `count` hostPath PersistentVolumes of `storageClass` (static binding matches the class by name alone). */
export async function staticVolumes(cluster: LocalCluster, storageClass: string, count: number): Promise<void> {
  const items = Array.from({ length: count }, (_, i) => ({
    apiVersion: 'v1', kind: 'PersistentVolume',
    metadata: { name: `${storageClass}-${i}`, labels: { 'keelson.dev/test-volumes': storageClass } },
    spec: { storageClassName: storageClass, capacity: { storage: '10Gi' }, accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain', hostPath: { path: `/tmp/${storageClass}/${i}` } },
  }));
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
}
