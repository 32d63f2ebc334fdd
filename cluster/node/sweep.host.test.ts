// A cluster killed with SIGKILL gets no chance to undo what its real node changed on this machine: the next start
// must find it all and put it back. Runs before the shared test cluster, since the machine has one real node.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { it } from 'node:test';
import { LocalCluster } from '../cluster.ts';
import { isAlive, type ClusterState } from '../state.ts';
import { repoRoot } from '../paths.ts';
import { waitFor } from '../wait.ts';
import { hostLeftovers, realNodeUnsupported, sweepDeadOwner } from './host.ts';

/** What a real node changes on the host, as seen from outside. */
function hostSnapshot(): Record<string, string> {
  const read = (path: string) => (existsSync(path) ? readFileSync(path, 'utf8').trim() : 'absent');
  const sysctls = ['kernel/panic', 'kernel/panic_on_oops', 'vm/overcommit_memory', 'vm/panic_on_oom',
    'net/bridge/bridge-nf-call-iptables'].map((n) => `${n}=${read(join('/proc/sys', n))}`);
  const paths = ['/var/lib/kubelet', '/var/log/containers', '/var/log/pods', '/var/lib/cni', '/run/containerd']
    .map((p) => `${p}:${existsSync(p)}`);
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes('keelson-cluster-')).length;
  return { sysctls: sysctls.join(' '), paths: paths.join(' '), mounts: String(mounts),
    bridges: readFileSync('/proc/net/dev', 'utf8').includes('keelson0') ? 'keelson0' : 'none' };
}

/** A cluster that nothing tears down: no --watch-stdin, no --remove-dir. */
function startUnwatchedSupervisor(dir: string): Promise<{ pid: number; state: ClusterState }> {
  const child = spawn(process.execPath, [join(repoRoot, 'build/cluster/supervisor.js'), '--dir', dir],
    { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the supervisor exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.startsWith('READY ')) resolve({ pid: child.pid!, state: JSON.parse(line.slice(6)) });
    });
  });
}

const unsupported = realNodeUnsupported();
const held = LocalCluster.attach(join(repoRoot, '.cluster'));

it('sweeps, at the next start, all that a SIGKILLed cluster\'s real node left on this machine',
  { skip: unsupported ?? (held ? 'the cluster of `npm run cluster -- up` holds the real node' : false) }, async () => {
    // The machine as it was before any node: a cluster killed earlier (say, with the CI run it ran in) left its own.
    await sweepDeadOwner();
    const before = hostSnapshot();
    const dir = await mkdtemp(join(tmpdir(), 'keelson-cluster-'));
    const { pid, state } = await startUnwatchedSupervisor(dir);
    assert.ok('name' in state.realNode, `the killed cluster had no real node: ${JSON.stringify(state.realNode)}`);
    const cluster = LocalCluster.attach(dir)!;
    await cluster.kubectl(['run', 'left-running', '--image=keelson.local/tools:1', '--image-pull-policy=Never', '--',
      'sleep', '3600']);
    await waitFor('a running container', async () => (await cluster.getJson('default', 'pod', 'left-running'))
      ?.status?.phase === 'Running', { timeoutMs: 60_000 });

    // The supervisor alone: its control plane, node and containers are orphaned and go on running.
    process.kill(pid, 'SIGKILL');
    await waitFor('the supervisor to be gone', () => !isAlive(pid));
    const owner = { bin: state.realNode.bin, dir };
    const left = await hostLeftovers(owner);
    assert.ok(left.some((l) => l.startsWith('processes')), `the cluster outlives the kill: ${left.join('; ')}`);
    assert.ok(left.some((l) => l.startsWith('bridge')), 'the bridge outlives the kill');

    const next = await LocalCluster.start();
    assert.ok('name' in next.state.realNode, `the next cluster did not get the node: ${JSON.stringify(next.state.realNode)}`);
    await next.stop();
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(await hostLeftovers(owner), []);
    assert.deepEqual(hostSnapshot(), before);
  });
