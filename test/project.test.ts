import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { catalog, operatorNames } from '../controller/operators/catalog.ts';
import { repoRoot } from '../cluster/paths.ts';
import { nodeLts22 } from './support/npm.ts';
import { releaseVersion } from '../controller/api/release.ts';

it('runs tests and the operator image on one Node major; engines allow just the majors the package is tested on', async () => {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const major = process.versions.node.split('.')[0];
  assert.equal(pkg.devDependencies.node.split('.')[0], major);
  assert.equal(pkg.engines.node, `^${nodeLts22} || ^${major}.0.0`);
  const bases = [...dockerfile.matchAll(/^FROM node:(\d+)/gm)].map((m) => m[1]);
  assert.ok(bases.length >= 2);
  for (const base of bases) assert.equal(base, major);
});

it('puts the pinned exporter agent in the operator image where the controller looks for it', async () => {
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const fetched = /^RUN node (build\/\S+\/fetch-agent\.js) (\S+)$/m.exec(dockerfile);
  assert.ok(fetched, 'the build stage fetches the agent');
  await readFile(join(repoRoot, fetched[1]!.replace(/^build\//, '').replace(/\.js$/, '.ts')));
  const env = /^ENV KEELSON_JMX_EXPORTER_AGENT=(\S+)$/m.exec(dockerfile)?.[1];
  assert.equal(env, fetched[2]);
  assert.match(dockerfile, new RegExp(`^COPY --from=build ${env} ${env}$`, 'm'));
});

it('names every operator of the catalog in the docs: the API tables and the --controllers default', async () => {
  const read = (file: string) => readFile(join(repoRoot, file), 'utf8');
  for (const file of ['README.md', 'docs/operators.md']) {
    const table = [...(await read(file)).matchAll(/^\| (\w+) \| `(\w+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
    assert.deepEqual(table, catalog.map((e) => `${e.kind.kind} ${e.kind.shortNames[0]}`), file);
  }
  assert.equal(/^\| `--controllers` .*\(default all: ([\w, ]+)\)/m.exec(await read('docs/runtime.md'))?.[1],
    operatorNames.join(', '));
});

it('links, in README and docs/, only to files that exist and headings that do', async () => {
  const anchor = (heading: string) => heading.toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-');
  const anchorsOf = async (file: string) => new Set([...(await readFile(file, 'utf8')).matchAll(/^#+ (.+)$/gm)]
    .map((m) => anchor(m[1]!)));
  const pages = ['README.md', ...(await readdir(join(repoRoot, 'docs'))).map((f) => `docs/${f}`)];
  const broken: string[] = [];
  for (const page of pages) {
    const text = await readFile(join(repoRoot, page), 'utf8');
    for (const [, target] of text.matchAll(/\]\(((?!https?:)[^)\s]+)\)/g)) {
      const [path, hash] = target!.split('#') as [string, string | undefined];
      const file = path ? join(repoRoot, dirname(page), path) : join(repoRoot, page);
      if (!existsSync(file)) broken.push(`${page}: ${target}`);
      else if (hash && file.endsWith('.md') && !(await anchorsOf(file)).has(hash)) broken.push(`${page}: ${target}`);
    }
  }
  assert.deepEqual(broken, []);
});

it('names, in README and docs/, only the version package.json gives', async () => {
  const pages = ['README.md', ...(await readdir(join(repoRoot, 'docs'))).map((f) => `docs/${f}`)];
  for (const page of pages) {
    const text = await readFile(join(repoRoot, page), 'utf8');
    for (const [named] of text.matchAll(/(?<=--version |keelson-controller:|keelson-)\d+\.\d+\.\d+/g)) {
      assert.equal(named, releaseVersion, `${page} names version ${named}`);
    }
  }
});
