// `npm test`: one local cluster for the whole run (or the one `npm run cluster -- up` started), then node's test
// runner over every compiled *.test.js. Arguments filter test files by substring.
import { spawn } from 'node:child_process';
import { glob } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalCluster } from './cluster/cluster.ts';
import { repoRoot } from './support/paths.ts';

const filters = process.argv.slice(2);
const files: string[] = [];
for await (const file of glob('build/**/*.test.js', { cwd: repoRoot })) {
  if (filters.length === 0 || filters.some((f) => file.includes(f))) files.push(join(repoRoot, file));
}
files.sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

const reused = LocalCluster.attach(join(repoRoot, '.cluster'));
const started = Date.now();
const cluster = reused ?? (await LocalCluster.start());
console.log(`# local cluster ${reused ? 'reused' : `started in ${((Date.now() - started) / 1000).toFixed(1)}s`}: ` +
  `${cluster.state.server} (Kubernetes ${cluster.state.version})`);
const { realNode } = cluster.state;
if ('skipped' in realNode) {
  console.log(`# real-node tests not run: ${realNode.skipped}`);
  // CI's machine can run them: there, a missing real node is a broken harness, not a reason to skip.
  if (process.env.CI === 'true') {
    console.error('CI=true: the real-node tests must run; failing');
    if (!reused) await cluster.stop();
    process.exit(1);
  }
}

const runner = spawn(process.execPath, ['--test', '--test-concurrency=3', '--test-timeout=600000', ...files], {
  stdio: 'inherit',
  env: { ...process.env, KUBECONFIG: cluster.state.kubeconfig, KEELSON_CLUSTER_DIR: cluster.state.dir },
});
const code = await new Promise<number>((resolve) => runner.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
if (!reused) await cluster.stop();
process.exit(code);
