// PostgresCluster with real PostgreSQL (Debian's 15) on the real node: member pods with their agents, volumes of the
// default StorageClass, clients in another pod going through the Services; serial, as one test stops the apiserver.
// What users trust it with: reads and writes where they belong, no acknowledged write lost when the primary goes or
// is cut off, a cut-off primary that stops taking writes before another is promoted, and one that keeps serving
// while only the apiserver is away.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before, describe, it, type TestContext } from 'node:test';
import { controllerImage, postgresImage } from '../../../images/recipes.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace, lastSeen, timesSeen } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { ContinuousWriter } from '../../../test/support/postgres-writer.ts';
import { postgresBin, servedCertificate } from '../../../test/support/postgres.ts';
import { isReady, waitForPod, withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { issueServer } from './certificates.ts';
import { issuedNames } from './tls.ts';
import { failoverTimeoutMs, fenceAfterMs, slotName, synchronousStandbyNames } from './plan.ts';
import { realNodeName } from '../../../cluster/node/node.ts';

const run = promisify(execFile);
const cluster = testCluster();
const { kubectl, get, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let scratch: string;
let controller: ControllerProcess;
let image: string;
const cleanups: (() => Promise<unknown>)[] = [];
const figures: string[] = [];

const status = async (name = 'orders') => (await get('pgc', name))?.status;
/** A query from the client pod, through a Service. */
const client = async (host: string, query: string) =>
  (await kubectl('exec', 'client', '--', 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-h', host, '-Atc', query)).stdout.trim();
/** A query inside a member, over its Unix socket: what that member's PostgreSQL itself holds. */
const local = async (member: string, query: string) => (await kubectl('exec', member, '-c', 'postgres', '--', 'psql', '-X',
  '-h', '/var/run/postgresql', '-U', 'postgres', '-Atc', query)).stdout.trim();

/** The client pod, logging in with the password the credentials Secret holds as it starts. */
async function startClient(): Promise<void> {
  const secretEnv = (name: string, key: string) => ({ name, valueFrom: { secretKeyRef: { name: 'orders-credentials', key } } });
  await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'client' }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'client', image,
      imagePullPolicy: 'Never', command: ['sleep', '100000'], env: [secretEnv('PGPASSWORD', 'postgres-password'),
        { name: 'PGUSER', value: 'postgres' }, { name: 'PGDATABASE', value: 'postgres' },
        { name: 'PGCONNECT_TIMEOUT', value: '2' }] }] } }) });
  await waitForPod(cluster, namespace, 'client', 'Running', isReady);
}

async function running(size: number, name = 'orders', extra: (s: any) => boolean = () => true): Promise<any> {
  let last: any;
  return waitFor(`${name} Running with ${size} ready members`, async () => {
    const s = last = await status(name);
    return s?.phase === 'Running' && s.readyMembers === size && s.members?.length === size && extra(s) ? s : undefined;
  }, { timeoutMs: 180_000, intervalMs: 1000 }).catch(async (error: Error) => {
    const pods = (await get('pods', '-l', `keelson.dev/postgrescluster=${name}`))?.items.map((p: any) =>
      `${p.metadata.name} ${p.status?.phase} ready=${isReady(p)}${p.metadata.deletionTimestamp ? ' deleting' : ''}`);
    throw new Error(`${error.message}; last status: ${JSON.stringify({ phase: last?.phase, primary: last?.primary,
      members: last?.members, conditions: last?.conditions?.map((c: any) => `${c.type}=${c.status} ${c.reason}: ${c.message}`) })}; ` +
      `pods: ${pods?.join(', ')}`);
  });
}

/** Every member holds the same rows as the primary. */
async function converged(members: string[], table: string): Promise<string> {
  return waitFor(`every member to hold the same ${table}`, async () => {
    const sums = await Promise.all(members.map((m) => local(m, `SELECT count(*) || ':' || coalesce(sum(id), 0) FROM ${table}`)));
    return sums.every((s) => s === sums[0]) ? sums[0] : undefined;
  }, { timeoutMs: 60_000, intervalMs: 1000 });
}

async function lost(table: string, acknowledged: number[]): Promise<number[]> {
  const stored = new Set((await client('orders', `SELECT id FROM ${table}`)).split('\n').map(Number));
  return acknowledged.filter((id) => !stored.has(id));
}

/**
 * The host pid of a PostgreSQL child process of `member` whose title starts with `title`. Setting its title overwrites
 * a process's environment, so the member is told by its postmaster's.
 */
