// The controller process as the Deployment runs it, where it fails to start.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { it } from 'node:test';
import { testCluster } from '../../test/support/cluster.ts';
import { repoRoot } from '../../cluster/paths.ts';
import { runController, type DeferredOperator } from './run.ts';

const cluster = testCluster();

it('exits with 1 and says why when its metrics port is taken, leaving no server to keep it alive', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  const { port } = holder.address() as { port: number };
  try {
    const child = spawn(process.execPath, [join(repoRoot, 'build/controller/main.js'), `--kubeconfig=${cluster.state.kubeconfig}`,
      '--controllers=tdset', `--metrics-bind-address=127.0.0.1:${port}`, '--health-probe-bind-address=127.0.0.1:0'],
    { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    const [code, signal] = await once(child, 'exit');
    clearTimeout(killer);
    assert.equal(signal, null, `still running 20 s after the failure: ${output}`);
    assert.equal(code, 1);
    assert.match(output, /"msg":"controller failed"/);
    assert.match(output, /EADDRINUSE/);
  } finally {
    holder.close();
  }
});

it('loads the code of only the operators --controllers picks', async () => {
  const loaded: string[] = [];
  const deferred = (name: string): DeferredOperator => ({ name, load: async () => {
    loaded.push(name);
    return { name, permissions: [], setup: () => undefined };
  } });
  // No kubeconfig there: the run ends once the chosen operators are loaded.
  const code = await runController(['--controllers=second', '--kubeconfig=/nonexistent/kubeconfig', '--log-level=error'], {},
    [deferred('first'), deferred('second'), deferred('third')]);
  assert.equal(code, 1);
  assert.deepEqual(loaded, ['second']);
});

it('refuses watch timeouts it cannot keep, before it loads anything', async () => {
  const loaded: string[] = [];
  const operator: DeferredOperator = { name: 'only', load: async () => {
    loaded.push('only');
    return { name: 'only', permissions: [], setup: () => undefined };
  } };
  const stderr = process.stderr.write;
  let said = '';
  process.stderr.write = ((chunk: string) => (said += chunk, true)) as typeof process.stderr.write;
  try {
    for (const [name, value] of [['KEELSON_WATCH_TIMEOUT_SECONDS', '0'], ['KEELSON_WATCH_TIMEOUT_SECONDS', '1e300'],
      ['KEELSON_WATCH_SILENCE_TIMEOUT_MS', 'soon']] as const) {
      said = '';
      assert.equal(await runController(['--kubeconfig=/nonexistent/kubeconfig'], { [name]: value }, [operator]), 2);
      assert.match(said, new RegExp(`^${name}=${value}: expected`));
    }
  } finally {
    process.stderr.write = stderr;
  }
  assert.deepEqual(loaded, []);
});
