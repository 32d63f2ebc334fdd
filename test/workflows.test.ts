// .github/workflows: what actionlint (pinned, built from its Go module) finds wrong, and scripts they name that
// package.json does not have.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { it } from 'node:test';
import { repoRoot } from '../cluster/paths.ts';
import { goTool } from './support/tools.ts';

const run = promisify(execFile);
const workflowsDir = join(repoRoot, '.github/workflows');

it('pass actionlint', async () => {
  const actionlint = await goTool('actionlint');
  const workflows = (await readdir(workflowsDir)).map((f) => join(workflowsDir, f));
  assert.ok(workflows.length > 0);
  const result = await run(actionlint, ['-no-color', ...workflows]).catch((error) => error);
  assert.equal(result.code ?? 0, 0, result.stdout);
});

it('run only the npm scripts package.json has', async () => {
  const { scripts } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
  for (const file of await readdir(workflowsDir)) {
    const text = await readFile(join(workflowsDir, file), 'utf8');
    for (const [, script] of text.matchAll(/\bnpm run (?:-s )?([\w-]+(?::[\w-]+)*)/g)) {
      assert.ok(scripts[script!], `${file} runs npm run ${script}, which package.json does not have`);
    }
  }
});
