// The JVMs behind simulated pods' containers (test/support/jvm.ts) must stop however they ended: a cleanup that
// waits for an exit that already came never finishes, and its test file's after hook with it, leaving users leased
// and directories (with ServiceAccount kubeconfigs) behind.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { leaseUser, startJvm } from './support/jvm.ts';
import { waitFor } from '../cluster/wait.ts';

const within = <T>(what: string, promise: Promise<T>, ms = 5_000) =>
  Promise.race([promise, sleep(ms).then(() => assert.fail(`${what} did not finish within ${ms} ms`))]);

it('stops a JVM twice, and one killed from outside, at once', async () => {
  const user = await leaseUser();
  const dir = await mkdtemp('/tmp/keelson-jvm-test-');
  await chmod(dir, 0o755);
  try {
    const jvm = await startJvm(user, dir);
    await within('the first stop', jvm.stop());
    await within('a second stop', jvm.stop());
    const killed = await startJvm(user, dir);
    process.kill(killed.pid, 'SIGKILL');
    await waitFor('the JVM gone', () => { try { process.kill(killed.pid, 0); return false; } catch { return true; } });
    await within('stopping a JVM killed from outside', killed.stop());
  } finally {
    await rm(dir, { recursive: true, force: true });
    await user.release();
  }
  // HotSpot writes into /tmp whatever java.io.tmpdir says; the machine keeps nothing of the test's JVMs.
  assert.equal(existsSync(`/tmp/hsperfdata_${user.name}`), false);
});
