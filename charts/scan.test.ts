// The install against a standard scanner: checkov's Kubernetes checks, pinned in checkov-requirements.txt, run with
// --skip-download and, as root, in a network namespace of its own, so it reaches nothing. What it still fails is
// what README's "Installing with kubectl" says stays, and why.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { App, Chart, Testing } from 'cdk8s';
import { repoRoot } from '../cluster/paths.ts';
import { pythonEnvironment } from '../test/support/python.ts';
import { KeelsonInstall } from './install.ts';

const run = promisify(execFile);
/** No CPU limit: README says why it stays. */
const accepted = ['CKV_K8S_11'];
/** dist/ names the release's tag, not a digest; checkov then also asks for pullPolicy Always. */
const unpinned = ['CKV_K8S_15', 'CKV_K8S_43'];
let checkov: string;
let scratch: string;

before(async () => {
  checkov = join(await pythonEnvironment('checkov', join(repoRoot, 'charts/checkov-requirements.txt')), 'bin/checkov');
  scratch = await mkdtemp(join(tmpdir(), 'keelson-scan-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

/** The checks checkov fails on the manifests in `dir`, by ID, and how many it passed. */
async function scan(dir: string): Promise<{ failed: string[]; passed: number }> {
  const args = ['--skip-download', '--framework', 'kubernetes', '-d', dir, '-o', 'json', '--quiet'];
  const [command, ...rest] = process.getuid?.() === 0 ? ['unshare', '--net', '--', checkov, ...args] : [checkov, ...args];
  // checkov exits 1 when a check fails; its report says which.
  const { stdout } = await run(command!, rest, { maxBuffer: 64 << 20 }).catch((error) => error);
  const report = JSON.parse(stdout);
  assert.equal(report.summary.parsing_errors, 0);
  return { failed: [...new Set<string>(report.results.failed_checks.map((c: any) => c.check_id))].sort(),
    passed: report.summary.passed };
}

describe('the install under checkov', () => {
  it('fails only the accepted check and the unpinned image\'s two on dist/', async () => {
    const dist = join(scratch, 'dist');
    await mkdir(dist);
    for (const file of ['0000-keelson-crds.k8s.yaml', '0001-keelson.k8s.yaml']) {
      await copyFile(join(repoRoot, 'dist', file), join(dist, file));
    }
    const { failed, passed } = await scan(dist);
    assert.deepEqual(failed, [...accepted, ...unpinned].sort());
    assert.ok(passed > 100, `only ${passed} checks passed`);
  });

  it('fails only the accepted check with the image pinned to a digest', async () => {
    const chart = new Chart(new App(), 'pinned');
    new KeelsonInstall(chart, 'install', { image: 'keelson/controller:0.1.0', imageDigest: `sha256:${'0'.repeat(64)}` });
    const pinned = join(scratch, 'pinned');
    await mkdir(pinned);
    // JSON is YAML: one document per object.
    await writeFile(join(pinned, 'install.yaml'), Testing.synth(chart).map((o) => JSON.stringify(o)).join('\n---\n'));
    assert.deepEqual((await scan(pinned)).failed, accepted);
  });
});
