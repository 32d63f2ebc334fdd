// `npm test`: node's test runner over every compiled *.test.js, in three phases. Arguments filter test files by
// substring.
//   *.host.test.js     first, one at a time, before any shared cluster: they take this machine's real node themselves
//   *.test.js          then, three at a time, against one local cluster (or the one `npm run cluster -- up` started)
//   *.serial.test.js   last, one at a time, on that cluster: what must not share it (a cluster-wide install)
import { existsSync } from 'node:fs';
import { glob, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import { buildBinaries } from '../cluster/build.ts';
import { LocalCluster } from '../cluster/cluster.ts';
import { realNodeUnsupported } from '../cluster/node/host.ts';
import { userLeases } from './support/jvm.ts';
import { repoRoot } from '../cluster/paths.ts';

const filters = process.argv.slice(2);
const files: string[] = [];
for await (const file of glob('build/**/*.test.js', { cwd: repoRoot })) {
  // A compiled test whose source is gone (moved or deleted) is stale, not a test.
  const source = join(repoRoot, file.replace(/^build\//, '').replace(/\.js$/, '.ts'));
  if (!existsSync(source)) continue;
  if (filters.length === 0 || filters.some((f) => file.includes(f))) files.push(join(repoRoot, file));
}
files.sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const hostFiles = files.filter((f) => f.endsWith('.host.test.js'));
const serialFiles = files.filter((f) => f.endsWith('.serial.test.js'));
const sharedFiles = files.filter((f) => !hostFiles.includes(f) && !serialFiles.includes(f));

const totals = { passed: 0, failed: 0, skipped: 0 };

/**
 * What tests make in the temporary directory, by the prefixes they give it; each must be gone when they end, but
 * for the test users' leases, which outlive runs as the users do.
 */
const ours = /^(keelson-|cdk8s\.outdir\.)/;
const scratchNow = async () => new Set((await readdir(tmpdir()))
  .filter((name) => ours.test(name) && join(tmpdir(), name) !== userLeases));
const scratchBefore = await scratchNow();

async function runPhase(phaseFiles: string[], concurrency: number): Promise<void> {
  if (phaseFiles.length === 0) return;
  const stream = run({ files: phaseFiles, concurrency, timeout: 600_000 });
  stream.on('test:summary', (summary) => {
    if (summary.file !== undefined) return;
    const { tests, passed, skipped, todo } = summary.counts;
    totals.passed += passed;
    totals.failed += tests - passed - skipped - todo;
    totals.skipped += skipped;
  });
  await new Promise<void>((resolve, reject) => stream.compose(spec).on('end', resolve).on('error', reject)
    .pipe(process.stdout, { end: false }));
}

const reused = LocalCluster.attach(join(repoRoot, '.cluster'));
// Built before any test file runs: on a fresh machine the build alone outlasts one file's time limit.
if (!reused && hostFiles.length + sharedFiles.length + serialFiles.length > 0) {
  await buildBinaries('control-plane');
  if (!realNodeUnsupported()) await buildBinaries('node');
}
await runPhase(hostFiles, 1);
if (sharedFiles.length + serialFiles.length === 0) finish();

const started = Date.now();
const cluster = reused ?? (await LocalCluster.start());
console.log(`# local cluster ${reused ? 'reused' : `started in ${((Date.now() - started) / 1000).toFixed(1)}s`}: ` +
  `${cluster.state.server} (Kubernetes ${cluster.state.version})`);
const { realNode } = cluster.state;
const refreshed = await reused?.refreshOperatorImage();
if (refreshed) console.log(`# operator image loaded: ${refreshed}`);
if ('skipped' in realNode) {
  console.log(`# real-node tests not run: ${realNode.skipped}`);
  // CI's machine can run them: there, a missing real node is a broken harness, not a reason to skip.
  if (process.env.CI === 'true') {
    console.error('CI=true: the real-node tests must run; failing');
    totals.failed++;
  }
}
if (totals.failed === 0 || process.env.CI !== 'true') {
  process.env.KUBECONFIG = cluster.state.kubeconfig;
  process.env.KEELSON_CLUSTER_DIR = cluster.state.dir;
  await runPhase(sharedFiles, 3);
  await runPhase(serialFiles, 1);
}
if (!reused) await cluster.stop();
const leftBehind = [...await scratchNow()].filter((name) => !scratchBefore.has(name));
if (leftBehind.length) {
  // Kubeconfigs with ServiceAccount tokens among them, as often as not: a teardown that did not run.
  console.error(`# left in ${tmpdir()} by the tests: ${leftBehind.sort().join(', ')}`);
  if (process.env.CI === 'true') totals.failed++;
}
finish();

function finish(): never {
  console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  process.exit(totals.failed === 0 ? 0 : 1);
}
