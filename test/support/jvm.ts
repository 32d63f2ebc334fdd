// Real JVMs behind simulated pods. kwok runs a pod's exec on this machine, not in a container, so each simulated
// container gets a user of its own: its JVMs run as that user and its exec does too. The operator counts only the
// JVMs its exec's user owns (the only ones it could attach to, as in a real container), so it sees exactly the
// JVMs of that "container". Making users needs root, which the test machines and CI have.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, readlink, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { LocalCluster } from '../../cluster/cluster.ts';
import { serveExec, type PodRef } from '../../cluster/kwok.ts';
import { fetchAgent } from '../../controller/operators/prometheusjmxexporter/agent.ts';
import { GiveUp, waitFor } from '../../cluster/wait.ts';

const run = promisify(execFile);
const poolSize = 24;
/** The test users' leases: kept across runs, as the users are, so that processes running side by side share them. */
export const userLeases = '/tmp/keelson-test-users';

export interface TestUser {
  name: string;
  uid: number;
  gid: number;
  release(): Promise<void>;
}

async function ensureUser(name: string): Promise<{ uid: number; gid: number }> {
  const id = async () => ({ uid: Number((await run('id', ['-u', name])).stdout), gid: Number((await run('id', ['-g', name])).stdout) });
  try {
    return await id();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', name]);
    return id();
  }
}

/** Whether process `pid` exists (a zombie not yet reaped counts). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Takes lease directory `lease` if it is free or its holder has died; false if another process holds it. */
async function claim(lease: string): Promise<boolean> {
  try {
    await mkdir(lease);
  } catch {
    const holder = Number(await readFile(join(lease, 'pid'), 'utf8').catch(() => '0'));
    if (!holder || alive(holder)) return false;
    // Another process may be taking back the same lease: only the one whose rename succeeds goes on.
    const abandoned = `${lease}.abandoned-${process.pid}`;
    if (!(await rename(lease, abandoned).then(() => true, () => false))) return false;
    await rm(abandoned, { recursive: true, force: true });
    if (!(await mkdir(lease).then(() => true, () => false))) return false;
  }
  await writeFile(join(lease, 'pid'), String(process.pid));
  return true;
}

let leasing: Promise<unknown> = Promise.resolve();

/**
 * Removes what the user's JVMs leave in /tmp, which HotSpot uses whatever java.io.tmpdir says: its performance data
 * and the attach sockets of JVMs that were killed. Only while the user is leased and none of its JVMs runs.
 */
async function sweepJvmFiles(user: { name: string; uid: number }): Promise<void> {
  await rm(`/tmp/hsperfdata_${user.name}`, { recursive: true, force: true });
  const sockets = (await readdir('/tmp')).filter((f) => f.startsWith('.java_pid'));
  await Promise.all(sockets.map(async (f) => {
    if ((await stat(join('/tmp', f)).catch(() => undefined))?.uid === user.uid) await rm(join('/tmp', f), { force: true });
  }));
}

