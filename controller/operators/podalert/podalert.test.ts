import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { criLog, serveLogs } from '../../../cluster/kwok.ts';
import { refusedByPolicy } from './destination.ts';
import { installSimulationStages, simulateLabel } from '../../../cluster/stages.ts';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { inNamespace } from '../../../test/support/namespace.ts';
import type { ControllerProcess } from '../../../test/support/controller-process.ts';
import { installCrds, startOperator } from '../../../test/support/operator.ts';
import { startAlertmanager, startGate, type Alertmanager } from '../../../test/support/alertmanager.ts';
import { pagerDutyViolations, slackViolations, teamsViolations } from '../../../test/support/receivers.ts';
import { freePort } from '../../../cluster/ports.ts';
import { waitForPod, withoutRealNode } from '../../../test/support/real-node.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { toolsImage } from '../../../images/recipes.ts';

const cluster = testCluster();
const { kubectl, json, apply, events } = inNamespace(cluster, () => namespace);
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;
let controller: ControllerProcess;
let hook: Server;
let hookUrl: string;
let realCleanup: (() => Promise<void>) | undefined;
const received: any[] = [];
/** What Alertmanager sent its receiver. */
const notified: any[] = [];
/** What PodAlerts of each webhook format posted. */
const formatted: { format: string; body: any }[] = [];
/** Messages about these pods are refused with HTTP 500 this many more times. */
const failFor = new Map<string, number>();
/** When each POST about a pod arrived, delivered or not. */
const attemptsAt = new Map<string, number[]>();
/** POSTs per PodAlert, delivered or not. */
const postsFrom = new Map<string, number>();
/** A PodAlert to change (a new resourceVersion) while the first message about it is being received. */
let changeWhileReceiving: string | undefined;

/** Where the tests' Alertmanagers notify: into `notified`. */
const alertmanagerReceiver = () => `http://127.0.0.1:${(hook.address() as { port: number }).port}/alertmanager`;

const messagesFor = (podAlert: string) => received.filter((m) => m.podAlert?.name === podAlert);

function podAlert(name: string, spec: object): Promise<unknown> {
  return apply({ apiVersion: 'keelson.dev/v1alpha1',
    kind: 'PodAlert', metadata: { name, namespace }, spec: { alerts: { checkRunningPods: true }, ...spec } });
}

function statusOf(name: string, ok: (status: any) => boolean, what: string): Promise<any> {
  return waitFor(`PodAlert ${name}: ${what}`, async () => {
    const status = (await json('pa', name)).status;
    return status && ok(status) ? status : undefined;
  }, { timeoutMs: 60_000 });
}

/** A Deployment of `replicas` simulated pods in `state`, labelled app=<name>; and a PodAlert on them. */
async function simulatedDeployment(name: string, replicas: number, state: string, gracePeriodSeconds: number): Promise<void> {
  await apply({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace }, spec: { replicas,
    selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name, [simulateLabel]: state } },
      spec: { containers: [{ name: 'app', image: 'registry.example/web:1' }] } } } });
  await podAlert(name, { gracePeriodSeconds, logLines: 0, selector: { matchLabels: { app: name } },
    webhook: { secretRef: { name: 'alert-hook', key: 'url' } } });
}

/** Makes a pod's Ready condition False since `at`, as a crash does. */
const unreadySince = (pod: string, at: string) => kubectl('patch', 'pod', pod, '--subresource=status', '--type=strategic',
  '-p', JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: at }] } }));

