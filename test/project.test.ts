import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { catalog, operatorNames } from '../controller/operators/catalog.ts';
import { repoRoot } from '../cluster/paths.ts';
import { nodeLts22 } from './support/npm.ts';

it('runs tests and the operator image on one Node major; engines allow just the majors the package is tested on', async () => {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const major = process.versions.node.split('.')[0];
  assert.equal(pkg.devDependencies.node.split('.')[0], major);
  const engineMajors = [...pkg.engines.node.matchAll(/\^(\d+)\./g)].map((m: RegExpMatchArray) => m[1]);
  assert.deepEqual(engineMajors, [nodeLts22.split('.')[0], major]);
  const bases = [...dockerfile.matchAll(/^FROM node:(\d+)/gm)].map((m) => m[1]);
  assert.ok(bases.length >= 2);
  for (const base of bases) assert.equal(base, major);
});

it('puts the pinned exporter agent in the operator image where the controller looks for it', async () => {
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const fetched = /^RUN node (build\/\S+) (\S+)$/m.exec(dockerfile);
  assert.ok(fetched, 'the build stage fetches the agent');
  await readFile(join(repoRoot, fetched[1]!.replace(/^build\//, '').replace(/\.js$/, '.ts')));
  const env = /^ENV KEELSON_JMX_EXPORTER_AGENT=(\S+)$/m.exec(dockerfile)?.[1];
  assert.equal(env, fetched[2]);
  assert.match(dockerfile, new RegExp(`^COPY --from=build ${env} ${env}$`, 'm'));
});

it('names every operator of the catalog in README: the API table and the --controllers default', async () => {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
  const table = [...readme.matchAll(/^\| (\w+) \| `(\w+)` \|/gm)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(table, catalog.map((e) => `${e.kind.kind} ${e.kind.shortNames[0]}`));
  assert.equal(/^\| `--controllers` .*\(default all: ([\w, ]+)\)/m.exec(readme)?.[1], operatorNames.join(', '));
});
