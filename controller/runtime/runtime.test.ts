import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get as httpsGet } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { policyRules } from '../../charts/rbac.ts';
import { fixturePermissions } from '../../test/runtime/fixture.ts';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { ControllerProcess, type LogLine } from '../../test/support/controller-process.ts';
import { repoRoot } from '../../cluster/paths.ts';
import { blackhole, blackholeUnsupported } from '../../test/support/blackhole.ts';
import { CuttableProxy } from '../../test/support/proxy.ts';
import { waitFor } from '../../cluster/wait.ts';
import { pino } from 'pino';
import { Client } from './client.ts';
import { EventRecorder } from './events.ts';
import { LeaderElector, type Lease } from './leader.ts';
import { metricsAuthPermissions } from './metrics-auth.ts';
import { eventPermissions, leaderElectionPermissions } from './permissions.ts';
import { RestClient } from './rest.ts';

const cluster = testCluster();
const fixtureScript = join(repoRoot, 'build/test/runtime/fixture.js');
const admin = new RestClient(cluster.adminConfig());
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;
let proxy: CuttableProxy;
/** The fixture's kubeconfig: its own ServiceAccount, reaching the apiserver through the proxy. */
let kubeconfig: string;

const configMaps = () => `/api/v1/namespaces/${namespace}/configmaps`;

async function putSource(name: string, data: Record<string, string>, labels: Record<string, string> = {}): Promise<void> {
  await admin.json({ method: 'PATCH', path: `${configMaps()}/${name}`, query: { fieldManager: 'test', force: true },
    contentType: 'application/apply-patch+yaml', body: { apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, labels: { 'keelson.dev/fixture': 'source', ...labels } }, data } });
}

async function mirrorOf(name: string): Promise<Record<string, string> | undefined> {
  try {
    return (await admin.json<{ data?: Record<string, string> }>({ method: 'GET', path: `${configMaps()}/${name}-mirror` })).data ?? {};
  } catch {
    return undefined;
  }
}

function waitForMirror(name: string, data: Record<string, string> | undefined, timeoutMs = 30_000): Promise<boolean> {
  return waitFor(`${name}-mirror to hold ${JSON.stringify(data)}`, async () =>
    isDeepStrictEqual(await mirrorOf(name), data), { timeoutMs });
}

async function eventsAbout(name: string): Promise<{ reason: string; reportingController: string; series?: { count: number } }[]> {
  return JSON.parse((await cluster.kubectl(['get', 'events.events.k8s.io', '-n', namespace, '--field-selector',
    `regarding.name=${name}`, '-o', 'json'])).stdout).items;
}

async function grant(account: string): Promise<void> {
  const rules = policyRules([...fixturePermissions, ...eventPermissions, ...leaderElectionPermissions]);
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: account, namespace }, rules },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: account, namespace },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace }],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: account } },
  ] }) });
}

async function account(name: string, server?: string): Promise<string> {
  await cluster.kubectl(['create', 'serviceaccount', name, '-n', namespace]);
  return cluster.serviceAccountKubeconfig(namespace, name, join(scratch, `${name}.kubeconfig`), server);
}

function startFixture(config: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ControllerProcess> {
  return ControllerProcess.start(fixtureScript, [`--kubeconfig=${config}`, `--namespace=${namespace}`, ...extra],
    { POD_NAMESPACE: namespace, ...env });
}

const about = (name: string, msg: string) => (line: LogLine) => line.name === name && line.msg === msg;

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'runtime'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-runtime-test-'));
  const server = new URL(cluster.state.server);
  proxy = await CuttableProxy.start({ host: server.hostname, port: Number(server.port) });
  kubeconfig = await account('fixture', proxy.url);
  await grant('fixture');
});
after(async () => {
  await proxy.close();
  admin.close();
  await rm(scratch, { recursive: true, force: true });
  await cleanup();
});