const simulated = (pod: string, state: string, image = 'registry.example/app:1', team = 'shop') =>
  kubectl('run', pod, `--image=${image}`, `--labels=${simulateLabel}=${state},team=${team}`);

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'podalert'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-podalert-test-'));
  hook = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk)).on('end', async () => {
      const message = JSON.parse(body);
      if (req.url === '/alertmanager') {
        notified.push(message);
        res.writeHead(200).end();
        return;
      }
      if (req.url?.startsWith('/formats/')) {
        formatted.push({ format: req.url.slice('/formats/'.length), body: message });
        res.writeHead(200).end();
        return;
      }
      if (message.podAlert?.name === changeWhileReceiving) {
        changeWhileReceiving = undefined;
        await kubectl('annotate', 'pa', message.podAlert.name, 'changed=while-receiving');
      }
      attemptsAt.set(message.pod, [...(attemptsAt.get(message.pod) ?? []), Date.now()]);
      postsFrom.set(message.podAlert?.name, (postsFrom.get(message.podAlert?.name) ?? 0) + 1);
      const failures = failFor.get(message.pod) ?? 0;
      if (failures > 0) {
        failFor.set(message.pod, failures - 1);
        res.writeHead(500).end();
        return;
      }
      received.push(message);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/services/T000/B000/secret-token`;
  await Promise.all([installCrds(cluster), installSimulationStages(cluster)]);
  await kubectl('create', 'secret', 'generic', 'alert-hook', `--from-literal=url=${hookUrl}`);
  await kubectl('create', 'job', 'finished', '--image=registry.example/batch:1');
  await waitFor('the Job\'s pod to succeed', async () =>
    (await json('pods', '-l', 'job-name=finished')).items.some((p: any) => p.status.phase === 'Succeeded'));
  controller = await startOperator(cluster, namespace, ['podalert'], scratch);
});
after(async () => {
  await controller.stop();
  await realCleanup?.();
  await new Promise((resolve) => hook.close(resolve));
  await rm(scratch, { recursive: true, force: true });
  await cleanup();
});

describe('PodAlert against the real control plane, as its ServiceAccount', () => {
  it('reports unhealthy pods with their reasons and log tails, and not a finished Job', async () => {
    await serveLogs(cluster, { namespace, pod: 'crasher' }, 'crasher', ['restarted', 'waiting'],
      ['starting', 'connecting to db', 'panic: connection refused']);
    await simulated('crasher', 'crash-loop');
    await simulated('puller', 'image-pull-backoff', 'registry.example/missing:1');
    await kubectl('run', 'stuck', '--image=registry.example/app:1', '--labels=team=shop',
      '--overrides', JSON.stringify({ spec: { nodeSelector: { 'kubernetes.io/hostname': 'no-such-node' } } }));
    await podAlert('shop', { gracePeriodSeconds: 0, logLines: 2, webhook: { secretRef: { name: 'alert-hook', key: 'url' } } });

    const status = await statusOf('shop', (s) => s.unhealthyPods === 3 &&
      s.alerts.some((a: any) => a.pod === 'crasher' && a.logTail), 'three unhealthy pods, the crash loop\'s log read');
    const byPod = Object.fromEntries(status.alerts.map((a: any) => [a.pod, a]));
    assert.deepEqual(Object.keys(byPod).sort(), ['crasher', 'puller', 'stuck']);
    assert.equal(byPod.crasher.reason, 'CrashLoopBackOff');
    assert.equal(byPod.crasher.container, 'crasher');
    assert.equal(byPod.crasher.logTail, 'connecting to db\npanic: connection refused\n', JSON.stringify(byPod.crasher));
    assert.deepEqual(byPod.crasher.containers.map((c: any) => [c.name, c.state, c.reason, c.restartCount]),
      [['crasher', 'waiting', 'CrashLoopBackOff', 4]]);
    assert.equal(byPod.puller.reason, 'ImagePullBackOff');
    assert.equal(byPod.puller.phase, 'Pending');
    assert.match(byPod.puller.message, /Back-off pulling image "registry.example\/missing:1"/);
    assert.match(byPod.puller.logError, /^no log: /);
    assert.equal(byPod.stuck.reason, 'Unschedulable');
    assert.equal(byPod.stuck.logTail, undefined);
    assert.ok(!status.alerts.some((a: any) => a.pod.startsWith('finished')), 'a finished Job\'s pod was reported');

    const columns = (await kubectl('get', 'pa', 'shop')).stdout.split('\n');
    assert.match(columns[0]!, /^NAME\s+UNHEALTHY\s+ALERTS\s+CHECKED\s+READY\s+AGE$/);
    // Three pods of their own: three alerts.
    assert.match(columns[1]!, /^shop\s+3\s+3\s+\S+\s+True\s+/);
    const warnings = (await events('shop')).filter((e: any) => e.type === 'Warning' && e.reason === 'Unhealthy');
    assert.equal(warnings.length, 3);
    assert.ok(warnings.some((e: any) => e.note === 'Pod crasher in ' + namespace + ' is unhealthy: CrashLoopBackOff ' +
      '(container crasher, 4 restarts): back-off 1m20s restarting failed container'));
    assert.equal(await controller.metric('keelson_podalert_unhealthy_pods', { namespace, name: 'shop' }), 3);
  });

  it('posts one webhook message per new alert, Slack-compatible, with the URL never shown', async () => {
    const messages = await waitFor('three messages', () => messagesFor('shop').length === 3 ? messagesFor('shop') : undefined);
    assert.deepEqual(messages.map((m) => [m.event, m.pod]).sort(), [['alert', 'crasher'], ['alert', 'puller'], ['alert', 'stuck']]);
    assert.equal(new Set(messages.map((m) => m.id)).size, 3, 'each message has an id of its own');
    for (const m of messages) {
      assert.match(m.text, /^Pod \S+ in \S+ is unhealthy: /);
      assert.equal(m.namespace, namespace);
      assert.ok(m.reason && m.since);
    }
    const status = await statusOf('shop', (s) => s.conditions.some((c: any) => c.type === 'WebhookDelivered' &&
      c.status === 'True'), 'WebhookDelivered=True');
    assert.deepEqual(status.pendingNotifications, []);
    const everything = JSON.stringify({ status, logs: controller.logs, stderr: controller.stderr });
    assert.ok(!everything.includes('secret-token'), 'the webhook URL leaked into status or logs');
  });

  it('resolves an alert when its pod recovers or goes away, once each', async () => {
    await kubectl('label', 'pod', 'crasher', `${simulateLabel}=recovered`, '--overwrite');
    await kubectl('delete', 'pod', 'puller', '--wait=false');
    await statusOf('shop', (s) => s.unhealthyPods === 1 && s.alerts[0].pod === 'stuck', 'only stuck left');
    const resolved = await waitFor('two resolution messages', () => {
      const found = messagesFor('shop').filter((m) => m.event === 'resolved');
      return found.length === 2 ? found : undefined;
    });
    assert.deepEqual(resolved.map((m) => m.text).sort(), [
      `Pod crasher in ${namespace} recovered (was CrashLoopBackOff)`,
      `Pod puller in ${namespace} is gone (was ImagePullBackOff)`]);
    const normal = (await events('shop')).filter((e: any) => e.reason === 'Resolved');
    assert.equal(normal.length, 2);
  });

  it('sends nothing again after a restart, and still sends what is new', async () => {
    await controller.stop();
    const before = messagesFor('shop').length;
    controller = await startOperator(cluster, namespace, ['podalert'], scratch);
    await waitFor('the restarted controller to evaluate', async () =>
      await controller.metric('controller_runtime_reconcile_total', { controller: 'podalert' }).catch(() => 0) >= 1);
    await simulated('late', 'crash-loop');
    await waitFor('the late pod\'s message', () => messagesFor('shop').some((m) => m.pod === 'late'));
    assert.equal(messagesFor('shop').length, before + 1, 'a message was sent again after the restart');
  });

  it('retries a failing webhook with backoff, shown in a condition, and delivers once', async () => {
    failFor.set('flaky', 2);
    await simulated('flaky', 'crash-loop');
    const failing = await statusOf('shop', (s) => s.conditions.some((c: any) => c.type === 'WebhookDelivered' &&
      c.reason === 'DeliveryFailed'), 'WebhookDelivered=False DeliveryFailed');
    assert.match(failing.conditions.find((c: any) => c.type === 'WebhookDelivered').message,
      /^the webhook answered HTTP 500; attempt [12], retrying in [24]s$/);
    assert.deepEqual(failing.pendingNotifications.map((n: any) => n.pod), ['flaky']);
    await statusOf('shop', (s) => s.conditions.some((c: any) => c.type === 'WebhookDelivered' && c.status === 'True'),
      'delivered after retries');
    assert.equal(messagesFor('shop').filter((m) => m.pod === 'flaky').length, 1);
    const [first, second, third] = attemptsAt.get('flaky')!;
    assert.equal(attemptsAt.get('flaky')!.length, 3);
    assert.ok(second! - first! >= 1_900 && third! - second! >= 3_900, `retries were not spaced 2 s then 4 s apart: ` +
      `${second! - first!} ms, ${third! - second!} ms`);
  });

  it('holds back a repeat while its first message still waits, without reconciling in a loop', async () => {
    // The webhook refuses every message about this pod: the first stays in the outbox, retried with backoff, past the
    // repeatInterval. A repeat then waits for it, and the PodAlert reconciles on the backoff, not at once and again.
    failFor.set('looper', 1_000);
    await simulated('looper', 'crash-loop', undefined, 'looper');
    await podAlert('looper', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { team: 'looper' } },
      webhook: { secretRef: { name: 'alert-hook', key: 'url' }, repeatInterval: '1m' } });
    // 2 + 4 + 8 + 16 + 32 s: the sixth attempt comes past the minute.
    await waitFor('the first message failed for over a minute', async () =>
      ((await json('pa', 'looper')).status?.pendingNotifications?.[0]?.attempts ?? 0) >= 6, { timeoutMs: 120_000 });
    const reconciles = () => controller.metric('controller_runtime_reconcile_total', { controller: 'podalert' });
    const [before, since] = [await reconciles(), Date.now()];
    await waitFor('ten seconds of reconciles counted', () => Date.now() - since >= 10_000, { timeoutMs: 15_000 });
    const count = await reconciles() - before;
    assert.ok(count < 60, `${count} reconciles in ten seconds: a held-back repeat requeues at once`);
    const { status } = await json('pa', 'looper');
    assert.deepEqual(status.pendingNotifications.map((n: any) => n.event), ['alert']);
    failFor.delete('looper');
    await kubectl('delete', 'pa', 'looper');
    await kubectl('delete', 'pod', 'looper', '--wait=false');
  });

  it('repeats at most the one message whose record a conflict lost, with the same id', async () => {
    changeWhileReceiving = 'racy';
    await podAlert('racy', { gracePeriodSeconds: 0, selector: { matchLabels: { team: 'shop' } },
      webhook: { secretRef: { name: 'alert-hook', key: 'url' } } });
    const status = await statusOf('racy', (s) => s.unhealthyPods > 0 && s.pendingNotifications?.length === 0 &&
      s.conditions?.some((c: any) => c.type === 'WebhookDelivered' && c.status === 'True'), 'every message delivered');
    assert.equal(changeWhileReceiving, undefined, 'the PodAlert was not changed during a delivery');
    const ids = messagesFor('racy').map((m) => m.id);
    assert.equal(new Set(ids).size, status.unhealthyPods);
    assert.ok(ids.length <= status.unhealthyPods + 1, `${ids.length} messages for ${status.unhealthyPods} alerts: ${ids}`);
  });

  it('reports a missing Secret as a condition and keeps working', async () => {
    await podAlert('no-secret', { gracePeriodSeconds: 0, webhook: { secretRef: { name: 'nowhere', key: 'url' } } });
    const status = await statusOf('no-secret', (s) => s.conditions?.some((c: any) => c.type === 'WebhookDelivered' &&
      c.reason === 'SecretNotFound'), 'SecretNotFound');
    assert.match(status.conditions.find((c: any) => c.type === 'WebhookDelivered').message,
      /^Secret nowhere not found; attempt \d+, retrying in \d+s$/);
    assert.ok(status.unhealthyPods >= 3);
    assert.equal(controller.logs.filter((l) => l.level === 'fatal').length, 0);
  });

  it('reports a missing webhook Secret at once, with no alert to send', async () => {
    await podAlert('quiet', { selector: { matchLabels: { team: 'nobody' } }, webhook: { secretRef: { name: 'absent', key: 'url' } } });
    const status = await statusOf('quiet', (s) => s.conditions?.some((c: any) => c.type === 'WebhookDelivered'),
      'WebhookDelivered reported');
    const delivered = status.conditions.find((c: any) => c.type === 'WebhookDelivered');
    assert.deepEqual([delivered.status, delivered.reason, delivered.message], ['False', 'SecretNotFound', 'Secret absent not found']);
    assert.equal(status.unhealthyPods, 0);
  });

  it('refuses loopback, private, in-cluster and metadata destinations by default, saying only "refused by policy"', async () => {
    await controller.stop();
    // public is what the install runs with when the flag is not set.
    controller = await startOperator(cluster, namespace, ['podalert'], scratch,
      { extraArgs: ['--webhook-allowed-destinations=public'] });
    // Each is refused before any connection: nothing is sent anywhere, the test's own listener included.
    const destinations = { loopback: hookUrl, private: 'http://10.1.2.3/hook', service:
      `http://keelson-controller-metrics.${namespace}.svc:8080/`, aws: 'http://[fd00:ec2::254]/latest/meta-data/',
      alibaba: 'http://100.100.100.200/latest/meta-data/' };
    try {
      for (const [name, url] of Object.entries(destinations)) {
        await kubectl('create', 'secret', 'generic', `to-${name}`, `--from-literal=url=${url}`);
        await podAlert(`to-${name}`, { gracePeriodSeconds: 0, selector: { matchLabels: { team: 'shop' } },
          webhook: { secretRef: { name: `to-${name}`, key: 'url' } } });
      }
      for (const name of Object.keys(destinations)) {
        const status = await statusOf(`to-${name}`, (s) => s.conditions?.some((c: any) => c.type === 'WebhookDelivered'),
          'WebhookDelivered reported');
        const delivered = status.conditions.find((c: any) => c.type === 'WebhookDelivered');
        assert.equal(delivered.reason, 'DestinationRefused', name);
        // The same words whatever the destination: nothing of what it resolves to, or whether it answers.
        assert.ok(delivered.message.startsWith(`${refusedByPolicy}; attempt `), `${name}: ${delivered.message}`);
        assert.ok(status.pendingNotifications.length >= 1, name);
      }
      assert.equal(postsFrom.get('to-loopback'), undefined, 'the refused loopback listener got a request');
    } finally {
      await controller.stop();
      controller = await startOperator(cluster, namespace, ['podalert'], scratch);
    }
    // Listed (as the rest of this file runs), the same destination is delivered to.
    await waitFor('to-loopback delivered once listed', () => (postsFrom.get('to-loopback') ?? 0) >= 1, { timeoutMs: 60_000 });
  });

  it('copies no log tail when the install turns log tails off', async () => {
    await controller.stop();
    controller = await startOperator(cluster, namespace, ['podalert'], scratch, { extraArgs: ['--podalert-log-tails=false'] });
    try {
      await serveLogs(cluster, { namespace, pod: 'tails' }, 'tails', ['restarted', 'waiting'], ['a secret in a log']);
      await simulated('tails', 'crash-loop', undefined, 'tails');
      await podAlert('no-tails', { gracePeriodSeconds: 0, logLines: 2, selector: { matchLabels: { team: 'tails' } } });
      const status = await statusOf('no-tails', (s) => s.alerts?.[0]?.reason === 'CrashLoopBackOff', 'the crash loop listed');
      assert.deepEqual(status.alerts.filter((a: any) => a.logTail !== undefined), []);
    } finally {
      await controller.stop();
      controller = await startOperator(cluster, namespace, ['podalert'], scratch);
    }
  });

  it('drops the oldest message past 100 waiting, and says so in a condition, an Event and a count', async () => {
    await kubectl('create', 'secret', 'generic', 'dead-hook', `--from-literal=url=http://127.0.0.1:${await freePort()}/`);
    await podAlert('full', { gracePeriodSeconds: 0, selector: { matchLabels: { team: 'full' } },
      webhook: { secretRef: { name: 'dead-hook', key: 'url' } } });
    await statusOf('full', (s) => s.conditions?.some((c: any) => c.type === 'WebhookDelivered'), 'the webhook checked');
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const waiting = Array.from({ length: 100 }, (_, i) => ({ id: `old-${i}`, event: 'alert', pod: `old-${i}`,
      text: `Pod old-${i} is unhealthy`, attempts: 5, notBefore: later }));
    await kubectl('patch', 'pa', 'full', '--subresource=status', '--type=merge', '-p',
      JSON.stringify({ status: { pendingNotifications: waiting } }));
    await kubectl('run', 'overflowing', '--image=registry.example/app:1', `--labels=${simulateLabel}=crash-loop,team=full`);
    const status = await statusOf('full', (s) => s.droppedNotifications === 1, 'one message dropped');
    assert.equal(status.pendingNotifications.length, 100);
    assert.deepEqual([status.pendingNotifications[0].id, status.pendingNotifications.at(-1).pod], ['old-1', 'overflowing']);
    const condition = status.conditions.find((c: any) => c.type === 'WebhookDelivered');
    assert.deepEqual([condition.status, condition.reason], ['False', 'OutboxOverflow']);
    assert.ok((await events('full')).some((e: any) => e.reason === 'NotificationsDropped' && e.type === 'Warning'));
  });

  it('counts a pod only after the grace period, and clears alerts when the check is turned off', async () => {
    await podAlert('patient', { gracePeriodSeconds: 3600, selector: { matchLabels: { team: 'shop' } } });
    const patient = await statusOf('patient', (s) => s.conditions?.some((c: any) => c.reason === 'Evaluated'), 'evaluated');
    assert.equal(patient.unhealthyPods, 0);
    await podAlert('no-secret', { alerts: { checkRunningPods: false }, webhook: { secretRef: { name: 'nowhere', key: 'url' } } });
    const off = await statusOf('no-secret', (s) => s.conditions.some((c: any) => c.reason === 'CheckDisabled'), 'check off');
    assert.equal(off.unhealthyPods, 0);
    assert.deepEqual(off.alerts, []);
  });

  it('makes one alert of a Deployment\'s crash-looping pods, counted, with a series per pod, and resolves it once', async () => {
    const template = (state: string) => ({ metadata: { labels: { app: 'web', [simulateLabel]: state } },
      spec: { containers: [{ name: 'app', image: 'registry.example/web:1' }] } });
    await apply({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace },
      spec: { replicas: 3, selector: { matchLabels: { app: 'web' } }, template: template('crash-loop') } });
    await podAlert('web', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { app: 'web' } },
      webhook: { secretRef: { name: 'alert-hook', key: 'url' } } });
    const status = await statusOf('web', (s) => s.workloads?.[0]?.unhealthyPods === 3 && s.pendingNotifications?.length === 0 &&
      s.conditions.some((c: any) => c.type === 'WebhookDelivered' && c.status === 'True'), 'one workload of three pods, delivered');
    assert.deepEqual(status.workloads.map((w: any) => [w.owner, w.reason, w.pods.length]), [['Deployment/web', 'CrashLoopBackOff', 3]]);
    assert.equal(status.unhealthyWorkloads, 1);
    assert.deepEqual([...new Set(status.alerts.map((a: any) => a.owner))], ['Deployment/web']);
    const [message, ...more] = messagesFor('web');
    assert.deepEqual(more, [], 'more than one message for one workload');
    assert.deepEqual([message.event, message.owner, message.pod], ['alert', 'Deployment/web', undefined]);
    assert.match(message.text, new RegExp(`^Deployment web in ${namespace}: \\d pods? unhealthy \\(CrashLoopBackOff\\): web-`));
    const series = (labels: Record<string, string> = {}) => controller.metric('keelson_podalert_pod_unhealthy',
      { podalert: 'web', namespace, owner_kind: 'Deployment', owner: 'web', ...labels });
    assert.equal(await series({ reason: 'CrashLoopBackOff' }), 3);
    assert.equal(await series({ pod: status.alerts[0].pod }), 1);

    // Fixed: a rollout replaces the pods, and the one alert is resolved once.
    await kubectl('patch', 'deployment', 'web', '--type=merge', '-p', JSON.stringify({ spec: { template: template('recovered') } }));
    const resolved = await waitFor('the resolution', () => messagesFor('web').filter((m) => m.event === 'resolved')[0],
      { timeoutMs: 90_000 });
    assert.deepEqual([resolved.owner, resolved.text], ['Deployment/web',
      `Deployment web in ${namespace} has no unhealthy pod now (was CrashLoopBackOff)`]);
    await statusOf('web', (s) => s.unhealthyPods === 0 && s.workloads.length === 0, 'no workload listed');
    assert.equal(messagesFor('web').length, 2);
    assert.equal(await series(), 0);
  });

  it('keeps an alert firing through a crash loop\'s pod turning unready anew within its grace period', async () => {
    await simulatedDeployment('anew', 1, 'crash-loop', 10);
    const first = await statusOf('anew', (s) => s.workloads?.length === 1, 'the alert, past the grace period');
    // The pod crashes again: its Ready condition turns False anew, now, and it is within its grace period again.
    const crashed = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    await unreadySince(first.alerts[0].pod, crashed);
    await statusOf('anew', (s) => s.alerts?.[0]?.since === crashed, 'the pod judged as crashed anew');
    const status = await statusOf('anew', (s) => s.pendingNotifications?.length === 0, 'nothing waiting');
    assert.deepEqual([status.workloads.length, status.workloads[0].since], [1, first.workloads[0].since]);
    assert.deepEqual(messagesFor('anew').map((m) => m.event), ['alert']);
  });

  it('lets a pod only starting within its grace period keep no alert firing', async () => {
    await simulatedDeployment('churn', 2, 'image-pull-backoff', 3600);
    const [crashing, starting] = await waitFor('both pods', async () => {
      const pods = (await json('pods', '-l', 'app=churn')).items.map((p: any) => p.metadata.name);
      return pods.length === 2 ? pods : undefined;
    });
    // One crash-loops, unready for two hours: past the grace period. The other, only pulling its image, is not.
    await kubectl('label', 'pod', crashing, `${simulateLabel}=crash-loop`, '--overwrite');
    await waitFor('the pod crash-looping', async () => (await json('pod', crashing)).status.phase === 'Running');
    const longAgo = new Date(Date.now() - 2 * 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z');
    await unreadySince(crashing, longAgo);
    await statusOf('churn', (s) => s.workloads?.[0]?.unhealthyPods === 1, 'the alert, for the crash-looping pod');
    await kubectl('label', 'pod', crashing, `${simulateLabel}=recovered`, '--overwrite');
    await statusOf('churn', (s) => s.workloads?.length === 0, `the alert resolved, ${starting} still starting`);
    assert.deepEqual(messagesFor('churn').map((m) => m.event), ['alert', 'resolved']);
  });

  it('posts a Deployment\'s one alert to Alertmanager, which routes it once, silences, and resolves it', async () => {
    const alertmanager: Alertmanager = await startAlertmanager(alertmanagerReceiver());
    try {
      const deployment = (name: string, state: string) => apply({ apiVersion: 'apps/v1', kind: 'Deployment',
        metadata: { name, namespace }, spec: { replicas: 3, selector: { matchLabels: { app: name } }, template: {
          metadata: { labels: { app: name, tier: 'am', [simulateLabel]: state } },
          spec: { containers: [{ name: 'app', image: 'registry.example/web:1' }] } } } });
      await deployment('am-web', 'crash-loop');
      await podAlert('am', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { tier: 'am' } },
        alertmanager: { url: alertmanager.url }, severity: 'critical', labels: { team: 'web' },
        runbookUrl: 'https://runbooks.example/pods' });
      const ofOwner = async (owner: string) => (await alertmanager.alerts()).filter((a) => a.labels.owner === owner);
      const [held] = await waitFor('Alertmanager to hold am-web\'s alert, for 3 pods', async () => {
        const found = await ofOwner('am-web');
        return found.length === 1 && found[0].annotations.pods === '3' ? found : undefined;
      }, { timeoutMs: 60_000 });
      assert.deepEqual(held.labels, { alertname: 'PodUnhealthy', namespace, podalert: 'am', owner_kind: 'Deployment',
        owner: 'am-web', container: 'app', reason: 'CrashLoopBackOff', severity: 'critical', team: 'web' });
      assert.match(held.annotations.summary, new RegExp(`^Deployment am-web in ${namespace}: 3 pods unhealthy \\(CrashLoopBackOff\\)`));
      assert.equal(held.annotations.runbook_url, 'https://runbooks.example/pods');
      const firing = () => notified.filter((n) => n.status === 'firing' && n.alerts.some((a: any) => a.labels.owner === 'am-web'));
      await waitFor('the receiver to be told', () => firing().length === 1);
      await statusOf('am', (s) => s.conditions.some((c: any) => c.type === 'AlertmanagerDelivered' && c.status === 'True'),
        'AlertmanagerDelivered=True');

      // A restart posts the same alert again, which Alertmanager keeps as one: the receiver is not told twice.
      await controller.stop();
      controller = await startOperator(cluster, namespace, ['podalert'], scratch);
      await waitFor('the alert posted again', async () => Date.parse((await ofOwner('am-web'))[0].updatedAt) >
        Date.parse(held.updatedAt), { timeoutMs: 60_000 });
      assert.equal((await ofOwner('am-web')).length, 1);

      // A silence in Alertmanager keeps a second Deployment's alert from the receiver.
      const silence = await alertmanager.silence({ owner: 'am-quiet' });
      await deployment('am-quiet', 'crash-loop');
      await waitFor('am-quiet\'s alert silenced', async () => (await ofOwner('am-quiet'))[0]?.status.silencedBy.includes(silence));

      // Fixed, am-web's alert ends there, and the receiver is told; of am-quiet it was never told.
      await deployment('am-web', 'recovered');
      await waitFor('am-web resolved in Alertmanager', async () => (await ofOwner('am-web')).length === 0 || undefined,
        { timeoutMs: 90_000 });
      await waitFor('the receiver told of the resolution', () => notified.some((n) => n.status === 'resolved' &&
        n.alerts.some((a: any) => a.labels.owner === 'am-web')));
      assert.equal(firing().length, 1, 'the receiver was told of am-web twice');
      assert.ok(!notified.some((n) => n.alerts.some((a: any) => a.labels.owner === 'am-quiet')), 'a silenced alert was sent');
      await statusOf('am', (s) => (s.alertmanagerResolutions ?? []).length === 0, 'no resolution left to post');
    } finally {
      await alertmanager.stop();
    }
  });

  it('posts to every replica of an Alertmanager cluster, and counts a post once one replica has it', async () => {
    const replicas = [await startAlertmanager(alertmanagerReceiver()), await startAlertmanager(alertmanagerReceiver())];
    try {
      await apply({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'ha-1', namespace,
        labels: { tier: 'ha', [simulateLabel]: 'crash-loop' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } });
      await podAlert('ha', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { tier: 'ha' } },
        alertmanager: { urls: replicas.map((r) => r.url) } });
      const held = async (replica: Alertmanager) => (await replica.alerts()).filter((a) => a.labels.podalert === 'ha');
      await waitFor('each replica to hold the alert', async () =>
        (await Promise.all(replicas.map(held))).every((found) => found.length === 1), { timeoutMs: 60_000 });
      await replicas[1]!.stop();
      await kubectl('label', 'pod', 'ha-1', `${simulateLabel}=recovered`, '--overwrite');
      await waitFor('the replica still up to have the resolution', async () => (await held(replicas[0]!)).length === 0,
        { timeoutMs: 60_000 });
      const status = await statusOf('ha', (s) => s.conditions.some((c: any) => c.type === 'AlertmanagerDelivered' &&
        c.reason === 'PartlyDelivered') && (s.alertmanagerResolutions ?? []).length === 0, 'PartlyDelivered, nothing left to post');
      const condition = status.conditions.find((c: any) => c.type === 'AlertmanagerDelivered');
      assert.equal(condition.status, 'True');
      assert.ok(condition.message.startsWith(`${replicas[1]!.url}: Alertmanager could not be reached`), condition.message);
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
    }
  });

  it('keeps a resolution Alertmanager could not take across a restart, and posts it with the moment it was seen', async () => {
    const alertmanager = await startAlertmanager(alertmanagerReceiver());
    const gate = await startGate(alertmanager.url);
    try {
      await kubectl('run', 'parked-1', '--image=registry.example/app:1', `--labels=tier=parked,${simulateLabel}=crash-loop`);
      await podAlert('parked', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { tier: 'parked' } },
        alertmanager: { url: gate.url } });
      const told = () => notified.filter((n) => n.alerts.some((a: any) => a.labels.podalert === 'parked'));
      await waitFor('the receiver told of the alert', () => told().some((n) => n.status === 'firing'), { timeoutMs: 60_000 });
      gate.shut();
      await kubectl('label', 'pod', 'parked-1', `${simulateLabel}=recovered`, '--overwrite');
      const waiting = await statusOf('parked', (s) => s.alertmanagerResolutions?.length === 1 && s.conditions.some((c: any) =>
        c.type === 'AlertmanagerDelivered' && c.status === 'False'), 'the resolution waiting in status, Alertmanager down');
      await controller.stop();
      controller = await startOperator(cluster, namespace, ['podalert'], scratch);
      gate.open();
      // Left to itself, Alertmanager would end the alert only when its five minutes ran out, at a later endsAt.
      const resolved = await waitFor('the receiver told of the resolution', () => told().find((n) => n.status === 'resolved'),
        { timeoutMs: 60_000 });
      assert.equal(Date.parse(resolved.alerts[0].endsAt), Date.parse(waiting.alertmanagerResolutions[0].endsAt));
      await statusOf('parked', (s) => (s.alertmanagerResolutions ?? []).length === 0, 'no resolution left to post');
    } finally {
      await gate.stop();
      await alertmanager.stop();
    }
  });

  it('lets a silence made in Alertmanager stop the notifications of an alert it was telling of', async () => {
    const alertmanager = await startAlertmanager(alertmanagerReceiver(), { repeatInterval: '2s' });
    try {
      for (const pod of ['hush-loud', 'hush-quiet']) {
        await kubectl('run', pod, '--image=registry.example/app:1', `--labels=tier=hush,${simulateLabel}=crash-loop`);
      }
      await podAlert('hush', { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { tier: 'hush' } },
        alertmanager: { url: alertmanager.url } });
      const toldOf = (owner: string) => notified.filter((n) => n.status === 'firing' && n.alerts.some((a: any) =>
        a.labels.podalert === 'hush' && a.labels.owner === owner)).length;
      await waitFor('each alert told of, and again', () => toldOf('hush-loud') >= 2 && toldOf('hush-quiet') >= 2,
        { timeoutMs: 60_000 });
      await alertmanager.silence({ podalert: 'hush', owner: 'hush-quiet' });
      // A notification on its way as the silence was made may still come: counting starts a repeat of the other later.
      const loud = toldOf('hush-loud');
      await waitFor('a repeat of the other alert', () => toldOf('hush-loud') > loud);
      const [quiet, later] = [toldOf('hush-quiet'), toldOf('hush-loud')];
      await waitFor('three more repeats of the other alert', () => toldOf('hush-loud') >= later + 3);
      assert.equal(toldOf('hush-quiet'), quiet, 'the silenced alert was told of again');
    } finally {
      await alertmanager.stop();
    }
  });

  it('posts in the shapes Slack, Teams and PagerDuty document, and sends an alert still firing again', async () => {
    const base = `http://127.0.0.1:${(hook.address() as { port: number }).port}/formats`;
    const violations: Record<string, (body: any) => string[]> = { slack: slackViolations, teams: teamsViolations,
      pagerduty: pagerDutyViolations };
    for (const format of Object.keys(violations)) {
      await kubectl('create', 'secret', 'generic', `hook-${format}`, `--from-literal=url=${base}/${format}`,
        '--from-literal=routingKey=0123456789abcdef0123456789abcdef');
      await podAlert(`to-${format}`, { gracePeriodSeconds: 0, logLines: 0, selector: { matchLabels: { app: 'formats' } },
        webhook: { secretRef: { name: `hook-${format}`, key: 'url' }, format, ...(format === 'pagerduty'
          ? { routingKeySecretRef: { name: `hook-${format}`, key: 'routingKey' }, repeatInterval: '1m' } : {}) } });
    }
    await kubectl('run', 'formats-1', '--image=registry.example/app:1', `--labels=app=formats,${simulateLabel}=crash-loop`);
    const of = (format: string) => formatted.filter((m) => m.format === format).map((m) => m.body);
    await waitFor('a message in each format', () => Object.keys(violations).every((f) => of(f).length >= 1));
    for (const [format, check] of Object.entries(violations)) {
      for (const body of of(format)) assert.deepEqual(check(body), [], `${format}: ${JSON.stringify(body)}`);
    }
    // A minute later, PagerDuty is sent the same incident again; then its resolution, under the same key.
    const [trigger] = of('pagerduty');
    const again = await waitFor('the alert sent again after its repeatInterval', () => of('pagerduty')[1], { timeoutMs: 100_000 });
    assert.deepEqual([again.event_action, again.dedup_key], ['trigger', trigger.dedup_key]);
    assert.equal(of('slack').length, 1, 'sent again without a repeatInterval');
    await kubectl('label', 'pod', 'formats-1', `${simulateLabel}=recovered`, '--overwrite');
    // PagerDuty already holds two messages (the trigger and its repeat): its resolution is waited for by its action.
    await waitFor('the resolution in each format', () => of('slack').length >= 2 && of('teams').length >= 2 &&
      of('pagerduty').at(-1)?.event_action === 'resolve');
    const resolve = of('pagerduty').at(-1);
    assert.deepEqual([resolve.event_action, resolve.dedup_key, pagerDutyViolations(resolve)], ['resolve', trigger.dedup_key, []]);
    assert.equal(of('teams').at(-1).attachments[0].content.body[0].text, 'Resolved');
    assert.match(of('slack').at(-1).text, /^Pod formats-1 in \S+ recovered \(was \w+\)$/);
  });

  it('counts every one of 62 unhealthy pods, lists the 50 newest within a size budget, and resolves only the healthy', async () => {
    const names = Array.from({ length: 62 }, (_, i) => `crowd-${i}`);
    const dir = join(scratch, 'crowd-logs');
    await mkdir(dir, { recursive: true });
    const long = Array.from({ length: 20 }, (_, i) => `${i} ${'log line that goes on and on '.repeat(1_000)}`);
    await writeFile(join(dir, 'current.log'), criLog(long));
    await writeFile(join(dir, 'previous.log'), criLog(long));
    await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'kwok.x-k8s.io/v1alpha1', kind: 'ClusterLogs', metadata: { name: `crowd-${namespace}` },
        spec: { selector: { matchNamespaces: [namespace], matchNames: names }, logs: [{ containers: ['app'],
          logsFile: join(dir, 'current.log'), previousLogsFile: join(dir, 'previous.log') }] } },
      ...names.map((name) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace,
        labels: { team: 'crowd', [simulateLabel]: 'crash-loop' } },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } })),
    ] }) });
    await podAlert('crowd', { gracePeriodSeconds: 0, logLines: 20, selector: { matchLabels: { team: 'crowd' } } });
    const status = await statusOf('crowd', (s) => s.unhealthyPods === 62 && s.alerts.every((a: any) => a.logTail),
      '62 unhealthy pods, each listed one with its log');
    assert.equal(status.alerts.length, 50);
    assert.match(status.conditions.find((c: any) => c.type === 'Ready').message, /^62 unhealthy pods; the 50 most recent are listed$/);
    const bytes = Buffer.byteLength((await kubectl('get', 'pa', 'crowd', '-o', 'json')).stdout);
    assert.ok(bytes < 600 * 1024, `the PodAlert takes ${bytes} bytes`);
    assert.equal(await controller.metric('keelson_podalert_unhealthy_pods', { namespace, name: 'crowd' }), 62);

    const listed = new Set(status.alerts.map((a: any) => a.pod));
    const unlisted = names.find((n) => !listed.has(n))!;
    await kubectl('label', 'pod', unlisted, `${simulateLabel}=recovered`, '--overwrite');
    await statusOf('crowd', (s) => s.unhealthyPods === 61, 'one pod recovered');
    // Each pod is an alert of its own (nothing controls them), listed or not: that one alone is resolved.
    const resolved = await waitFor('its resolution', async () => {
      const found = (await events('crowd')).filter((e: any) => e.reason === 'Resolved');
      return found.length ? found : undefined;
    });
    assert.deepEqual(resolved.map((e: any) => e.note), [`Pod ${unlisted} in ${namespace} recovered (was CrashLoopBackOff)`]);
  });
});