async function memberProcess(member: string, title: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline.startsWith(title)) continue;
    const parent = /^PPid:\s+(\d+)$/m.exec(await readFile(`/proc/${entry}/status`, 'utf8').catch(() => ''))?.[1];
    const environ = await readFile(`/proc/${parent}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`HOSTNAME=${member}`) && environ.includes(`PRIMARY_HOST=orders.${namespace}.svc\0`)) return Number(entry);
  }
  throw new Error(`no process "${title}" of ${member} on this node`);
}

/** The host pid of a member's agent: a way into the pod's network namespace from the node. */
async function agentPid(member: string): Promise<number> {
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'utf8').catch(() => '');
    if (environ.split('\0').includes(`MEMBER=${member}`) && environ.includes(`NAMESPACE=${namespace}\0`)) return Number(entry);
  }
  throw new Error(`no agent process of ${member} on this node`);
}

const inPodNetwork = (pid: number, ...args: string[]) => run('nsenter', ['-t', String(pid), '-n', 'ip', ...args]);

/** Runs `script` as `user` (root by default) in a pod of its own with `claim` mounted at /v; its output. */
async function inVolume(claim: string, script: string, user = 0): Promise<string> {
  const name = `shell-${claim}`;
  await apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { restartPolicy: 'Never',
    terminationGracePeriodSeconds: 1, securityContext: { runAsUser: user, fsGroup: user }, containers: [{ name: 'shell', image,
      imagePullPolicy: 'Never', command: ['sh', '-c', script], volumeMounts: [{ name: 'v', mountPath: '/v' }] }],
    volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] } });
  const phase = await waitFor(`${name} done`, async () => {
    const p = (await get('pod', name))?.status?.phase;
    return p === 'Succeeded' || p === 'Failed' ? p : undefined;
  }, { timeoutMs: 60_000 });
  const output = (await kubectl('logs', name)).stdout;
  await kubectl('delete', 'pod', name, '--wait=true');
  assert.equal(phase, 'Succeeded', output);
  return output;
}

/**
 * Pods made from now on need a node label nobody has, so they stay Pending as on a node that is gone; and back, at
 * the latest when the test `t` ends: one that fails holding them does not leave every later test waiting.
 */
function holdNewPods(t: TestContext): { hold: () => Promise<unknown>; release: () => Promise<unknown> } {
  const label = `keelson.dev/hold-${namespace}`;
  cleanups.push(() => cluster.kubectl(['label', 'node', realNodeName, `${label}-`]));
  const release = async () => {
    await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { nodeSelector: null } }));
    await cluster.kubectl(['label', 'node', realNodeName, `${label}=yes`, '--overwrite']);
  };
  t.after(release);
  return {
    hold: async () => {
      await cluster.kubectl(['label', 'node', realNodeName, `${label}-`]);
      await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { nodeSelector: { [label]: 'yes' } } }));
    },
    release,
  };
}

describe('PostgresCluster on the real node', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    const ns = await freshNamespace(cluster, 'pgc-real', { pods: 'real' });
    namespace = ns.name;
    cleanups.push(ns.cleanup);
    scratch = await mkdtemp(join(tmpdir(), 'keelson-pgc-real-'));
    await installCrds(cluster);
    [image] = await Promise.all([cluster.loadImage(postgresImage), cluster.loadImage(await controllerImage())]);
    controller = await startOperator(cluster, namespace, ['postgrescluster'], scratch);
    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'orders', namespace }, spec: { size: 3, version: '15', image,
        storage: { size: '256Mi' } } });
    await running(3);
    await startClient();
  });
  after(async () => {
    await controller?.stop();
    await Promise.all(cleanups.map((c) => c()));
    await rm(scratch, { recursive: true, force: true });
    if (figures.length) console.log(`PostgresCluster on the real node: ${figures.join('; ')}`);
  });

  it('takes writes through <name> and serves them through <name>-ro, which refuses writes', async () => {
    await client('orders', 'CREATE TABLE notes (id int PRIMARY KEY, note text); INSERT INTO notes VALUES (1, \'first\')');
    await waitFor('the row on a replica', async () => (await client('orders-ro', 'SELECT note FROM notes')) === 'first',
      { timeoutMs: 30_000 });
    await assert.rejects(client('orders-ro', 'INSERT INTO notes VALUES (2, \'on a replica\')'), /read-only transaction/);
    const primary = (await status()).primary;
    assert.equal(await local(primary, 'SHOW synchronous_standby_names'),
      `ANY 1 (${(await status()).members.filter((m: any) => m.name !== primary).map((m: any) => `"${m.name}"`).join(', ')})`);
  });

  it('serves TLS through <name> and <name>-ro to clients verifying the full name, streams over it, and takes up a ' +
    'renewed certificate on every member without a restart', async () => {
    const text = (object: any, key: string) => Buffer.from(object.data[key], 'base64').toString();
    const ca = (await get('configmap', 'orders-ca')).data['ca.crt'];
    // As an argument, not on stdin: `kubectl exec -i` has returned, under load, before the file had its bytes.
    await kubectl('exec', 'client', '--', 'sh', '-c', 'printf %s "$1" > /tmp/ca.crt', 'sh', ca);
    assert.equal((await kubectl('exec', 'client', '--', 'cat', '/tmp/ca.crt')).stdout, ca);
    for (const host of ['orders', 'orders-ro', `orders.${namespace}.svc`]) {
      const { stdout } = await kubectl('exec', 'client', '--', 'psql', '-X', '-Atc', 'SELECT ssl FROM pg_stat_ssl ' +
        'WHERE pid = pg_backend_pid()', `host=${host} sslmode=verify-full sslrootcert=/tmp/ca.crt`);
      assert.equal(stdout.trim(), 't', host);
    }
    const { primary, members } = await running(3);
    assert.equal(await local(primary, 'SELECT string_agg(s.ssl::text, \',\') FROM pg_stat_replication r ' +
      'JOIN pg_stat_ssl s USING (pid)'), 'true,true');
    const pods = await Promise.all(members.map((m: any) => get('pod', m.name)));
    const served = () => Promise.all(pods.map(async (p) =>
      (await servedCertificate(p.status.podIP, 5432, ca, `orders.${namespace}.svc`)).serialNumber));
    const before = await served();
    // The very certificate the operator would issue, but past two thirds of its life, as if 61 days had gone by: the
    // operator replaces it for its age alone.
    const authority = await get('secret', 'orders-ca');
    const due = await issueServer({ cert: text(authority, 'ca.crt'), key: text(authority, 'ca.key') },
      issuedNames({ metadata: { name: 'orders', namespace } } as any), Date.now() - 61 * 86_400_000);
    const planted = new X509Certificate(due.cert).serialNumber;
    await kubectl('patch', 'secret', 'orders-tls', '--type=merge', '-p', JSON.stringify({ stringData: {
      'tls.crt': due.cert, 'tls.key': due.key } }));
    const renewed = await waitFor('the operator to renew the certificate', async () => {
      const serial = new X509Certificate(text(await get('secret', 'orders-tls'), 'tls.crt')).serialNumber;
      return serial !== planted && !before.includes(serial) ? serial : undefined;
    }, { timeoutMs: 90_000, intervalMs: 2000 });
    const started = Date.now();
    await waitFor('every member to serve the renewed certificate', async () =>
      (await served()).every((serial) => serial === renewed), { timeoutMs: 240_000, intervalMs: 2000 });
    figures.push(`a renewed certificate served by every member ${Math.round((Date.now() - started) / 1000)} s after ` +
      'the operator wrote it');
    const after = await Promise.all(members.map((m: any) => get('pod', m.name)));
    assert.deepEqual(after.map((p) => `${p.metadata.uid}/${p.status.containerStatuses.find((c: any) => c.name === 'postgres')
      .restartCount}`), pods.map((p) => `${p.metadata.uid}/${p.status.containerStatuses.find((c: any) => c.name === 'postgres')
      .restartCount}`), 'a member was restarted');
    assert.ok((await events('orders')).some((e: any) => e.reason === 'CertificateRenewed'));
  });

  it('loses no acknowledged write when the primary\'s pod is deleted, and writes again soon', async () => {
    await client('orders', 'CREATE TABLE acks (id int PRIMARY KEY, at timestamptz DEFAULT now())');
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'acks');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const primary = (await status()).primary;
    const deleted = Date.now();
    await kubectl('delete', 'pod', primary, '--wait=false');
    await writer.acknowledged('writes acknowledged again', deleted, 120_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('acks', report.acknowledged), []);
    figures.push(`primary pod deleted: writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s`);
    await running(3);
    await converged((await status()).members.map((m: any) => m.name), 'acks');
  });

  it('loses nothing acknowledged through two failovers while members cannot be scheduled, each primary confirming ' +
    'commits with a standby', async (t) => {
    await client('orders', 'CREATE TABLE twice (id int PRIMARY KEY, at timestamptz DEFAULT now())');
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'twice');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const { hold, release } = holdNewPods(t);
    await hold();
    const primaries: string[] = [(await status()).primary];
    const promotedAfter = async (gone: string) => {
      const s = await waitFor(`a primary in place of ${gone}`, async () => {
        const st = await status();
        return st.primary !== gone && st.synchronous?.primary === st.primary &&
          (await get('pod', st.primary))?.metadata.labels['keelson.dev/role'] === 'primary' ? st : undefined;
      }, { timeoutMs: failoverTimeoutMs + 120_000, intervalMs: 1000 });
      // What the new primary itself has in force, read before the cluster could have changed it since.
      const names = await local(s.primary, 'SHOW synchronous_standby_names');
      assert.notEqual(names, '', `${s.primary} took writes with no synchronous standby`);
      assert.equal(names, synchronousStandbyNames(s.synchronous));
      primaries.push(s.primary);
      return s;
    };
    await kubectl('delete', 'pod', primaries[0]!, '--wait=false');
    const second = await promotedAfter(primaries[0]!);
    assert.ok(!second.synchronous.standbys.includes(primaries[0]), 'a member that cannot run is not waited for');
    const since = Date.now();
    await writer.acknowledged(`writes acknowledged by ${second.primary}`, since, 60_000);
    // The second primary killed as a node's death would kill it.
    await kubectl('delete', 'pod', second.primary, '--grace-period=0', '--force', '--wait=false');
    const third = await promotedAfter(second.primary);
    assert.ok(!primaries.slice(0, 2).includes(third.primary));
    await release();
    await running(3, 'orders', (st) => st.primary === third.primary);
    const resumed = Date.now();
    await writer.acknowledged('writes acknowledged again', resumed, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('twice', report.acknowledged), []);
    figures.push(`two failovers with members unschedulable: ${report.acknowledged.length} acknowledged, none lost; ` +
      `writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s at most`);
    await converged((await status()).members.map((m: any) => m.name), 'twice');
  });

  it('clones afresh a replica whose WAL the primary no longer keeps: not Ready meanwhile, it rejoins with every row',
    async (t) => {
      const { primary, members } = await running(3);
      const replica: string = members.map((m: any) => m.name).find((m: string) => m !== primary);
      const { hold, release } = holdNewPods(t);
      await hold();
      const old = (await get('pod', replica)).metadata.uid;
      await kubectl('delete', 'pod', replica, '--wait=false');
      await waitFor(`${replica} back, Pending`, async () => {
        const p = await get('pod', replica);
        return p && p.metadata.uid !== old && p.status?.phase === 'Pending';
      }, { timeoutMs: 60_000 });
      // Meanwhile the primary writes past what one slot may keep (a quarter of the 256Mi volume) and checkpoints.
      await client('orders', 'CREATE TABLE away (id int)');
      for (let i = 0; i < 10; i++) {
        await client('orders', `INSERT INTO away VALUES (${i})`);
        await local(primary, 'SELECT pg_switch_wal()');
        await local(primary, 'CHECKPOINT');
      }
      assert.equal(await local(primary, `SELECT wal_status FROM pg_replication_slots WHERE slot_name = '${slotName(replica)}'`),
        'lost');
      await release();
      // Until its PID 1 has cloned it afresh, it runs but is never Ready: it cannot stream.
      let readyBefore = false;
      await waitFor(`${replica} cloned afresh`, async () => {
        const pod = await get('pod', replica);
        const log = (await kubectl('logs', replica, '-c', 'postgres').catch(() => ({ stdout: '' }))).stdout;
        if (/cloning afresh/.test(log)) return true;
        readyBefore ||= isReady(pod);
        return false;
      }, { timeoutMs: 240_000, intervalMs: 1000 });
      assert.equal(readyBefore, false, `${replica} was Ready while it could not stream`);
      const s = await running(3);
      assert.equal(s.primary, primary);
      assert.equal(await converged(s.members.map((m: any) => m.name), 'away'), '10:45');
    });

  it('repairs a deleted member Role and credentials Secret while its primary keeps running, and replicas still join',
    async () => {
      const primary = (await status()).primary;
      const started = await local(primary, 'SELECT pg_postmaster_start_time()');
      const secret = await get('secret', 'orders-credentials');
      await kubectl('delete', 'role', 'orders-member');
      await kubectl('delete', 'secret', 'orders-credentials');
      const restored = await waitFor('the Secret made again', () => get('secret', 'orders-credentials'));
      assert.deepEqual(restored.data, secret.data);
      assert.ok(await get('role', 'orders-member'));
      await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { size: 4 } }));
      const four = await running(4);
      assert.equal(four.primary, primary);
      assert.equal(await local(primary, 'SELECT pg_postmaster_start_time()'), started, 'the primary was never stopped');
      await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { size: 3 } }));
      await running(3);
    });

  it('promotes the standby that flushed the most, though it replayed the least: every acknowledged row kept', async () => {
    const { primary, members } = await running(3);
    const [paused, stalled] = members.map((m: any) => m.name).filter((m: string) => m !== primary);
    await client('orders', 'CREATE TABLE held (id int PRIMARY KEY, at timestamptz DEFAULT now())');
    await converged([primary, paused, stalled], 'held');
    // One standby keeps receiving but replays nothing; the other stops receiving: only the first confirms commits.
    await local(paused, 'SELECT pg_wal_replay_pause()');
    const receiver = await waitFor(`${stalled}'s WAL receiver`, () => memberProcess(stalled, 'postgres: walreceiver')
      .catch(() => undefined), { timeoutMs: 30_000 });
    process.kill(receiver, 'SIGSTOP');
    const resume = () => { try { process.kill(receiver, 'SIGCONT'); } catch { /* gone with its pod */ } };
    cleanups.push(async () => resume());
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'held');
    await writer.acknowledged('writes flowing', 0, 30_000, 20);
    await kubectl('delete', 'pod', primary, '--wait=false');
    const promoted = await waitFor('a replica promoted', async () => {
      const st = await status();
      return st.primary !== primary && st.synchronous?.primary === st.primary ? st.primary : undefined;
    }, { timeoutMs: failoverTimeoutMs + 120_000, intervalMs: 1000 });
    resume();
    assert.equal(promoted, paused, `${promoted} was promoted, not ${paused}, which had flushed every commit`);
    const since = Date.now();
    await writer.acknowledged('writes acknowledged again', since, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('held', report.acknowledged), []);
    await running(3);
  });

  it('keeps a primary whose claim lost its labels, and moves it off its deleted claim by one switchover', async () => {
    const { primary } = await running(3);
    const uid = (await get('pod', primary)).metadata.uid;
    await kubectl('label', 'pvc', primary, 'keelson.dev/member-', 'keelson.dev/postgrescluster-');
    await waitFor(`${primary}'s claim labelled again`, async () =>
      (await get('pvc', primary)).metadata.labels?.['keelson.dev/member'] === primary, { timeoutMs: 30_000 });
    assert.equal((await get('pod', primary)).metadata.uid, uid, 'the primary was deleted as a stranger');

    await client('orders', 'CREATE TABLE moved (id int PRIMARY KEY, at timestamptz DEFAULT now())');
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'moved');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const promotions = async () => (await events('orders')).filter((e) => e.reason === 'Promoted');
    const promotedBefore = new Map((await promotions()).map((e) => [e.metadata.uid, timesSeen(e)]));
    const deleted = Date.now();
    await kubectl('delete', 'pvc', primary, '--wait=false');
    const after = await running(3, 'orders', (st) => !st.members.some((m: any) => m.name === primary));
    const since = Date.now();
    await writer.acknowledged('writes acknowledged again', since, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('moved', report.acknowledged), []);
    const happened = (await events('orders')).filter((e) => lastSeen(e) >= deleted - 1000);
    // Two promotions of one member with one note would be a single Event seen twice: counted by occurrence.
    const promoted = (await promotions()).flatMap((e) => Array<string | undefined>(
      timesSeen(e) - (promotedBefore.get(e.metadata.uid) ?? 0)).fill(/Promoted (\S+)/.exec(e.note)?.[1]));
    assert.deepEqual(promoted, [after.primary], 'one switchover');
    assert.equal(happened.filter((e) => e.reason === 'StrangerRemoved').length, 0);
    assert.ok((await events('orders')).some((e) => e.reason === 'VolumeRelabelled'));
    figures.push(`primary's claim deleted: one switchover, writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s`);
  });

  it('stops a primary cut off from the network before promoting another; it rejoins as a replica', async () => {
    await client('orders', 'CREATE TABLE cut (id int PRIMARY KEY, at timestamptz DEFAULT now())');
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'cut');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const old = (await status()).primary;
    const oldPod = (await get('pod', old)).metadata.uid;
    const pid = await agentPid(old);
    const cut = Date.now();
    await inPodNetwork(pid, 'link', 'set', 'eth0', 'down');
    // The old primary's own PostgreSQL, asked over its socket from the node's side, until it no longer answers.
    const stopped = await waitFor(`${old} to stop taking writes`, async () => {
      const answer = await kubectl('exec', old, '-c', 'postgres', '--', 'psql', '-X', '-h', '/var/run/postgresql',
        '-U', 'postgres', '-Atc', 'SELECT 1').catch(() => undefined);
      return answer === undefined ? Date.now() : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    const promoted = await waitFor('a replica promoted', async () => (await events('orders'))
      .find((e) => e.reason === 'Promoted' && lastSeen(e) > cut), { timeoutMs: failoverTimeoutMs + 120_000 });
    const promotedAt = lastSeen(promoted);
    assert.ok(stopped < promotedAt, `${old} answered until ${new Date(stopped).toISOString()}, ` +
      `after the promotion at ${new Date(promotedAt).toISOString()}`);
    assert.match(promoted.note, new RegExp(`in place of ${old}`));
    figures.push(`primary cut off: stopped ${((stopped - cut) / 1000).toFixed(1)} s after the cut, a replica promoted ` +
      `after ${((promotedAt - cut) / 1000).toFixed(1)} s`);

    // Healing: the link comes back if the pod is still there (the operator replaces it before promoting).
    const pod = await get('pod', old);
    if (pod?.metadata.uid === oldPod) await inPodNetwork(pid, 'link', 'set', 'eth0', 'up').catch(() => undefined);
    await writer.acknowledged('writes acknowledged again', promotedAt, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('cut', report.acknowledged), []);
    figures.push(`writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s`);
    const s = await running(3, 'orders', (st) => st.members.find((m: any) => m.name === old)?.role === 'replica');
    assert.notEqual(s.primary, old);
    assert.equal(await local(old, 'SELECT pg_is_in_recovery()'), 't');
    await converged(s.members.map((m: any) => m.name), 'cut');
  });

  it('stops a primary within the bound each time its agent is killed; its own container cannot reach the agent\'s ' +
    'token', async () => {
    const answers = (member: string) => local(member, 'SELECT 1').then(() => true, () => false);
    for (let round = 1; round <= 2; round++) {
      const { primary } = await running(3);
      await waitFor(`${primary} answering`, () => answers(primary), { timeoutMs: 60_000, intervalMs: 500 });
      if (round === 1) {
        const found = await kubectl('exec', primary, '-c', 'postgres', '--', 'sh', '-c', 'ls -d /proc/[0-9]*/root' +
          '/var/run/secrets/kubernetes.io/serviceaccount/token /var/run/secrets/kubernetes.io/serviceaccount 2>/dev/null; true');
        assert.equal(found.stdout.trim(), '', 'the postgres container sees the agent\'s token');
      }
      const pid = await waitFor(`${primary}'s agent`, () => agentPid(primary).catch(() => undefined), { timeoutMs: 30_000 });
      process.kill(pid, 'SIGKILL');
      const killed = Date.now();
      const stopped = await waitFor(`${primary} to stop answering`, async () => !(await answers(primary)) && Date.now(),
        { timeoutMs: 30_000, intervalMs: 250 });
      assert.ok(stopped - killed <= fenceAfterMs + 3_000, `${primary} answered ${stopped - killed} ms after its agent died`);
      figures.push(`agent killed (${round}): PostgreSQL stopped after ${((stopped - killed) / 1000).toFixed(1)} s`);
    }
    await running(3);
  });

  it('scales from 3 to 1 and back to 3; one member alone takes writes', async () => {
    await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { size: 1 } }));
    const one = await running(1);
    assert.equal(await local(one.primary, 'SHOW synchronous_standby_names'), '');
    await client('orders', 'INSERT INTO notes VALUES (3, \'with one member\')');
    await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { size: 3 } }));
    const three = await running(3);
    await converged(three.members.map((m: any) => m.name), 'notes');
  });

  it('rolls a minor version through the members with a client writing, losing no acknowledged write', async () => {
    // Debian serves one PostgreSQL 15 release, so the roll restarts every member on the same binaries: what is proven
    // is the roll itself (replicas first, a switchover, the old primary last) under writes.
    // The Service's endpoints follow pods a moment after the cluster reports them.
    await waitFor('orders to take writes', () => client('orders', 'CREATE TABLE roll (id int PRIMARY KEY, at timestamptz ' +
      'DEFAULT now())').then(() => true, () => false), { timeoutMs: 30_000, intervalMs: 1000 });
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'roll');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const before = (await status()).primary;
    await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { version: '15.20' } }));
    const rolled = await running(3, 'orders', (st) => st.currentVersion === '15.20');
    const switched = Date.now();
    await writer.acknowledged('writes acknowledged after the roll', switched, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('roll', report.acknowledged), []);
    assert.notEqual(rolled.primary, before, 'the primary was switched over');
    for (const m of rolled.members) {
      assert.equal((await get('pod', m.name)).metadata.annotations['keelson.dev/postgres-version'], '15.20');
    }
    figures.push(`minor roll: writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s at most`);
  });

  it('applies spec.postgresql: a reload for what a reload applies, a roll under writes for what needs a restart, ' +
    'pg_hba rules by a reload, and a refused value changes nothing', async () => {
    const configured = (generation: number) => waitFor('spec.postgresql applied', async () => {
      const s = await status();
      const c = s?.conditions?.find((x: any) => x.type === 'ConfigurationApplied');
      if (c?.reason === 'InvalidConfiguration') throw new Error(c.message);
      return s?.phase === 'Running' && s.readyMembers === 3 && c?.status === 'True' && c.observedGeneration === generation
        ? s : undefined;
    }, { timeoutMs: 300_000, intervalMs: 1000 });
    const generation = async () => (await get('pgc', 'orders')).metadata.generation as number;
    // Replaced whole, as an apply of the manifest would: a merge would keep what is left out.
    const setPostgresql = async (postgresql: object | null) => {
      await kubectl('patch', 'pgc', 'orders', '--type=json', '-p', JSON.stringify([postgresql
        ? { op: 'add', path: '/spec/postgresql', value: postgresql } : { op: 'remove', path: '/spec/postgresql' }]));
      return generation();
    };
    const everyMember = async (query: string) => Promise.all((await status()).members.map((m: any) => local(m.name, query)));
    const podUids = async () => (await get('pods', '-l', 'keelson.dev/postgrescluster=orders')).items
      .map((p: any) => p.metadata.uid).sort();
    await waitFor('orders to take writes', () => client('orders', 'CREATE TABLE conf (id int PRIMARY KEY, at timestamptz ' +
      'DEFAULT now())').then(() => true, () => false), { timeoutMs: 30_000, intervalMs: 1000 });
    await client('orders', 'CREATE ROLE blocked LOGIN PASSWORD \'blockedSecret1\'');
    const asBlocked = () => kubectl('exec', 'client', '--', 'env', 'PGPASSWORD=blockedSecret1', 'psql', '-X', '-h', 'orders',
      '-U', 'blocked', '-Atc', 'SELECT current_user').then((r) => r.stdout.trim(), (e: Error) => e.message);
    assert.equal(await asBlocked(), 'blocked');

    // A parameter a restart applies, one a reload applies and a rule: the members roll under writes, one at a time.
    const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'conf');
    await writer.acknowledged('writes flowing', 0, 30_000);
    const before = (await status()).primary;
    const asked = Date.now();
    await configured(await setPostgresql({ parameters: { shared_buffers: '64MB', work_mem: '24MB' },
      pgHba: ['host all blocked all reject'] }));
    await writer.acknowledged('writes acknowledged after the roll', asked, 60_000);
    const report = await writer.stop();
    assert.deepEqual(await lost('conf', report.acknowledged), []);
    assert.deepEqual(await everyMember('SHOW shared_buffers'), ['64MB', '64MB', '64MB']);
    assert.deepEqual(await everyMember('SHOW work_mem'), ['24MB', '24MB', '24MB']);
    assert.notEqual((await status()).primary, before, 'the primary was switched over, not restarted under writes');
    const notes = async (reason: string) => (await events('orders')).filter((e) => e.reason === reason).map((e) => e.note);
    assert.match((await notes('MemberUpgrading')).join('\n'), /to apply shared_buffers/);
    assert.match(await asBlocked(), /pg_hba.conf rejects connection .* user "blocked"/);
    figures.push(`parameter roll: writes stopped for ${(report.longestGapMs / 1000).toFixed(1)} s at most`);

    // What a reload applies restarts nothing.
    const uids = await podUids();
    await configured(await setPostgresql({ parameters: { shared_buffers: '64MB', work_mem: '32MB' } }));
    assert.deepEqual(await everyMember('SHOW work_mem'), ['32MB', '32MB', '32MB']);
    assert.equal(await asBlocked(), 'blocked');
    assert.deepEqual(await podUids(), uids);

    // A value PostgreSQL refuses: said, and nothing changed; the schema refuses what the operator sets itself.
    await setPostgresql({ parameters: { shared_buffers: '64MB', work_mem: 'lots' } });
    const refused = await waitFor('the value refused', async () => (await status())?.conditions
      ?.find((c: any) => c.type === 'ConfigurationApplied' && c.reason === 'InvalidConfiguration'), { timeoutMs: 60_000 });
    assert.match(refused.message, /invalid value for parameter "work_mem": "lots"/);
    assert.match((await notes('InvalidConfiguration')).join('\n'), /work_mem/);
    assert.deepEqual(await everyMember('SHOW work_mem'), ['32MB', '32MB', '32MB']);
    assert.deepEqual(await podUids(), uids);
    assert.match((await get('configmap', 'orders-configuration')).data['keelson.conf'], /work_mem = '32MB'/,
      'members starting read what was accepted, not what was refused');
    await assert.rejects(setPostgresql({ parameters: { port: '6000', wal_level: 'minimal' } }),
      /the operator sets listen_addresses, port, .*wal_level.* itself/);
    await configured(await setPostgresql(null));
    assert.deepEqual(await everyMember('SHOW work_mem'), ['4MB', '4MB', '4MB']);
  });

  it('keeps the roles and databases of the spec, each role logging in with its Secret\'s password, which no log holds',
    async () => {
      const rolesApplied = (generation: number) => waitFor('RolesApplied', async () => {
        const c = (await status())?.conditions?.find((x: any) => x.type === 'RolesApplied');
        if (c?.status === 'False' && c.reason !== 'Waiting') throw new Error(`${c.reason}: ${c.message}`);
        return c?.status === 'True' && c.observedGeneration === generation || undefined;
      }, { timeoutMs: 120_000, intervalMs: 1000 });
      const setSpec = async (spec: object) => {
        await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec }));
        return (await get('pgc', 'orders')).metadata.generation as number;
      };
      const setPassword = async (password: string) => {
        const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'app-password', namespace },
          stringData: { password } };
        await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify(secret) });
      };
      const asApp = (password: string) => kubectl('exec', 'client', '--', 'env', `PGPASSWORD=${password}`, 'psql', '-X',
        '-h', 'orders', '-U', 'app', '-d', 'appdb', '-Atc', 'SELECT current_user || \'@\' || current_database()')
        .then((r) => r.stdout.trim(), (e: Error) => e.message);
      await setPassword('appFirst1');
      await rolesApplied(await setSpec({ roles: [{ name: 'app', passwordSecret: { name: 'app-password' },
        connectionLimit: 10 }], databases: [{ name: 'appdb', owner: 'app' }] }));
      assert.equal(await asApp('appFirst1'), 'app@appdb');
      assert.match(await asApp('wrong'), /password authentication failed for user "app"/);
      // A new password in the Secret: in force within the minute the Secrets are read again in.
      await setPassword('appSecond2');
      const rotated = Date.now();
      await waitFor('the new password in force', async () => (await asApp('appSecond2')) === 'app@appdb' || undefined,
        { timeoutMs: 120_000, intervalMs: 2000 });
      figures.push(`role password rotated in ${((Date.now() - rotated) / 1000).toFixed(0)} s`);
      assert.match(await asApp('appFirst1'), /password authentication failed/);
      // Neither the password nor the verifier sent for it anywhere a reader of logs, Events or status would see.
      const seen = [(await kubectl('logs', (await status()).primary, '-c', 'postgres')).stdout, JSON.stringify(controller.logs),
        JSON.stringify(await events('orders')), JSON.stringify(await status())].join('\n');
      for (const secret of ['appFirst1', 'appSecond2', 'SCRAM-SHA-256$']) assert.ok(!seen.includes(secret), `${secret} seen`);
      // Dropped only when asked.
      await rolesApplied(await setSpec({ roles: [{ name: 'app', ensure: 'absent' }],
        databases: [{ name: 'appdb', owner: 'app', ensure: 'absent' }] }));
      assert.equal(await client('orders', 'SELECT count(*) FROM pg_roles WHERE rolname = \'app\''), '0');
      assert.equal(await client('orders', 'SELECT count(*) FROM pg_database WHERE datname = \'appdb\''), '0');
      await setSpec({ roles: null, databases: null });
    });

  it('archives into its backup volume through a repository host; a new cluster recovers every row archived from ' +
    'that volume, and recovers them again through its own when every member is lost; retain: 1 keeps one',
  async () => {
    // The schedule never fires here: the first backup is the operator's own (a cluster needs one), the second asked.
    await kubectl('patch', 'pgc', 'orders', '--type=merge', '-p', JSON.stringify({ spec: { backup: {
      schedule: '0 3 1 1 *', retain: 1 } } }));
    const first = await waitFor('the first backup into the volume', async () => {
      const s = await status();
      return s?.lastBackup?.type === 'full' ? s.lastBackup : undefined;
    }, { timeoutMs: 300_000, intervalMs: 2000 });
    assert.match(first.name, /^\d{8}-\d{6}F$/);
    await waitFor('ContinuousArchiving True', async () => (await status())?.conditions
      ?.find((c: any) => c.type === 'ContinuousArchiving')?.status === 'True', { timeoutMs: 120_000 });
    await kubectl('annotate', 'pgc', 'orders', 'keelson.dev/backup-request=second');
    const second = await waitFor('the backup asked for', async () => {
      const s = await status();
      if (s?.backupRequest?.phase === 'Failed') throw new Error(`backup failed: ${s.backupRequest.message}`);
      return s?.backupRequest?.phase === 'Completed' ? s.lastBackup : undefined;
    }, { timeoutMs: 300_000, intervalMs: 2000 });
    assert.ok(second.time > first.time);
    assert.match((await events('orders')).map((e: any) => e.note).join('\n'), /started on orders-repo, into the backup volume/);
    const stored = JSON.parse((await kubectl('exec', 'orders-repo', '-c', 'repository', '--', 'pgbackrest', 'info',
      '--output=json')).stdout)[0].backup.map((b: any) => b.label);
    assert.deepEqual(stored, [second.name], 'retain: 1');
    // A row after the backup, in WAL the archive has: a recovery replays it.
    const primary = (await status()).primary;
    await client('orders', 'INSERT INTO notes VALUES (8, \'archived only\')');
    const segment = await local(primary, 'SELECT pg_walfile_name(pg_switch_wal())');
    await waitFor(`${segment} archived`, async () =>
      (await local(primary, 'SELECT last_archived_wal FROM pg_stat_archiver')) >= segment, { timeoutMs: 120_000 });
    const rows = await client('orders', 'SELECT count(*) FROM acks');

    await apply({ apiVersion: 'keelson.dev/v1alpha1',
      kind: 'PostgresCluster', metadata: { name: 'restored', namespace }, spec: { size: 1, version: '15.20', image,
        storage: { size: '256Mi' }, bootstrap: { fromBackup: { cluster: 'orders' } },
        backup: { schedule: '0 3 1 1 *' } } });
    let restored = await running(1, 'restored');
    assert.equal(await local(restored.primary, 'SELECT count(*) FROM acks'), rows);
    assert.equal(await local(restored.primary, 'SELECT note FROM notes WHERE id = 8'), 'archived only');

    // Every member of it lost, volume and all: its seed recovers from its own archive, through its repository host.
    await waitFor('restored\'s first backup', async () => (await status('restored'))?.lastBackup?.type === 'full',
      { timeoutMs: 300_000, intervalMs: 2000 });
    await local(restored.primary, 'INSERT INTO notes VALUES (9, \'restored, then lost\')');
    const last = await local(restored.primary, 'SELECT pg_walfile_name(pg_switch_wal())');
    await waitFor(`${last} archived`, async () =>
      (await local(restored.primary, 'SELECT last_archived_wal FROM pg_stat_archiver')) >= last, { timeoutMs: 120_000 });
    await kubectl('delete', 'pod,pvc', '-l', 'keelson.dev/postgrescluster=restored,keelson.dev/member', '--wait=false');
    await waitFor('a seed recovering from restored\'s own archive', async () => (await events('restored'))
      .some((e: any) => e.reason === 'Restoring' && /own archive/.test(e.note)), { timeoutMs: 120_000 });
    restored = await running(1, 'restored');
    assert.equal(await local(restored.primary, 'SELECT count(*) FROM acks'), rows);
    assert.equal(await local(restored.primary, 'SELECT note FROM notes WHERE id = 9'), 'restored, then lost');
    await kubectl('delete', 'pgc', 'restored', '--wait=false');
  });

  it('keeps its primary taking writes through a 30 s apiserver outage, every member vouching for it, never two',
    async () => {
      const { primary, members } = await running(3);
      await client('orders', 'CREATE TABLE outage (id int PRIMARY KEY, at timestamptz DEFAULT now())');
      const password = Buffer.from((await get('secret', 'orders-credentials')).data['postgres-password'], 'base64').toString();
      const addresses: [string, string][] = await Promise.all(members.map(async (m: any) =>
        [m.name, (await get('pod', m.name)).status.podIP] as [string, string]));
      const psql = join(await postgresBin(), 'psql');
      /** The members that take writes, asked from the node at their pod addresses: the apiserver plays no part. */
      const writable = async () => (await Promise.all(addresses.map(async ([name, ip]) => {
        const answer = await run(psql, ['-X', '-Atc', 'SELECT pg_is_in_recovery()',
          `host=${ip} user=postgres dbname=postgres connect_timeout=1`], { env: { PGPASSWORD: password }, timeout: 3_000 })
          .then(({ stdout }) => stdout.trim(), () => '');
        return answer === 'f' ? [name] : [];
      }))).flat();
      // The Lease names the members the primary counts on: all of them vouch while the apiserver is away.
      await waitFor('the members the primary counts on in the Lease', async () => (await get('lease', 'orders-primary'))
        .metadata.annotations?.['keelson.dev/failsafe-peers'] === JSON.stringify(members.map((m: any) => m.name)
        .filter((m: string) => m !== primary)), { timeoutMs: 30_000 });
      const writer = ContinuousWriter.start(cluster, namespace, 'client', 'orders', 'outage');
      await writer.acknowledged('writes flowing', 0, 30_000);
      const apiserver = cluster.state.pids['kube-apiserver']!;
      process.kill(apiserver, 'SIGSTOP');
      const frozen = new Date();
      try {
        for (; Date.now() - frozen.getTime() < 30_000; await sleep(500)) {
          const primaries = await writable();
          assert.deepEqual(primaries, [primary], `${Date.now() - frozen.getTime()} ms into the outage, taking writes: ` +
            `${primaries.join(', ') || 'nobody'}`);
        }
      } finally {
        process.kill(apiserver, 'SIGCONT');
      }
      const thawed = Date.now();
      // The writer's report comes through kubectl exec, which the apiserver carries: what it committed meanwhile is
      // read from the rows' own commit times instead.
      const committed = Number(await client('orders', `SELECT count(*) FROM outage WHERE at >= '${frozen.toISOString()}' ` +
        `AND at < '${new Date(thawed).toISOString()}'`));
      assert.ok(committed >= 50, `only ${committed} writes committed during the 30 s outage`);
      await writer.acknowledged('writes acknowledged after the outage', thawed, 60_000);
      const report = await writer.stop();
      assert.deepEqual(await lost('outage', report.acknowledged), []);
      assert.equal((await running(3)).primary, primary);
      figures.push(`apiserver stopped for 30 s: ${primary} stayed the only primary and committed ${committed} writes ` +
        'meanwhile');
    });

  it('changes no Service or claim of its names that is another\'s: reported, untouched, and left when it is deleted',
    async () => {
      await apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'taken' }, spec: { selector: { app: 'elsewhere' },
        ports: [{ port: 5432 }] } });
      await apply({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'taken-0000' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } } });
      const version = async () => [(await get('service', 'taken')).metadata.resourceVersion,
        (await get('pvc', 'taken-0000')).metadata.resourceVersion];
      const before = await version();
      await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'taken', namespace },
        spec: { size: 1, version: '15', image, storage: { size: '256Mi' } } });
      const condition = (st: any, type: string) => st?.conditions?.find((c: any) => c.type === type);
      const reported = await waitFor('both reported', async () => {
        const st = await status('taken');
        return condition(st, 'SharedObjectsReady')?.reason === 'NotOwned' && condition(st, 'Ready')?.reason === 'NotOwned'
          ? st : undefined;
      }, { timeoutMs: 60_000 });
      assert.match(condition(reported, 'SharedObjectsReady').message, /Service taken /);
      assert.match(condition(reported, 'Ready').message, /PersistentVolumeClaim taken-0000 exists and belongs to something else/);
      assert.ok((await events('taken')).some((e) => e.reason === 'NotOwned' && e.type === 'Warning'));
      assert.deepEqual(await version(), before);
      assert.deepEqual((await get('service', 'taken')).spec.selector, { app: 'elsewhere' });
      await kubectl('delete', 'pgc', 'taken', '--wait=true');
      await waitFor('the cluster\'s own objects gone', async () => !(await get('service', 'taken-ro')), { timeoutMs: 60_000 });
      assert.deepEqual(await version(), before);
      await kubectl('delete', 'service', 'taken');
      await kubectl('delete', 'pvc', 'taken-0000');
    });

  it('comes back with every row when deleted and made again with the same name, its Secret lost too', async () => {
    const rows = await client('orders', 'SELECT count(*) || \':\' || sum(id) FROM acks');
    const claims = (await get('pvc', '-l', 'keelson.dev/postgrescluster=orders,keelson.dev/member')).items
      .map((c: any) => c.metadata.uid).sort();
    const spec = (await get('pgc', 'orders')).spec;
    await kubectl('delete', 'pgc', 'orders');
    await waitFor('the members gone', async () => (await get('pods', '-l',
      'keelson.dev/postgrescluster=orders,keelson.dev/member')).items.length === 0, { timeoutMs: 120_000 });
    // The Secret is kept with the volumes; deleted as well, nobody can say the passwords PostgreSQL has.
    const password = (secret: any) => Buffer.from(secret.data['postgres-password'], 'base64').toString();
    const old = password(await get('secret', 'orders-credentials'));
    await kubectl('delete', 'secret', 'orders-credentials');
    await kubectl('delete', 'pod', 'client', '--grace-period=1');
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'orders', namespace }, spec });
    const back = await running(3);
    assert.deepEqual((await get('pvc', '-l', 'keelson.dev/postgrescluster=orders,keelson.dev/member')).items
      .map((c: any) => c.metadata.uid).sort(), claims);
    assert.notEqual(password(await get('secret', 'orders-credentials')), old);
    await waitFor('a CredentialsReset Event', async () => /made again with new passwords, which the primary sets/.test(
      (await kubectl('get', 'events', '--field-selector', 'reason=CredentialsReset', '-o', 'jsonpath={.items[*].message}')).stdout));
    await startClient();
    await waitFor('orders to take reads', () => client('orders', 'SELECT 1').then(() => true, () => false), { timeoutMs: 30_000 });
    assert.equal(await client('orders', 'SELECT count(*) || \':\' || sum(id) FROM acks'), rows);
    await converged(back.members.map((m: any) => m.name), 'acks');
  });
  it('clones afresh a member that pg_rewind cannot rewind, which rejoins with every row', async (t) => {
    const { primary, members } = await running(3);
    const replica: string = members.map((m: any) => m.name).find((m: string) => m !== primary);
    const { hold, release } = holdNewPods(t);
    await hold();
    const old = (await get('pod', replica)).metadata.uid;
    await kubectl('delete', 'pod', replica, '--wait=false');
    await waitFor(`${replica} back, Pending`, async () => {
      const p = await get('pod', replica);
      return p && p.metadata.uid !== old && p.status?.phase === 'Pending';
    }, { timeoutMs: 60_000 });
    // In its place, the data of another cluster's primary: pg_rewind refuses to rewind a different system.
    await inVolume(replica, 'rm -rf /v/pgdata && initdb -D /v/pgdata -U postgres >/dev/null && echo made', 999);
    await release();
    await waitFor(`${replica} cloned afresh`, async () => /pg_rewind failed: this member's data is replaced by a fresh clone/
      .test((await kubectl('logs', replica, '-c', 'postgres').catch(() => ({ stdout: '' }))).stdout),
    { timeoutMs: 120_000, intervalMs: 1000 });
    const s = await running(3);
    await converged(s.members.map((m: any) => m.name), 'acks');
  });
});