/** Reads a /proc file of a process that may have exited since it was listed: undefined if it has. */
async function readOfProcess(read: () => Promise<string>): Promise<string | undefined> {
  try {
    return await read();
  } catch (error) {
    if (['ENOENT', 'ESRCH'].includes((error as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw error;
  }
}

/**
 * The processes running as `uid` (their real uid) in this process's PID namespace, zombies left out (gone but for
 * their parent's wait). A container's processes, in namespaces of their own, are not the tests': a PostgreSQL pod
 * on the real node runs as uid 999, which may also be a test user's.
 */
async function processesOf(uid: number): Promise<number[]> {
  const ours = await readlink('/proc/self/ns/pid');
  const pids = (await readdir('/proc')).filter((name) => /^\d+$/.test(name));
  const running = await Promise.all(pids.map(async (pid) => {
    const status = await readOfProcess(() => readFile(`/proc/${pid}/status`, 'utf8'));
    if (!status || /^Uid:\s+(\d+)/m.exec(status)?.[1] !== String(uid) || /^State:\s+Z/m.test(status)) return undefined;
    return await readOfProcess(() => readlink(`/proc/${pid}/ns/pid`)) === ours ? Number(pid) : undefined;
  }));
  return running.filter((pid) => pid !== undefined);
}

/**
 * Kills what runs as the user when its lease is taken: a run stopped before its cleanup leaves its JVMs running, and
 * the next test leasing the user would count them as its own container's.
 */
async function killLeftovers(user: { name: string; uid: number }): Promise<void> {
  await waitFor(`no process of ${user.name} left`, async () => {
    const left = await processesOf(user.uid);
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    return left.length === 0;
  }, { timeoutMs: 10_000 });
}

/** A user no other test holds, from a fixed pool (leases held by dead processes are taken back). */
export function leaseUser(): Promise<TestUser> {
  if (process.getuid?.() !== 0) throw new Error('JVM-backed pods need root: each simulated container runs as a user of its own');
  // One lease at a time in this process: tests running side by side would otherwise race for the same lease.
  const next = leasing.then(async () => {
    await mkdir(userLeases, { recursive: true });
    for (let n = 0; n < poolSize; n++) {
      const lease = join(userLeases, String(n));
      if (!(await claim(lease))) continue;
      const name = `keelson-jvm-${n}`;
      const release = () => rm(lease, { recursive: true, force: true });
      try {
        const ids = await ensureUser(name);
        await killLeftovers({ name, ...ids });
        await sweepJvmFiles({ name, ...ids });
        return { name, ...ids, release: async () => {
          await sweepJvmFiles({ name, ...ids });
          await release();
        } };
      } catch (error) {
        // Left to the next run to take back; this one tries the next user.
        console.error(`# test user ${name} not leased: ${(error as Error).message}`);
        await release();
      }
    }
    throw new Error(`all ${poolSize} test users are leased`);
  });
  leasing = next.catch(() => undefined);
  return next;
}

const program = `public class Idle {
  public static void main(String[] args) throws Exception {
    System.out.println("ready");
    Thread.sleep(Long.MAX_VALUE);
  }
}
`;

export interface Jvm {
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts an idle JVM as `user` and resolves once main() runs: attaching to a JVM still starting up can kill it, and
 * a real container's JVM has long been up when its pod is Running.
 */
export async function startJvm(user: TestUser, dir: string): Promise<Jvm> {
  const source = join(dir, 'Idle.java');
  await writeFile(source, program, { mode: 0o644 });
  const child: ChildProcess = spawn('java', ['-Xmx64m', '-XX:TieredStopAtLevel=1', source],
    { uid: user.uid, gid: user.gid, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  await waitFor(`JVM as ${user.name} started`, () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new GiveUp(`the JVM exited: ${output}`);
    return output.includes('ready');
  }, { timeoutMs: 30_000, intervalMs: 100 });
  return {
    pid: child.pid!,
    // Stopping twice, or a JVM already gone (by its exit code or by a signal), must not wait for an exit that came.
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A simulated pod's container backed by this machine: exec runs as `user`, with a temporary directory of its own. */
export interface JavaContainer {
  user: TestUser;
  /** A world-readable directory for the JVMs' sources. */
  dir: string;
  jvms: Jvm[];
  startJvm(): Promise<Jvm>;
  cleanup(): Promise<void>;
}

export async function javaContainer(cluster: LocalCluster, ref: PodRef): Promise<JavaContainer> {
  await fetchAgent();
  const user = await leaseUser();
  const dir = await mkdtemp('/tmp/keelson-jvm-');
  await chmod(dir, 0o755);
  const tmp = join(dir, 'tmp');
  await mkdir(tmp);
  await chown(tmp, user.uid, user.gid);
  await serveExec(cluster, ref, dir, { TMPDIR: tmp }, { runAsUser: user.uid, runAsGroup: user.gid });
  const container: JavaContainer = {
    user,
    dir,
    jvms: [],
    startJvm: async () => {
      const jvm = await startJvm(user, dir);
      container.jvms.push(jvm);
      return jvm;
    },
    cleanup: async () => {
      await Promise.all(container.jvms.map((j) => j.stop()));
      // kwok runs exec into the pod in `dir`: once it is gone, a late exec (a controller still running) cannot start
      // as the user, so the user can go back. What started before is the next lease's sweep's.
      await rm(dir, { recursive: true, force: true });
      await user.release();
    },
  };
  return container;
}

/** Waits until kwok serves exec into the pod: it learns of the Exec object through a watch, later under load. */
export async function execReady(cluster: LocalCluster, ref: PodRef): Promise<void> {
  await waitFor(`exec into ${ref.pod} served`, async () => (await cluster.kubectl(['exec', ref.pod, '-n', ref.namespace,
    '--', 'true'], { allowFailure: true })).code === 0, { timeoutMs: 60_000 });
}

/** Reports the pod's container as running under `containerID`, as a kubelet does when it (re)starts one. */
export async function reportContainerStarted(cluster: LocalCluster, ref: PodRef, containerID: string,
  restartCount = 0): Promise<void> {
  const pod = await cluster.getJson(ref.namespace, 'pod', ref.pod);
  const statuses = (pod.status.containerStatuses as { name: string }[]).map((s, i) => i === 0
    ? { ...s, containerID, restartCount, ready: true, state: { running: { startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } } }
    : s);
  await cluster.kubectl(['patch', 'pod', ref.pod, '-n', ref.namespace, '--subresource=status', '--type=merge', '-p',
    JSON.stringify({ status: { containerStatuses: statuses } })]);
}
