// PostgreSQL servers from Debian's packages, run on this machine as the postgres user by the same scripts member
// pods run, on loopback ports, each in a directory of the test's own.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { connect as connectTls, type PeerCertificate } from 'node:tls';
import { after, before } from 'node:test';
import { chown, mkdir, mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../cluster/ports.ts';
import { GiveUp, waitFor } from '../../cluster/wait.ts';
import { memberScript } from '../../controller/operators/postgrescluster/scripts.ts';

const run = promisify(execFile);

/** The bin directory of the newest PostgreSQL installed (Debian keeps them off PATH, per major). */
export async function postgresBin(): Promise<string> {
  const majors = (await readdir('/usr/lib/postgresql').catch(() => [])).filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a));
  if (!majors.length) throw new Error('no PostgreSQL server in /usr/lib/postgresql: apt-get install postgresql');
  return `/usr/lib/postgresql/${majors[0]}/bin`;
}

export async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout);
  return { uid: await id('-u'), gid: await id('-g') };
}

/** A directory of the test's own under /tmp, the postgres user's, with the servers' socket directory in it. */
export async function postgresScratch(passwords: Environment['passwords'] =
{ POSTGRES_PASSWORD: 'superSecret1', REPLICATION_PASSWORD: 'replSecret1' }): Promise<{ dir: string; environment: Environment }> {
  const dir = await mkdtemp('/tmp/keelson-pg-');
  const user = await postgresUser();
  await chown(dir, user.uid, user.gid);
  const socketDir = join(dir, 'sockets');
  await mkdir(socketDir);
  await chown(socketDir, user.uid, user.gid);
  return { dir, environment: { bin: await postgresBin(), user, socketDir, passwords } };
}

export interface Environment {
  bin: string;
  user: { uid: number; gid: number };
  socketDir: string;
  passwords: { POSTGRES_PASSWORD: string; REPLICATION_PASSWORD: string };
}

/** Runs `script` as the postgres user with `env`; rejects with its stderr on a non-zero exit. */
export async function runScript(environment: Environment, script: string, env: Record<string, string>): Promise<string> {
  const { stdout } = await run('sh', ['-c', script], { uid: environment.user.uid, gid: environment.user.gid,
    env: scriptEnv(environment, env), timeout: 120_000 });
  return stdout.trim();
}

function scriptEnv(environment: Environment, env: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: `${environment.bin}:/usr/bin:/bin`, SOCKET_DIR: environment.socketDir, LISTEN: '127.0.0.1',
    ...environment.passwords, ...env };
}

export interface Member {
  name: string;
  port: number;
  dataDir: string;
  output(): string;
  /** SIGKILL: the server dies as a node failure would take it. */
  kill(): Promise<void>;
}

/** How many processes run with `dir` as their working directory (a server's backends do). */
async function processesIn(dir: string): Promise<number> {
  const pids = (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry));
  const cwds = await Promise.all(pids.map((pid) => readlink(`/proc/${pid}/cwd`).catch(() => '')));
  return cwds.filter((cwd) => cwd === dir).length;
}

/** Starts the member script in the foreground (as a pod would) and waits until the server accepts connections. */
export async function startMember(environment: Environment, name: string, dataDir: string, script: string,
  env: Record<string, string>): Promise<Member> {
  const port = await freePort();
  // A process group of its own: a member script that stays PID 1 has PostgreSQL as its child, which must die with it.
  const child: ChildProcess = spawn('sh', ['-c', script], { uid: environment.user.uid, gid: environment.user.gid,
    env: scriptEnv(environment, { ...env, PGDATA: dataDir, PGPORT: String(port) }), stdio: ['ignore', 'pipe', 'pipe'],
    detached: true });
  let output = '';
  child.stdout!.on('data', (d) => { output += d; });
  child.stderr!.on('data', (d) => { output += d; });
  const member: Member = {
    name, port, dataDir,
    output: () => output,
    kill: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      // The script execs postgres or stays its parent; the postmaster dies with the group, its backends notice and
      // exit, and until they have, a server started on the same data directory finds their shared memory in use.
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
      await waitFor(`the processes of member ${name} gone`, async () => (await processesIn(dataDir)) === 0,
        { timeoutMs: 30_000, intervalMs: 100 });
    },
  };
  await waitFor(`member ${name} accepting connections`, async () => {
    if (child.exitCode !== null) throw new GiveUp(`member ${name} exited ${child.exitCode}: ${output}`);
    await sql(environment, member, 'SELECT 1');
    return true;
  }, { timeoutMs: 120_000, intervalMs: 250 });
  return member;
}

/** A query over the member's Unix socket as the superuser; the rows as text, one per line. */
export async function sql(environment: Environment, member: { port: number }, query: string): Promise<string> {
  const { stdout } = await run(`${environment.bin}/psql`, ['-X', '-v', 'ON_ERROR_STOP=1', '-h', environment.socketDir,
    '-p', String(member.port), '-U', 'postgres', '-d', 'postgres', '-Atc', query]);
  return stdout.trim();
}

/**
 * A primary of the suite's own, started by the member script in a scratch directory before the suite's tests and
 * removed after them; a test may put another in `member` (restarted on the same data, say).
 */
export function suitePrimary(): { dir: string; environment: Environment; member: Member } {
  const suite = {} as { dir: string; environment: Environment; member: Member };
  before(async () => {
    Object.assign(suite, await postgresScratch());
    suite.member = await startMember(suite.environment, 'a', join(suite.dir, 'a'), memberScript, { MEMBER_ROLE: 'primary' });
  });
  after(async () => {
    await suite.member?.kill();
    if (suite.dir) await rm(suite.dir, { recursive: true, force: true });
  });
  return suite;
}

/**
 * The certificate a PostgreSQL server at `host`:`port` presents, asked for as libpq asks (an SSLRequest, then the TLS
 * handshake), and verified against `ca` for `servername` as sslmode=verify-full would.
 */
export async function servedCertificate(host: string, port: number, ca: string, servername: string): Promise<PeerCertificate> {
  const socket = connect(port, host);
  await once(socket, 'connect');
  const request = Buffer.alloc(8);
  request.writeInt32BE(8, 0);
  request.writeInt32BE(80877103, 4);
  socket.write(request);
  const [answer] = await once(socket, 'data') as [Buffer];
  if (answer.toString() !== 'S') {
    socket.destroy();
    throw new Error(`${host}:${port} does not serve TLS (it answered "${answer.toString()}")`);
  }
  const secure = connectTls({ socket, ca, servername });
  try {
    await once(secure, 'secureConnect');
    return secure.getPeerCertificate();
  } finally {
    secure.destroy();
  }
}
