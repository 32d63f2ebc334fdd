// The JVMs behind simulated pods' containers (test/support/jvm.ts) must stop however they ended: a cleanup that
// waits for an exit that already came never finishes, and its test file's after hook with it, leaving users leased
// and directories (with ServiceAccount kubeconfigs) behind. A user goes back to the pool once no exec into its pod
// can start as it.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import { alive, execReady, javaContainer, leaseUser, startJvm, type Jvm, type TestUser } from './support/jvm.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
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
    await waitFor('the JVM gone', () => !alive(killed.pid));
    await within('stopping a JVM killed from outside', killed.stop());
  } finally {
    await rm(dir, { recursive: true, force: true });
    await user.release();
  }
  // HotSpot writes into /tmp whatever java.io.tmpdir says; the machine keeps nothing of the test's JVMs.
  assert.equal(existsSync(`/tmp/hsperfdata_${user.name}`), false);
});

it('kills the JVMs a stopped run left running as a user before leasing it again', async () => {
  const user = await leaseUser();
  const dir = await mkdtemp('/tmp/keelson-jvm-test-');
  await chmod(dir, 0o755);
  const held: TestUser[] = [];
  const number = (name: string) => Number(name.split('-').at(-1));
  let left: Jvm | undefined;
  try {
    left = await startJvm(user, dir).finally(() => user.release());
    // As a run stopped by a signal does: the lease went, its JVM did not.
    // Leases go to the first free user: hold the lower ones until this one comes back. A test file beside this one
    // may take it first; its lease kills the JVM all the same, and this one gets a higher user.
    for (let again = await leaseUser(); ; again = await leaseUser()) {
      held.push(again);
      if (number(again.name) >= number(user.name)) break;
    }
    await waitFor('the leftover JVM reaped', () => !alive(left!.pid), { timeoutMs: 5_000 });
  } finally {
    await left?.stop();
    await rm(dir, { recursive: true, force: true });
    await Promise.all(held.map((h) => h.release()));
  }
});

it('gives a simulated container\'s user back only once exec into its pod can no longer start as it', async () => {
  const cluster = testCluster();
  const ns = await freshNamespace(cluster, 'jvm');
  const ref = { namespace: ns.name, pod: 'java' };
  const execAsUser = () => cluster.kubectl(['exec', ref.pod, '-n', ref.namespace, '--', 'id', '-u'], { allowFailure: true });
  try {
    const container = await javaContainer(cluster, ref);
    let cleaned = false;
    try {
      await cluster.kubectl(['run', ref.pod, '--image=registry.example/java-app:1', '-n', ref.namespace]);
      await execReady(cluster, ref);
      assert.equal((await execAsUser()).stdout.trim(), String(container.user.uid));
      cleaned = true;
      await container.cleanup();
    } finally {
      if (!cleaned) await container.cleanup();
    }
    // The pod and kwok's Exec object are still there: the command fails to start in the working directory.
    const late = await execAsUser();
    assert.notEqual(late.code, 0, `exec into ${ref.pod} still ran, as uid ${late.stdout.trim()}, after its user went back`);
    assert.match(late.stderr, /no such file or directory/);
  } finally {
    await ns.cleanup();
  }
});
