import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './paths.ts';
import { testCluster } from '../test/support/cluster.ts';
import { waitFor } from './wait.ts';
import type { ClusterState } from './state.ts';

const build = join(repoRoot, 'build/cluster');

/** Pids of processes whose command line mentions `text` (every component's flags name its cluster folder). */
async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(text)) pids.push(Number(entry));
  }
  return pids;
}

describe('local cluster lifecycle', () => {
  it('runs a second cluster beside the first, and tears it down when its owner is killed', async () => {
    const first = testCluster();
    const owner = spawn(process.execPath, ['--input-type=module', '-e', `
      import { LocalCluster } from ${JSON.stringify(pathToFileURL(join(build, 'cluster.js')).href)};
      const cluster = await LocalCluster.start();
      console.log('STATE ' + JSON.stringify(cluster.state));
      setInterval(() => {}, 60_000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const state = await new Promise<ClusterState>((resolve, reject) => {
      owner.once('exit', (code) => reject(new Error(`owner exited with ${code}`)));
      createInterface({ input: owner.stdout! }).on('line', (line) => {
        if (line.startsWith('STATE ')) resolve(JSON.parse(line.slice(6)));
      });
    });
    try {
      // The machine has one real node: the second cluster runs without it and says why.
      if ('name' in first.state.realNode) {
        assert.match('skipped' in state.realNode ? state.realNode.skipped : 'it took the node',
          new RegExp(`the cluster in ${first.state.dir} \\(supervisor pid \\d+\\) has this machine's real node`));
      }
      const firstPorts = new Set(Object.values(first.state.ports));
      for (const port of Object.values(state.ports)) assert.ok(!firstPorts.has(port), `port ${port} used twice`);

      await first.kubectl(['create', 'namespace', 'only-in-first']);
      const second = await first.kubectl(['get', 'namespace', 'only-in-first', `--server=${state.server}`,
        `--kubeconfig=${state.kubeconfig}`], { allowFailure: true });
      assert.match(second.stderr, /namespaces "only-in-first" not found/);
      await first.kubectl(['delete', 'namespace', 'only-in-first', '--wait=false']);
      assert.ok((await processesMentioning(state.dir)).length >= 5, 'the second cluster is not running');
    } finally {
      owner.kill('SIGKILL');
    }
    await waitFor('every process of the second cluster to exit', async () =>
      (await processesMentioning(state.dir)).length === 0, { timeoutMs: 60_000 });
    await waitFor('its folder to be removed', () => !existsSync(state.dir), { timeoutMs: 10_000 });
  });

  it('prints the tail of every component log when start-up fails, and leaves nothing behind', async () => {
    const bin = await mkdtemp(join(tmpdir(), 'keelson-broken-bin-'));
    const dir = await mkdtemp(join(tmpdir(), 'keelson-broken-cluster-'));
    try {
      const real = testCluster().state.bin;
      for (const entry of await readdir(real)) {
        if (entry !== 'kube-apiserver') await symlink(join(real, entry), join(bin, entry));
      }
      await writeFile(join(bin, 'kube-apiserver'), '#!/bin/sh\necho "E0000 flag provided but not defined: --boom" >&2\nexit 1\n',
        { mode: 0o755 });
      const result = await new Promise<{ code: number; stderr: string }>((resolve) => {
        execFile(process.execPath, [join(build, 'supervisor.js'), '--dir', dir, '--remove-dir'],
          { env: { ...process.env, KEELSON_CLUSTER_BIN: bin }, timeout: 120_000 },
          (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }));
      });
      assert.equal(result.code, 1);
      assert.match(result.stderr, /local cluster failed to start: kube-apiserver exited with code 1/);
      assert.match(result.stderr, /--- etcd \(/);
      assert.match(result.stderr, /--- kube-apiserver \(.*\) ---\nE0000 flag provided but not defined: --boom/);
      assert.deepEqual(await processesMentioning(dir), []);
      assert.ok(!existsSync(dir), 'the cluster folder was left behind');
    } finally {
      await rm(bin, { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  });
});
