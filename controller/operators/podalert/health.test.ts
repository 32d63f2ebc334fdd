import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { alertText, failedLately, isKubeletLogFailure, trouble, type PodView } from './health.ts';

const created = '2026-01-01T00:00:00Z';
const pod = (status: PodView['status'], extra: Partial<PodView['metadata']> = {}): PodView =>
  ({ metadata: { name: 'web-1', namespace: 'shop', creationTimestamp: created, ...extra }, status });

describe('pod health', () => {
  it('finds nothing wrong with running, ready pods, finished Jobs, and pods being deleted', () => {
    assert.equal(trouble(pod({ phase: 'Running', containerStatuses: [{ name: 'app', ready: true, state: { running: {} } }] })), undefined);
    assert.equal(trouble(pod({ phase: 'Succeeded' })), undefined);
    assert.equal(trouble(pod({ phase: 'Failed' }, { deletionTimestamp: created })), undefined);
  });

  it('explains a crash loop and points at the previous instance\'s log', () => {
    const found = trouble(pod({
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: '2026-01-01T00:05:00Z' }],
      containerStatuses: [
        { name: 'sidecar', ready: true, state: { running: {} } },
        { name: 'app', ready: false, restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff',
          message: 'back-off 1m20s restarting failed container' } }, lastState: { terminated: { exitCode: 1, reason: 'Error' } } },
      ],
    }))!;
    assert.deepEqual([found.reason, found.container, found.previousLog, found.since.toISOString()],
      ['CrashLoopBackOff', 'app', true, '2026-01-01T00:05:00.000Z']);
    assert.deepEqual(found.containers.map((c) => [c.name, c.state, c.ready, c.restartCount]),
      [['sidecar', 'running', true, 0], ['app', 'waiting', false, 4]]);
    assert.equal(alertText({ pod: 'web-1', namespace: 'shop', ...found, restarts: 4 }),
      'Pod web-1 in shop is unhealthy: CrashLoopBackOff (container app, 4 restarts): ' +
      'back-off 1m20s restarting failed container');
  });

  it('keeps a container that runs again after a failure unhealthy until it has run for a minute', () => {
    const restarted = (startedAt: string) => pod({ phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }],
      containerStatuses: [{ name: 'app', ready: true, restartCount: 5, state: { running: { startedAt } },
        lastState: { terminated: { exitCode: 3, reason: 'Error' } } }] });
    const now = new Date('2026-01-01T01:00:00Z');
    const found = trouble(restarted('2026-01-01T00:59:50Z'), now)!;
    assert.deepEqual([found.reason, found.container, found.previousLog], ['Restarted', 'app', true]);
    assert.equal(found.message, 'container app runs again after exit code 3 (Error); healthy once it has run for 60s');
    assert.equal(trouble(restarted('2026-01-01T00:58:59Z'), now), undefined);
  });

  it('explains pods stuck Pending: image pulls, scheduling, or nothing said', () => {
    const pull = trouble(pod({ phase: 'Pending', containerStatuses: [{ name: 'app', ready: false,
      state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image "nope:1"' } } }] }))!;
    assert.deepEqual([pull.reason, pull.container, pull.previousLog, pull.since.toISOString()],
      ['ImagePullBackOff', 'app', false, '2026-01-01T00:00:00.000Z']);
    const unschedulable = trouble(pod({ phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False',
      reason: 'Unschedulable', message: '0/2 nodes are available' }] }))!;
    assert.deepEqual([unschedulable.reason, unschedulable.message, unschedulable.container],
      ['Unschedulable', '0/2 nodes are available', undefined]);
    assert.equal(trouble(pod({ phase: 'Pending' }))!.reason, 'Pending');
    assert.equal(trouble(pod(undefined))!.reason, 'Pending');
  });

  it('explains failed, unknown and not-ready pods', () => {
    const failed = trouble(pod({ phase: 'Failed', reason: 'Evicted', message: 'The node was low on memory.',
      containerStatuses: [{ name: 'app', state: { terminated: { exitCode: 137, finishedAt: '2026-01-01T01:00:00Z' } } }] }))!;
    assert.deepEqual([failed.reason, failed.message, failed.since.toISOString()],
      ['Evicted', 'The node was low on memory.', '2026-01-01T01:00:00.000Z']);
    assert.equal(trouble(pod({ phase: 'Unknown' }))!.reason, 'Unknown');
    const notReady = trouble(pod({ phase: 'Running', containerStatuses: [{ name: 'app', ready: false, state: { running: {} } }] }))!;
    assert.deepEqual([notReady.reason, notReady.message], ['NotReady', 'container app is not ready']);
  });
  it('blames a crashing init container, with its own log, and not one that completed', () => {
    const found = trouble(pod({
      phase: 'Pending',
      initContainerStatuses: [
        { name: 'schema', ready: false, state: { terminated: { exitCode: 0, reason: 'Completed' } } },
        { name: 'migrate', ready: false, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } },
          lastState: { terminated: { exitCode: 1, reason: 'Error' } } },
      ],
      containerStatuses: [{ name: 'app', ready: false, state: { waiting: { reason: 'PodInitializing' } } }],
    }))!;
    assert.deepEqual([found.reason, found.container, found.previousLog], ['CrashLoopBackOff', 'migrate', true]);
  });

  it('keeps every text within the schema\'s length, however long the runtime\'s message', () => {
    const message = 'x'.repeat(10_000);
    const found = trouble(pod({ phase: 'Running', containerStatuses: [{ name: 'app', ready: false, restartCount: 1,
      state: { waiting: { reason: 'CrashLoopBackOff', message } } }] }))!;
    assert.ok(found.containers[0]!.message!.length <= 4096);
    assert.ok(alertText({ pod: 'web-1', namespace: 'shop', ...found, restarts: 1 }).length <= 4096);
  });
  it('tells the kubelet\'s failure to read a log from a log, and a crash loop\'s pod from one only starting or long recovered', () => {
    assert.ok(isKubeletLogFailure('failed to try resolving symlinks in path "/var/log/pods/shop_web-1_0/app/0.log": lstat ' +
      '/var/log/pods/shop_web-1_0/app/0.log: no such file or directory'));
    assert.ok(isKubeletLogFailure('unable to retrieve container logs for containerd://0123'));
    assert.ok(!isKubeletLogFailure('starting\nfailed to try resolving symlinks in path /etc/app\n'));
    const failedAt = (finishedAt: string, exitCode = 1) => pod({ phase: 'Running', containerStatuses: [{ name: 'app',
      restartCount: 2, lastState: { terminated: { exitCode, finishedAt } } }] });
    const now = new Date('2026-01-01T12:00:00Z');
    assert.ok(failedLately(failedAt('2026-01-01T11:55:30Z'), 60_000, now));
    assert.ok(!failedLately(failedAt('2026-01-01T11:53:00Z'), 60_000, now), 'a failure long before counts');
    assert.ok(!failedLately(failedAt('2026-01-01T11:59:00Z', 0), 60_000, now), 'an exit with 0 counts');
    assert.ok(!failedLately(pod({ phase: 'Pending', containerStatuses: [{ name: 'app', restartCount: 0 }] }), 60_000, now));
  });
});
