// The Prometheus Operator's own CRDs, from its Go module (pinned in test/tools/prometheus-operator): what a
// PodMonitor the operators make is checked against.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LocalCluster } from '../../cluster/cluster.ts';
import { repoRoot } from '../../cluster/paths.ts';

const run = promisify(execFile);
export const podMonitorCrdName = 'podmonitors.monitoring.coreos.com';

/** The PodMonitor CRD's file, from the module cache (downloaded from the module proxy on first use). */
export async function podMonitorCrdFile(): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', 'github.com/prometheus-operator/prometheus-operator'], {
    cwd: join(repoRoot, 'test/tools/prometheus-operator'), timeout: 5 * 60_000,
    env: { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
  });
  return join((JSON.parse(stdout) as { Dir: string }).Dir, 'example/prometheus-operator-crd',
    'monitoring.coreos.com_podmonitors.yaml');
}

/** Installs the PodMonitor CRD (again, harmlessly, if it is there) and waits until it is served. */
export async function installPodMonitorCrd(cluster: LocalCluster): Promise<void> {
  await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', await podMonitorCrdFile()]);
  await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${podMonitorCrdName}`]);
}
