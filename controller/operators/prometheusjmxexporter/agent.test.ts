import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../../../cluster/paths.ts';
import { agentArtifact, fetchAgent, readAgent } from './agent.ts';

const run = promisify(execFile);

describe('the pinned JMX exporter agent', () => {
  let dir: string;
  before(async () => { dir = await mkdtemp(join(tmpdir(), 'keelson-agent-')); });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is fetched once into an empty cache by concurrent callers in this and another process', async () => {
    const path = join(dir, 'concurrent', agentArtifact.fileName);
    const script = join(repoRoot, 'build/controller/operators/prometheusjmxexporter/fetch-agent.js');
    const results = await Promise.all([...[1, 2, 3, 4].map(() => fetchAgent(path)),
      run(process.execPath, [script, path]).then(({ stdout }) => stdout.trim())]);
    assert.deepEqual(results, Array(5).fill(path));
    await readAgent(path);
    assert.deepEqual(await readdir(join(dir, 'concurrent')), [agentArtifact.fileName]);
  });

  it('replaces a file that is not the pinned artifact', async () => {
    const path = join(dir, 'corrupt.jar');
    await writeFile(path, 'not a jar');
    await assert.rejects(readAgent(path), /is not io\.prometheus\.jmx:jmx_prometheus_javaagent:1\.0\.1/);
    await fetchAgent(path);
    await readAgent(path);
  });
});
