// pods/exec against the real apiserver, the command run by kwok on this machine (a simulated pod's exec): output and
// exit codes, and the output cap.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { serveExec } from '../../cluster/kwok.ts';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { waitFor } from '../../cluster/wait.ts';
import { execInPod, ExecOutputExceeded, type ExecRequest } from './exec.ts';

const cluster = testCluster();
const config = cluster.adminConfig();
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;

const request = (command: string[], more: Partial<ExecRequest> = {}): ExecRequest =>
  ({ namespace, pod: 'shell', container: 'shell', command, ...more });

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'exec'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-exec-test-'));
  await cluster.kubectl(['run', 'shell', '--image=registry.example/shell:1', '-n', namespace]);
  await cluster.kubectl(['wait', '--for=condition=Ready', 'pod/shell', '-n', namespace, '--timeout=60s']);
  await serveExec(cluster, { namespace, pod: 'shell' }, scratch);
});
after(async () => {
  await cleanup();
  await rm(scratch, { recursive: true, force: true });
});

describe('exec in a pod', () => {
  // kwok answers a non-zero exit with an internal error rather than the kubelet's NonZeroExitCode: exit 0 here.
  it('returns what the command wrote to each stream', async () => {
    await waitFor('kwok to serve the exec', () => execInPod(config, request(['true'])).then(() => true, () => false));
    assert.deepEqual(await execInPod(config, request(['sh', '-c', 'echo out; echo err >&2'])),
      { exitCode: 0, stdout: 'out\n', stderr: 'err\n' });
  });

  it('abandons a command that writes past the cap, keeping no more than the cap', async () => {
    const started = Date.now();
    await assert.rejects(execInPod(config, request(['sh', '-c', 'yes flood'], { maxOutputBytes: 65_536 })),
      (error: Error) => error instanceof ExecOutputExceeded && /wrote more than 65536 bytes; abandoned/.test(error.message));
    assert.ok(Date.now() - started < 10_000);
  });
});