describe('PodAlert on the real node', { skip: withoutRealNode(cluster) }, () => {
  let real: string;
  let realController: ControllerProcess;
  const tools = 'keelson.local/tools:1';
  before(async () => {
    const ns = await freshNamespace(cluster, 'podalert-real', { pods: 'real' });
    real = ns.name;
    realCleanup = ns.cleanup;
    await cluster.loadImage(toolsImage);
    await cluster.kubectl(['create', 'secret', 'generic', 'alert-hook', `--from-literal=url=${hookUrl}`, '-n', real]);
    realController = await startOperator(cluster, real, ['podalert'], scratch);
  });
  after(() => realController?.stop());

  it('alerts once on a real crash loop with its previous instance\'s last lines, and resolves once, across a restart', async () => {
    await cluster.kubectl(['apply', '-n', real, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'crashing', labels: { app: 'crashing' } }, spec: { terminationGracePeriodSeconds: 1, containers: [
        { name: 'app', image: tools, imagePullPolicy: 'Never',
          command: ['sh', '-c', 'echo "starting"; echo "fatal: no config at $(date +%s)"; exit 3'] }] } }) });
    // With no grace period, a pod still being created is unhealthy, and healthy for the moment its first instance
    // runs: that alert and its resolution would be right, but this test is about the crash loop itself.
    await waitForPod(cluster, real, 'crashing', 'restarted', (p) => p.status?.containerStatuses?.[0]?.restartCount >= 1);
    await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PodAlert',
      metadata: { name: 'real', namespace: real }, spec: { alerts: { checkRunningPods: true }, gracePeriodSeconds: 0,
        logLines: 2, webhook: { secretRef: { name: 'alert-hook', key: 'url' } } } });
    const status = await waitFor('a CrashLoopBackOff alert with the previous instance\'s log', async () => {
      const s = (await cluster.getJson(real, 'pa', 'real'))?.status;
      return s?.alerts?.[0]?.reason === 'CrashLoopBackOff' && s.alerts[0].logTail ? s : undefined;
    }, { timeoutMs: 90_000 });
    assert.match(status.alerts[0].logTail, /^starting\nfatal: no config at \d+\n$/);
    await waitFor('the alert message', () => messagesFor('real').length === 1, { timeoutMs: 30_000 })
      .catch((error: Error) => { throw new Error(`${error.message}; the controller's last lines:\n${realController.describe()}`); });

    await realController.stop();
    realController = await startOperator(cluster, real, ['podalert'], scratch);
    await cluster.kubectl(['delete', 'pod', 'crashing', '-n', real, '--wait=false']);
    await waitFor('the resolution message', () => messagesFor('real').some((m) => m.event === 'resolved'), { timeoutMs: 60_000 });
    assert.deepEqual(messagesFor('real').map((m) => [m.event, m.pod]), [['alert', 'crashing'], ['resolved', 'crashing']]);
  });

  it('gives Alertmanager one alert for a Deployment of 5 crash-looping pods, with a real log tail, told once across a restart, and resolved once fixed', async () => {
    const alertmanager = await startAlertmanager(alertmanagerReceiver());
    const deployment = (script: string) => cluster.kubectl(['apply', '-n', real, '-f', '-'], { input: JSON.stringify({
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'crashers' }, spec: { replicas: 5,
        selector: { matchLabels: { app: 'crashers' } }, template: { metadata: { labels: { app: 'crashers' } }, spec: {
          terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image: tools, imagePullPolicy: 'Never',
            resources: { requests: { cpu: '1m', memory: '8Mi' } }, command: ['sh', '-c', script] }] } } } }) });
    const firing = () => notified.filter((n) => n.status === 'firing' && n.alerts.some((a: any) => a.labels.owner === 'crashers'));
    const tells = (n: any, fingerprint: string) => n.alerts.some((a: any) => a.status === 'firing' && a.fingerprint === fingerprint);
    const unhealthySeries = () => realController.metric('keelson_podalert_pod_unhealthy', { podalert: 'crashers' });
    try {
      await deployment('echo "starting"; echo "fatal: no config"; exit 3');
      await apply({ apiVersion: 'keelson.dev/v1alpha1', kind: 'PodAlert', metadata: { name: 'crashers', namespace: real },
        spec: { alerts: { checkRunningPods: true }, selector: { matchLabels: { app: 'crashers' } }, gracePeriodSeconds: 0,
          logLines: 2, alertmanager: { url: alertmanager.url } } });
      const held = await waitFor('one alert for the Deployment\'s 5 pods, with their log', async () => {
        const found = (await alertmanager.alerts()).filter((a) => a.labels.podalert === 'crashers');
        // Starting, the pods were ContainerCreating: that alert ended when they all crash-looped.
        return found.length === 1 && found[0].labels.reason === 'CrashLoopBackOff' && found[0].annotations.pods === '5' &&
          found[0].annotations.description ? found[0] : undefined;
      }, { timeoutMs: 180_000 });
      assert.deepEqual([held.labels.owner_kind, held.labels.owner, held.labels.namespace], ['Deployment', 'crashers', real]);
      assert.equal(held.annotations.description, 'starting\nfatal: no config\n');

      await waitFor('the receiver told of it', () => firing().some((n) => tells(n, held.fingerprint)));
      const toldBefore = firing().length;

      // Restarted, the controller posts the alert again: the same alert there, still firing since it began.
      await realController.stop();
      const restartedAt = Date.now();
      realController = await startOperator(cluster, real, ['podalert'], scratch);
      const again = await waitFor('the alert posted again by the new controller', async () => {
        const found = (await alertmanager.alerts()).filter((a) => a.labels.podalert === 'crashers');
        return found.length === 1 && Date.parse(found[0].updatedAt) > restartedAt ? found[0] : undefined;
      }, { timeoutMs: 60_000 });
      assert.deepEqual([again.fingerprint, again.startsAt], [held.fingerprint, held.startsAt]);
      assert.equal(await unhealthySeries(), 5);

      // Fixed, the Deployment rolls out healthy pods, and the alert ends there.
      await deployment('echo "starting"; exec sleep 3600');
      await waitFor('the alert resolved in Alertmanager', async () =>
        !(await alertmanager.alerts()).some((a) => a.labels.podalert === 'crashers'), { timeoutMs: 180_000 })
        .catch(async (error: Error) => {
          const status = (await cluster.getJson(real, 'pa', 'crashers'))?.status;
          throw new Error(`${error.message}; Alertmanager holds ${JSON.stringify(await alertmanager.alerts())}; the ` +
            `PodAlert's status: ${JSON.stringify(status)}; pods: ${(await cluster.kubectl(['get', 'pods', '-n', real])).stdout}`);
        });
      await waitFor('the receiver told of the resolution', () => notified.some((n) => n.status === 'resolved' &&
        n.alerts.some((a: any) => a.labels.owner === 'crashers')));
      // Alertmanager tells a receiver again only of a group that changed: after the restart, each notification must
      // bring an alert other than the one it was told of.
      const repeats = firing().slice(toldBefore).filter((n) => n.alerts.every((a: any) => a.status === 'firing' &&
        a.fingerprint === held.fingerprint));
      assert.deepEqual(repeats, [], 'the receiver was told of the crash loop again');
      assert.equal(await unhealthySeries(), 0);
    } finally {
      await alertmanager.stop();
    }
  });
});

