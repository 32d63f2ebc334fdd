// npm run synth:check: fails, naming each file, when dist/ or imports/ is not what the sources produce now.
// An argument names another folder holding dist/ and imports/ to check instead of the checkout's.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = new URL('../..', import.meta.url).pathname;

async function files(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

/** Paths that differ between `expected` (fresh output) and `actual` (committed), relative to the repository. */
async function differences(expected: string, actual: string, label: string): Promise<string[]> {
  const [fresh, committed] = await Promise.all([files(expected), files(actual)]);
  const all = [...new Set([...fresh, ...committed])].sort();
  const stale: string[] = [];
  for (const file of all) {
    const [a, b] = await Promise.all([readFile(join(expected, file), 'utf8').catch(() => undefined),
      readFile(join(actual, file), 'utf8').catch(() => undefined)]);
    if (a === b) continue;
    const why = a === undefined ? 'should not exist' : b === undefined ? 'is missing' : 'is out of date';
    stale.push(`${label}/${file} ${why}`);
  }
  return stale;
}

const target = process.argv[2] ?? root;
const scratch = await mkdtemp(join(tmpdir(), 'keelson-synth-check-'));
try {
  const dist = join(scratch, 'dist');
  await run(process.execPath, [join(root, 'build/charts/main.js')], { cwd: root, env: { ...process.env, CDK8S_OUTDIR: dist } });
  const imports = join(scratch, 'imports');
  await run(join(root, 'node_modules/.bin/cdk8s'), ['import', `keelson:=${join(dist, '0000-keelson-crds.k8s.yaml')}`,
    '--language', 'typescript', '--output', imports, '--no-save', '--check-upgrade', 'false'], { cwd: root });
  const stale = [...await differences(dist, join(target, 'dist'), 'dist'),
    ...await differences(imports, join(target, 'imports'), 'imports')];
  if (stale.length) {
    console.error(`synth:check: the committed manifests differ from what the sources synthesize:\n  ${stale.join('\n  ')}\n` +
      'run `npm run synth` and commit the result');
    process.exitCode = 1;
  } else {
    console.log('synth:check: dist/ and imports/ are up to date');
  }
} finally {
  await rm(scratch, { recursive: true, force: true });
}
