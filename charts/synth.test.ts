import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../cluster/paths.ts';

const run = promisify(execFile);
const scratch = await mkdtemp(join(tmpdir(), 'keelson-synth-test-'));
after(() => rm(scratch, { recursive: true, force: true }));

async function synthInto(dir: string): Promise<Map<string, string>> {
  await run(process.execPath, [join(repoRoot, 'build/charts/main.js')], { cwd: repoRoot, env: { ...process.env, CDK8S_OUTDIR: dir } });
  const contents = new Map<string, string>();
  for (const file of (await readdir(dir, { recursive: true })).sort()) {
    if (/\.(yaml|json|tpl|txt)$/.test(file)) contents.set(file, await readFile(join(dir, file), 'utf8'));
  }
  return contents;
}

function check(target?: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => execFile(process.execPath, [join(repoRoot, 'build/charts/check.js'),
    ...(target ? [target] : [])], { cwd: repoRoot }, (error, stdout, stderr) =>
    resolve({ code: error ? Number(error.code ?? 1) : 0, output: stdout + stderr })));
}

describe('synth', () => {
  it('is deterministic: two runs write byte-identical files', async () => {
    const [first, second] = await Promise.all([synthInto(join(scratch, 'a')), synthInto(join(scratch, 'b'))]);
    assert.deepEqual([...first.keys()], ['0000-keelson-crds.k8s.yaml', '0001-keelson.k8s.yaml',
      'helm/keelson/Chart.yaml', 'helm/keelson/crds/keelson-crds.yaml', 'helm/keelson/templates/NOTES.txt',
      'helm/keelson/templates/_helpers.tpl', 'helm/keelson/templates/admission.yaml', 'helm/keelson/templates/keelson.yaml',
      'helm/keelson/values.schema.json', 'helm/keelson/values.yaml', 'monitoring/grafana-dashboard.json', 'monitoring/keelson-monitoring.k8s.yaml', 'monitoring/prometheus-rules.yaml',
      'samples/keelson-samples.k8s.yaml']);
    assert.deepEqual(second, first);
  });

  it('matches the committed dist/ and imports/', async () => {
    const result = await check();
    assert.equal(result.code, 0, result.output);
  });

  it('names each committed file that is stale, missing or extra', async () => {
    const copy = join(scratch, 'copy');
    await cp(join(repoRoot, 'dist'), join(copy, 'dist'), { recursive: true });
    await cp(join(repoRoot, 'imports'), join(copy, 'imports'), { recursive: true });
    const install = join(copy, 'dist/0001-keelson.k8s.yaml');
    await writeFile(install, (await readFile(install, 'utf8')).replace('replicas: 1', 'replicas: 2'));
    await rm(join(copy, 'dist/samples/keelson-samples.k8s.yaml'));
    await writeFile(join(copy, 'imports/extra.ts'), 'export {};\n');
    const result = await check(copy);
    assert.equal(result.code, 1);
    assert.match(result.output, /dist\/0001-keelson\.k8s\.yaml is out of date/);
    assert.match(result.output, /dist\/samples\/keelson-samples\.k8s\.yaml is missing/);
    assert.match(result.output, /imports\/extra\.ts should not exist/);
    assert.doesNotMatch(result.output, /0000-keelson-crds/);
  });
});
