// PostgresCluster members on simulated nodes: volumes for their claims, and exec into them served on this machine.
// The member scripts' PostgreSQL behaviour is proven against real servers (member.test.ts); here the operator's
// orchestration is, so exec runs the operator's real scripts with a psql on PATH that answers as each member would:
// its role and WAL position from a file the test writes, and a promotion recorded in another.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalCluster } from '../cluster/cluster.ts';
import { serveExec } from '../cluster/kwok.ts';

const psql = `#!/bin/sh
case "$*" in
  *pg_is_in_recovery*) cat position ;;
  *pg_promote*) echo primary > promoted; echo t ;;
esac
`;

export interface MemberExec {
  /** What the member answers when asked how far it replayed, e.g. "replica 0/3000000". */
  setPosition(member: string, position: string): Promise<void>;
  promoted(member: string): Promise<boolean>;
}

/** Serves exec into the members `names` of `namespace`, each in a directory of its own under `scratch`. */
export async function serveMemberExec(cluster: LocalCluster, namespace: string, names: string[], scratch: string):
Promise<MemberExec> {
  const bin = join(scratch, 'bin');
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, 'psql'), psql);
  await chmod(join(bin, 'psql'), 0o755);
  const dir = (member: string) => join(scratch, member);
  for (const member of names) {
    await mkdir(dir(member), { recursive: true });
    await writeFile(join(dir(member), 'position'), 'replica 0/1000000\n');
    await serveExec(cluster, { namespace, pod: member }, dir(member), { PATH: `${bin}:/usr/bin:/bin`, PGPORT: '5432' });
  }
  return {
    setPosition: (member, position) => writeFile(join(dir(member), 'position'), `${position}\n`),
    promoted: async (member) => (await readFile(join(dir(member), 'promoted'), 'utf8').catch(() => '')) !== '',
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
