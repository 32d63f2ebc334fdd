import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { it } from 'node:test';
import { repoRoot } from './support/paths.ts';

it('runs tests, the operator image and the engines field on one Node major', async () => {
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
  const dockerfile = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
  const major = process.versions.node.split('.')[0];
  assert.equal(pkg.devDependencies.node.split('.')[0], major);
  assert.match(pkg.engines.node, new RegExp(`^>=${major} <${Number(major) + 1}$`));
  const bases = [...dockerfile.matchAll(/^FROM node:(\d+)/gm)].map((m) => m[1]);
  assert.ok(bases.length >= 2);
  for (const base of bases) assert.equal(base, major);
});
