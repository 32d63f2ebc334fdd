// Per-pod logs and exec on simulated pods: kwok serves them to the apiserver as a kubelet would.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalCluster } from './cluster.ts';

export interface PodRef {
  namespace: string;
  pod: string;
}

/** One line per entry in the CRI log format kwok reads; all on stdout, one second apart. */
export function criLog(lines: string[], start = new Date('2026-01-01T00:00:00Z')): string {
  return lines.map((line, i) => `${new Date(start.getTime() + i * 1000).toISOString()} stdout F ${line}\n`).join('');
}

/**
 * Serves `lines` as the log of `container` in the pod (and `previous` as its previous instance's log,
 * for `kubectl logs --previous`).
 */
export async function serveLogs(cluster: LocalCluster, ref: PodRef, container: string, lines: string[],
  previous?: string[]): Promise<void> {
  const dir = join(cluster.state.dir, 'kwok-logs', ref.namespace, ref.pod);
  await mkdir(dir, { recursive: true });
  const logsFile = join(dir, `${container}.log`);
  await writeFile(logsFile, criLog(lines));
  const log: Record<string, unknown> = { containers: [container], logsFile };
  if (previous) {
    log.previousLogsFile = join(dir, `${container}.previous.log`);
    await writeFile(log.previousLogsFile as string, criLog(previous));
  }
  await apply(cluster, { kind: 'Logs', metadata: { name: ref.pod, namespace: ref.namespace }, spec: { logs: [log] } });
}

/** Makes `kubectl exec` into the pod's containers run the command on this machine, in `workDir`, as `user`. */
export async function serveExec(cluster: LocalCluster, ref: PodRef, workDir: string,
  env: Record<string, string> = {}, user?: { runAsUser: number; runAsGroup: number }): Promise<void> {
  const envs = Object.entries(env).map(([name, value]) => ({ name, value }));
  await apply(cluster, {
    kind: 'Exec',
    metadata: { name: ref.pod, namespace: ref.namespace },
    spec: { execs: [{ local: { workDir, envs, ...(user ? { securityContext: user } : {}) } }] },
  });
}

async function apply(cluster: LocalCluster, object: Record<string, unknown>): Promise<void> {
  const manifest = { apiVersion: 'kwok.x-k8s.io/v1alpha1', ...object };
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify(manifest) });
}