describe('controller runtime', () => {
  it('is not ready until its caches have synced, then ready', async () => {
    const config = await account('late-grant');
    const fixture = await startFixture(config);
    try {
      await fixture.waitForLog('a forbidden list to be retried', (l) => l.msg === 'watch failed; restarting' &&
        String(l.err).includes('forbidden'));
      const { status, body } = await fixture.readyzAnswer();
      assert.equal(status, 503);
      assert.match(body, new RegExp(`configmaps in ${namespace}: .*forbidden`));
      await grant('late-grant');
      await waitFor('/readyz to answer 200', async () => (await fixture.readyz()) === 200, { timeoutMs: 30_000 });
    } finally {
      await fixture.stop();
    }
    assert.equal((await fixture.exited).code, 0);
  });

  describe('with one controller process', () => {
    let fixture: ControllerProcess;
    before(async () => {
      fixture = await startFixture(kubeconfig, [], { FIXTURE_RECONCILE_TIMEOUT_MS: '5000' });
      await waitFor('the fixture to be ready', async () => (await fixture.readyz().catch(() => 0)) === 200);
    });
    after(() => fixture.stop());

    it('coalesces a burst of updates into far fewer reconciles, and the last state wins', async () => {
      await putSource('burst', { v: '0', sleepMs: '50' });
      await waitForMirror('burst', { v: '0', sleepMs: '50' });
      const before = fixture.logs.filter(about('burst', 'reconcile started')).length;
      const updates = 200;
      for (let v = 1; v <= updates; v++) await putSource('burst', { v: String(v), sleepMs: '50' });
      await waitForMirror('burst', { v: String(updates), sleepMs: '50' });
      const reconciles = fixture.logs.filter(about('burst', 'reconcile started')).length - before;
      assert.ok(reconciles >= 1 && reconciles < updates / 4, `${reconciles} reconciles for ${updates} updates`);
    });

    it('backs off exponentially while a reconcile fails, and recovers when the error goes away', async () => {
      const retriesBefore = await fixture.metric('workqueue_retries_total', { name: 'mirror' });
      await putSource('flaky', { fail: 'not yet' });
      await waitFor('eight failed attempts', () => fixture.logs.filter(about('flaky', 'reconcile failed; retrying with backoff')).length >= 8,
        { timeoutMs: 30_000 });
      const starts = fixture.logs.filter(about('flaky', 'reconcile started')).map((l) => Date.parse(l.time));
      const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
      // The queue waits 5 ms * 2^n before attempt n+1; timers never fire early, so load can only widen the gaps.
      for (const n of [3, 4, 5, 6]) {
        assert.ok(gaps[n]! >= 0.9 * 5 * 2 ** n, `attempt ${n + 1} came ${gaps[n]} ms after the one before: ${gaps.join(', ')} ms`);
      }
      assert.ok(await fixture.metric('workqueue_retries_total', { name: 'mirror' }) >= retriesBefore + 8);
      assert.ok(await fixture.metric('controller_runtime_reconcile_errors_total', { controller: 'mirror' }) >= 8);
      await putSource('flaky', { fixed: 'yes' });
      await waitForMirror('flaky', { fixed: 'yes' });
    });

    it('aborts a reconcile past its deadline and retries it with backoff', async () => {
      await putSource('endless', { sleepMs: '600000' });
      await waitFor('/metrics to show the reconcile running for 2 s', async () =>
        await fixture.metric('workqueue_longest_running_processor_seconds', { name: 'mirror' }) >= 2 &&
        await fixture.metric('workqueue_unfinished_work_seconds', { name: 'mirror' }) >= 2);
      const cut = await fixture.waitForLog('the deadline to cut the reconcile',
        (l) => l.name === 'endless' && l.msg === 'reconcile passed its deadline; retrying with backoff', { timeoutMs: 20_000 });
      const ended = fixture.logs.find(about('endless', 'reconcile ended'))!;
      assert.equal(ended.aborted, true);
      const started = fixture.logs.find(about('endless', 'reconcile started'))!;
      const took = Date.parse(cut.time) - Date.parse(started.time);
      assert.ok(took >= 5_000 && took < 8_000, `cut after ${took} ms, for a 5 s deadline`);
      await fixture.waitForLog('a retry', (l) => l.name === 'endless' && l.msg === 'reconcile started' && l !== started);
      await cluster.kubectl(['delete', 'configmap', 'endless', '-n', namespace]);
    });

    it('removes from the live object a field the desired object no longer sets', async () => {
      await putSource('shrink', { kept: '1', dropped: '2' });
      await waitForMirror('shrink', { kept: '1', dropped: '2' });
      await putSource('shrink', { kept: '1' });
      await waitForMirror('shrink', { kept: '1' });
    });

    it('refuses an operator\'s change to a cached object', async () => {
      await putSource('mutable', { mutate: 'yes' });
      const refused = await fixture.waitForLog('the change to be refused', about('mutable', 'the cached source refused a change'));
      assert.match(String(refused.err), /read only|read-only|not extensible/);
      await waitForMirror('mutable', { mutate: 'yes' });
    });

    it('makes no API write when reconciling an object that needs nothing', async () => {
      await putSource('steady', { v: '1' });
      await waitForMirror('steady', { v: '1' });
      // A reconcile still finishing, or its Event still queued, must not count here.
      await waitFor('every reconcile to have returned', async () =>
        await fixture.metric('controller_runtime_active_workers', { controller: 'mirror' }) === 0 &&
        await fixture.metric('workqueue_depth', { name: 'mirror' }) === 0);
      await waitFor('the Mirrored Event written', async () => (await eventsAbout('steady')).some((e) => e.reason === 'Mirrored'));
      const writes = async () => (await Promise.all(['create', 'update', 'patch', 'delete'].map((verb) =>
        fixture.metric('keelson_client_requests_total', { verb })))).reduce((a, b) => a + b, 0);
      const before = await writes();
      await cluster.kubectl(['annotate', 'configmap', 'steady', '-n', namespace, 'touched=yes']);
      const rv = JSON.parse((await cluster.kubectl(['get', 'configmap', 'steady', '-n', namespace, '-o', 'json'])).stdout)
        .metadata.resourceVersion;
      await fixture.waitForLog('the touched source to be reconciled',
        (l) => l.name === 'steady' && l.msg === 'reconciled' && l.resourceVersion === rv);
      assert.equal(await writes(), before);
    });

    it('runs a finalizer\'s cleanup before the object goes, then lets it go', async () => {
      await putSource('final', { finalizer: 'yes' });
      await waitForMirror('final', { finalizer: 'yes' });
      const source = JSON.parse((await cluster.kubectl(['get', 'configmap', 'final', '-n', namespace, '-o', 'json'])).stdout);
      assert.deepEqual(source.metadata.finalizers, ['keelson.dev/fixture']);
      await cluster.kubectl(['delete', 'configmap', 'final', '-n', namespace, '--wait=false']);
      await fixture.waitForLog('the cleanup', about('final', 'cleaned up'));
      await waitFor('the source to be gone', async () => (await cluster.kubectl(['get', 'configmap', 'final', '-n', namespace],
        { allowFailure: true })).code !== 0);
      assert.equal(await mirrorOf('final'), undefined);
    });

    it('folds repeats of an Event into one series', async () => {
      for (const v of ['1', '2', '3']) {
        await putSource('chatty', { v });
        await waitForMirror('chatty', { v });
      }
      // At least three: a reconcile that runs again before the cache shows its own write applies once more, and says so.
      const events = await waitFor('one Mirrored Event counted three times or more', async () => {
        const items = await eventsAbout('chatty');
        return items.length === 1 && (items[0]?.series?.count ?? 1) >= 3 ? items : undefined;
      });
      assert.equal(events[0]!.reason, 'Mirrored');
      assert.equal(events[0]!.reportingController, 'keelson.dev/mirror');
    });

    it('serves controller-runtime metrics with sensible values', async () => {
      const text = await fixture.metrics();
      const value = (name: string, labels: Record<string, string> = {}) => {
        assert.match(text, new RegExp(`^${name}[{ ]`, 'm'), `${name} is missing`);
        return Number(/\S+$/.exec(text.split('\n').find((l) => l.startsWith(name) &&
          Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)))!)![0]);
      };
      assert.ok(value('controller_runtime_reconcile_total', { controller: 'mirror', result: 'success' }) > 0);
      assert.ok(value('controller_runtime_reconcile_errors_total', { controller: 'mirror' }) > 0);
      assert.ok(value('controller_runtime_reconcile_time_seconds_count', { controller: 'mirror' }) > 0);
      assert.ok(value('controller_runtime_active_workers', { controller: 'mirror' }) <= 2);
      assert.ok(value('workqueue_depth', { name: 'mirror' }) >= 0);
      assert.ok(value('workqueue_adds_total', { name: 'mirror' }) > 0);
      assert.ok(value('workqueue_retries_total', { name: 'mirror' }) > 0);
      assert.ok(value('workqueue_queue_duration_seconds_count', { name: 'mirror' }) > 0);
      assert.ok(value('workqueue_work_duration_seconds_count', { name: 'mirror' }) > 0);
      assert.ok(value('keelson_watch_seconds_since_last_event', { resource: `configmaps in ${namespace}` }) < 600);
      assert.match(text, /^process_resident_memory_bytes \d+/m);
    });

    it('loses no change while its watch is cut mid-stream', async () => {
      await putSource('cut-changed', { v: '1' });
      await waitForMirror('cut-changed', { v: '1' });
      const restarts = await fixture.metric('keelson_watch_restarts_total');
      proxy.partition();
      await putSource('cut-changed', { v: '2' });
      for (const name of ['cut-a', 'cut-b', 'cut-c']) await putSource(name, { created: 'while cut' });
      proxy.resume();
      await waitForMirror('cut-changed', { v: '2' });
      for (const name of ['cut-a', 'cut-b', 'cut-c']) await waitForMirror(name, { created: 'while cut' });
      assert.ok(await fixture.metric('keelson_watch_restarts_total') > restarts);
    });

    it('relists after 410 Gone with no missed and no phantom events', async () => {
      for (const name of ['gone-steady', 'gone-changed', 'gone-deleted']) {
        await putSource(name, { v: '1' });
        await waitForMirror(name, { v: '1' });
      }
      const gone = await fixture.metric('keelson_watch_restarts_total', { reason: 'gone' });
      proxy.partition();
      const from = fixture.logs.length;
      await putSource('gone-changed', { v: '2' });
      await putSource('gone-new', { v: '1' });
      await admin.json({ method: 'DELETE', path: `${configMaps()}/gone-deleted` });
      await cluster.compactEtcd();
      proxy.resume();
      await waitForMirror('gone-changed', { v: '2' });
      await waitForMirror('gone-new', { v: '1' });
      await fixture.waitForLog('the deleted source to be reconciled as gone',
        (l) => l.name === 'gone-deleted' && l.msg === 'not a source' && l.present === false);
      assert.ok(await fixture.metric('keelson_watch_restarts_total', { reason: 'gone' }) > gone, 'no 410 relist happened');
      const phantom = fixture.logs.slice(from).filter(about('gone-steady', 'reconcile started'));
      assert.deepEqual(phantom, [], 'an unchanged object was reconciled after the relist');
    });
  });

  it('records an Event without holding its caller while the apiserver does not answer, then writes it', async () => {
    const server = new URL(cluster.state.server);
    const slow = await CuttableProxy.start({ host: server.hostname, port: Number(server.port) });
    const config = new KubeConfig();
    config.loadFromFile(await account('recorder', slow.url));
    await grant('recorder');
    const rest = new RestClient(config);
    const recorder = new EventRecorder(new Client(rest, eventPermissions, 'test'), 'recorder', 'test', pino({ level: 'silent' }));
    const regarding = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'recorded', namespace, uid: randomUUID() } };
    try {
      slow.freeze();
      const returned = await Promise.race([Promise.resolve(recorder.record(regarding, 'Normal', 'Queued',
        'written once the apiserver answers')).then(() => true), sleep(3_000).then(() => false)]);
      assert.ok(returned, 'the caller was held until the Event was written');
      slow.thaw();
      await recorder.flush(30_000);
      assert.deepEqual((await eventsAbout('recorded')).map((e) => e.reason), ['Queued']);
    } finally {
      rest.close();
      await slow.close();
    }
  });

  it('leaves a quiet watch open and unwarned until the apiserver ends it', async () => {
    // ConfigMaps here are served from etcd, with no bookmarks at all, as any type without a watch cache is.
    const fixture = await startFixture(kubeconfig, [], { KEELSON_WATCH_SILENCE_TIMEOUT_MS: '3000' });
    try {
      await waitFor('the fixture to be ready', async () => (await fixture.readyz().catch(() => 0)) === 200);
      await waitFor('the watch to stay open, quiet, for three times its silence limit', async () =>
        await fixture.metric('keelson_watch_seconds_since_last_event') > 9, { timeoutMs: 30_000 });
      assert.equal(await fixture.metric('keelson_watch_restarts_total'), 0, fixture.describe());
      assert.deepEqual(fixture.logs.filter((l) => l.level === 'warn' || l.level === 'error'), [],
        'a quiet watch was warned about');
      await putSource('after-the-quiet', { heard: 'yes' });
      await waitForMirror('after-the-quiet', { heard: 'yes' });
    } finally {
      await fixture.stop();
    }
  });

  it('restarts a watch still silent past its own end, and loses nothing', async () => {
    const fixture = await startFixture(kubeconfig, [], { KEELSON_WATCH_SILENCE_TIMEOUT_MS: '3000',
      KEELSON_WATCH_TIMEOUT_SECONDS: '20' });
    try {
      await waitFor('the fixture to be ready', async () => (await fixture.readyz().catch(() => 0)) === 200);
      // A mirror made proves a watch open and delivering; it has most of its 20 s to run when the proxy freezes.
      await putSource('before-the-freeze', { said: 'first' });
      await waitForMirror('before-the-freeze', { said: 'first' });
      const silent = await fixture.metric('keelson_watch_restarts_total', { reason: 'silent' });
      proxy.freeze();
      await putSource('quiet', { said: 'while frozen' });
      await waitFor('the watchdog to restart the silent watch', async () =>
        await fixture.metric('keelson_watch_restarts_total', { reason: 'silent' }) > silent, { timeoutMs: 45_000 });
      proxy.thaw();
      await waitForMirror('quiet', { said: 'while frozen' });
    } finally {
      proxy.thaw();
      await fixture.stop();
    }
  });

  it('finds a watch whose peer is gone by TCP keepalive, well within its silence limit, and loses nothing',
    { skip: blackholeUnsupported() }, async () => {
      const fixture = await startFixture(kubeconfig);
      try {
        await waitFor('the fixture to be ready', async () => (await fixture.readyz().catch(() => 0)) === 200);
        const from = fixture.logs.length;
        const cut = Date.now();
        const partition = await blackhole(proxy.port);
        try {
          await putSource('across-the-partition', { said: 'while the peer was gone' });
          const failed = await fixture.waitForLog('the watch to fail on its silent peer', (l) =>
            l.msg === 'watch failed; restarting' && Date.parse(l.time) >= cut, { timeoutMs: 60_000 });
          const foundMs = Date.parse(failed.time) - cut;
          assert.ok(foundMs < 45_000, `the gone peer was found after ${foundMs} ms`);
          assert.match(String(failed.err), /ETIMEDOUT/, 'the log does not say the connection timed out');
          assert.deepEqual(fixture.logs.slice(from).filter((l) => String(l.msg).includes('silence')), []);
        } finally {
          await partition.lift();
        }
        await waitForMirror('across-the-partition', { said: 'while the peer was gone' }, 90_000);
      } finally {
        await fixture.stop();
      }
    });

  it('backs off from a watch endpoint that closes at once with nothing said', async () => {
    // The apiserver ends a watch asked to last -1 s as soon as it opens, with a clean end of stream. Timed from the
    // controller's own log, per informer: how long start-up took does not matter, only the spacing of its retries.
    const fixture = await startFixture(kubeconfig, [], { KEELSON_WATCH_TIMEOUT_SECONDS: '-1' });
    try {
      const closures = await waitFor('one informer\'s watch closed at once five times', () => {
        const byInformer = Map.groupBy(fixture.logs.filter((l) => l.msg.startsWith('watch closed at once')),
          (l) => String(l.informer));
        return [...byInformer.values()].find((lines) => lines.length >= 5)?.slice(0, 5);
      }, { timeoutMs: 30_000 });
      const times = closures.map((l) => Date.parse(l.time));
      const gaps = times.slice(1).map((t, i) => t - times[i]!);
      const perSecond = 4 / ((times[4]! - times[0]!) / 1000);
      assert.ok(perSecond < 3, `${perSecond.toFixed(1)} watch requests a second`);
      assert.ok(gaps.every((gap, i) => i === 0 || gap > gaps[i - 1]!), `the waits do not grow: ${gaps.join(', ')} ms`);
    } finally {
      await fixture.stop();
    }
  });

  it('on SIGTERM aborts the reconciles in flight, starts none of the 200 queued, and exits 0', async () => {
    const batch = Array.from({ length: 200 }, (_, i) => `queued-${i}`);
    const fixture = await startFixture(kubeconfig);
    try {
      await waitFor('the fixture to be ready', async () => (await fixture.readyz().catch(() => 0)) === 200);
      await Promise.all(batch.map((name) => putSource(name, { sleepMs: '60000' }, { 'keelson.dev/batch': 'sigterm' })));
      await waitFor('both workers busy', () => fixture.logs.filter((l) => l.msg === 'reconcile started').length >= 2);
      fixture.signal('SIGTERM');
      const { code } = await fixture.exited;
      assert.equal(code, 0, fixture.describe());
      const stopping = fixture.logs.findIndex((l) => l.msg === 'stopping');
      const startedAfter = fixture.logs.slice(stopping).filter((l) => l.msg === 'reconcile started');
      assert.deepEqual(startedAfter, [], 'reconciles started after SIGTERM');
      const ended = fixture.logs.slice(stopping).filter((l) => l.msg === 'reconcile ended');
      assert.equal(ended.length, 2, fixture.describe());
      assert.ok(ended.every((l) => l.aborted === true), 'a reconcile in flight did not see its signal abort');
    } finally {
      await fixture.stop();
      await cluster.kubectl(['delete', 'configmap', '-n', namespace, '-l', 'keelson.dev/batch=sigterm', '--wait=false']);
    }
  });

  it('stops reconciling once it cannot renew, before a follower takes over', async () => {
    const direct = await account('fixture-direct');
    await grant('fixture-direct');
    const leader = await startFixture(kubeconfig, ['--leader-elect'], { POD_NAME: 'fixture-frozen' });
    let follower: ControllerProcess | undefined;
    try {
      await leader.waitForLog('the proxied one to lead', (l) => l.msg === 'became leader', { timeoutMs: 30_000 });
      follower = await startFixture(direct, ['--leader-elect'], { POD_NAME: 'fixture-direct' });
      await waitFor('the follower to sync', async () => (await follower!.readyz().catch(() => 0)) === 200);
      await putSource('busy', { requeueMs: '200' });
      await waitFor('the leader to reconcile again and again',
        () => leader.logs.filter(about('busy', 'reconcile started')).length >= 3);
      proxy.freeze();
      const took = await follower!.waitForLog('the follower to lead', (l) => l.msg === 'became leader', { timeoutMs: 40_000 });
      const first = await follower!.waitForLog('the follower to reconcile', about('busy', 'reconcile started'));
      const lost = leader.logs.find((l) => l.msg.startsWith('lost leadership'));
      assert.ok(lost && Date.parse(lost.time) < Date.parse(took.time), `the leader had not stepped down when the ` +
        `follower led at ${took.time}:\n${leader.describe()}`);
      const last = leader.logs.filter(about('busy', 'reconcile ended')).at(-1)!;
      assert.ok(Date.parse(last.time) < Date.parse(first.time),
        `the old leader reconciled until ${last.time}, the new one from ${first.time}`);
      assert.ok(!leader.logs.some((l) => l.msg === 'reconcile started' && Date.parse(l.time) > Date.parse(lost.time)),
        'a reconcile started after leadership was lost');
    } finally {
      proxy.thaw();
      await Promise.all([leader.stop(), follower?.stop()]);
      await cluster.kubectl(['delete', 'configmap', 'busy', '-n', namespace, '--ignore-not-found']);
    }
  });

  it('keeps renewing the lease through a drain longer than the lease, and only then hands it over', async () => {
    const start = (name: string) => startFixture(kubeconfig, ['--leader-elect'], { POD_NAME: name });
    const leader = await start('fixture-draining');
    await leader.waitForLog('the first to lead', (l) => l.msg === 'became leader', { timeoutMs: 30_000 });
    const follower = await start('fixture-waiting');
    try {
      // A reconcile that ignores its signal: the drain lasts until it returns.
      await putSource('long-drain', { stubbornMs: '20000' });
      await leader.waitForLog('the 20 s reconcile to start', about('long-drain', 'reconcile started'));
      leader.signal('SIGTERM');
      assert.equal((await leader.exited).code, 0, leader.describe());
      const released = leader.logs.find((l) => l.msg === 'released the lease');
      assert.ok(released, `the lease was not released:\n${leader.describe()}`);
      const took = await follower!.waitForLog('the follower to lead', (l) => l.msg === 'became leader', { timeoutMs: 30_000 });
      assert.ok(Date.parse(took.time) >= Date.parse(released.time),
        `the follower led at ${took.time}, while the leader still drained (released at ${released.time})`);
    } finally {
      await Promise.all([leader.stop(), follower.stop()]);
      // Every later leader would reconcile it, for 20 s, at start.
      await cluster.kubectl(['delete', 'configmap', 'long-drain', '-n', namespace, '--ignore-not-found']);
    }
  });

  it('serves /metrics over HTTPS only to a token whose user may get /metrics', async () => {
    const reader = `metrics-reader-${namespace}`;
    await cluster.kubectl(['create', 'serviceaccount', 'scraper', '-n', namespace]);
    await cluster.kubectl(['create', 'serviceaccount', 'stranger', '-n', namespace]);
    await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      ...[[reader, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }], 'scraper'],
        [`${reader}-auth`, policyRules(metricsAuthPermissions), 'fixture-secure']].flatMap(([name, rules, account]) => [
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
          subjects: [{ kind: 'ServiceAccount', name: account, namespace }] }]),
    ] }) });
    const secure = await account('fixture-secure');
    await grant('fixture-secure');
    const fixture = await startFixture(secure, ['--metrics-secure']);
    try {
      const port = await fixture.port('metrics');
      const scrape = (token?: string) => new Promise<{ status: number; body: string; san: string; challenge?: string }>((resolve, reject) => {
        const req = httpsGet({ host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false,
          headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
          const san = (res.socket as TLSSocket).getPeerX509Certificate()?.subjectAltName ?? '';
          let body = '';
          res.on('data', (chunk) => (body += chunk)).on('end', () => resolve({ status: res.statusCode!, body, san,
            challenge: res.headers['www-authenticate'] }));
        });
        req.on('error', reject);
      });
      const token = async (name: string) => (await cluster.kubectl(['create', 'token', name, '-n', namespace])).stdout.trim();
      const none = await scrape();
      assert.deepEqual([none.status, none.body, none.challenge], [401, 'a bearer token is required\n', 'Bearer']);
      assert.match(none.san, /IP Address:127\.0\.0\.1/);
      assert.equal((await scrape('not-a-token')).status, 401);
      const stranger = await scrape(await token('stranger'));
      assert.deepEqual([stranger.status, stranger.body],
        [403, `system:serviceaccount:${namespace}:stranger may not get /metrics\n`]);
      const allowed = await scrape(await token('scraper'));
      assert.equal(allowed.status, 200);
      assert.match(allowed.body, /^controller_runtime_reconcile_total/m);
      assert.equal(await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.status, () => 'refused'), 'refused',
        'plain HTTP was served');
    } finally {
      await fixture.stop();
      await cluster.kubectl(['delete', 'clusterrole,clusterrolebinding', reader, `${reader}-auth`, '--ignore-not-found']);
    }
  });

  it('releases its lease though someone wrote it since its last renewal', async () => {
    const name = 'release-after-write';
    const elector = new LeaderElector(new Client(admin, leaderElectionPermissions, 'test'), { namespace, name,
      identity: 'releaser', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 },
    pino({ level: 'silent' }));
    await elector.acquire(AbortSignal.timeout(10_000));
    // What a renewal abandoned at shutdown does when it lands after all: the Lease changes under the leader.
    await cluster.kubectl(['annotate', 'lease', name, '-n', namespace, 'keelson.dev/touched=yes']);
    await elector.release();
    const lease = await admin.json<Lease>({ method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${name}` });
    assert.equal(lease.spec?.holderIdentity, undefined, `still held: ${JSON.stringify(lease.spec)}`);
  });

  it('keeps trying to acquire the lease through apiserver errors, and leads once they pass', async () => {
    proxy.partition();
    const candidate = await startFixture(kubeconfig, ['--leader-elect'], { POD_NAME: 'fixture-patient' });
    try {
      await candidate.waitForLog('a failed attempt, then another', (l) => l.msg === 'could not acquire the lease; retrying' &&
        candidate.logs.filter((m) => m.msg === l.msg).length >= 2, { timeoutMs: 20_000 });
      proxy.resume();
      await waitFor('it to lead', async () => (await candidate.metric('leader_election_master_status')) === 1,
        { timeoutMs: 30_000 });
    } finally {
      proxy.resume();
      await candidate.stop();
    }
  });

  it('elects one leader; another takes over within the lease when it dies, at once when it stops', async () => {
    const leaderFlags = ['--leader-elect'];
    const start = (name: string) => startFixture(kubeconfig, leaderFlags, { POD_NAME: name });
    const [a, b] = await Promise.all([start('fixture-a'), start('fixture-b')]);
    const running = [a, b];
    try {
      const leaderOf = async (candidates: ControllerProcess[]) => waitFor('one leader', async () => {
        const status = await Promise.all(candidates.map((c) => c.metric('leader_election_master_status').catch(() => -1)));
        return status.filter((s) => s === 1).length === 1 ? candidates[status.indexOf(1)] : undefined;
      }, { timeoutMs: 30_000 });
      const first = await leaderOf([a, b]);
      const second = first === a ? b : a;
      await putSource('led-1', { v: '1' });
      await waitForMirror('led-1', { v: '1' });
      assert.deepEqual(second.logs.filter((l) => l.msg === 'reconcile started'), [], 'the follower reconciled');

      first.signal('SIGKILL');
      await first.exited;
      // As in client-go, a follower counts the lease from when it saw the last renewal (no trust in other clocks)
      // and looks every retry period (2 s, stretched by up to 20% of jitter): it sees that renewal within one
      // period and takes over within another once the 15 s lease is over. Both times are the Lease's own, written
      // by processes on this host, so the test's polling adds nothing to the figure.
      const leaseNow = async () => JSON.parse((await cluster.kubectl(['get', 'lease', 'keelson-controller-leader',
        '-n', namespace, '-o', 'json'])).stdout).spec;
      const lastRenewal = Date.parse((await leaseNow()).renewTime);
      assert.equal(await leaderOf([second]), second);
      const takeover = Date.parse((await leaseNow()).acquireTime) - lastRenewal;
      assert.ok(takeover <= 15_000 + 2 * 2_400 + 1_000, `took ${takeover} ms after the last renewal to take over a 15 s lease`);
      await putSource('led-2', { v: '1' });
      await waitForMirror('led-2', { v: '1' });

      const third = await start('fixture-c');
      running.push(third);
      await waitFor('the third to sync', async () => (await third.readyz().catch(() => 0)) === 200);
      second.signal('SIGTERM');
      const stoppedAt = Date.now();
      assert.equal((await second.exited).code, 0);
      assert.equal(await leaderOf([third]), third);
      const handover = Date.now() - stoppedAt;
      assert.ok(handover < 6_000, `took ${handover} ms to take over a released lease`);
    } finally {
      await Promise.all(running.map((p) => p.stop()));
    }
  });
});
