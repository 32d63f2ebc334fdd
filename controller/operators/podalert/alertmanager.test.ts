import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { workloadSubject } from './alertmanager.ts';

describe('what Alertmanager is told of an alert', () => {
  it('describes it with the log of a pod failing as its labels say, else of any listed pod', () => {
    const workload = { owner: 'Deployment/web', unhealthyPods: 2, reason: 'CrashLoopBackOff', container: 'app',
      since: '2026-06-01T10:00:00Z', pods: ['web-2', 'web-1'] };
    const entry = (pod: string, reason: string, container: string, logTail: string) =>
      ({ pod, phase: 'Running', reason, container, since: '2026-06-01T10:00:00Z', logTail });
    const crashing = entry('web-1', 'CrashLoopBackOff', 'app', 'fatal: no config\n');
    const notReady = entry('web-2', 'NotReady', 'sidecar', 'waiting for app\n');
    assert.equal(workloadSubject(workload, 'summary', [notReady, crashing]).logTail, 'fatal: no config\n');
    assert.equal(workloadSubject(workload, 'summary', [notReady]).logTail, 'waiting for app\n');
  });
});
