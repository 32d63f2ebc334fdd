import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupByWorkload, reasonHoldMs, workloadResolvedText, workloadText } from './groups.ts';

const web = { kind: 'Deployment', name: 'web' };
const unhealthy = (pod: string, reason: string, at: string, workload = web) => ({ pod, reason, since: new Date(at), workload });

describe('unhealthy pods by workload', () => {
  it('make one alert per workload, its pods counted, those with its reason named first, the most recent first', () => {
    const groups = groupByWorkload([unhealthy('web-1', 'CrashLoopBackOff', '2026-06-01T10:00:00Z'),
      unhealthy('web-2', 'CrashLoopBackOff', '2026-06-01T10:02:00Z'), unhealthy('web-3', 'Error', '2026-06-01T10:01:00Z'),
      unhealthy('lone', 'Pending', '2026-06-01T09:00:00Z', { kind: 'Pod', name: 'lone' })], []);
    assert.deepEqual(groups, [
      { owner: 'Deployment/web', unhealthyPods: 3, reason: 'CrashLoopBackOff', since: '2026-06-01T10:00:00Z',
        pods: ['web-2', 'web-1', 'web-3'] },
      { owner: 'Pod/lone', unhealthyPods: 1, reason: 'Pending', since: '2026-06-01T09:00:00Z', pods: ['lone'] }]);
    assert.equal(workloadText(groups[0]!, 'shop'),
      'Deployment web in shop: 3 pods unhealthy (CrashLoopBackOff): web-2, web-1, web-3');
    assert.equal(workloadResolvedText(groups[0]!, 'shop'), 'Deployment web in shop has no unhealthy pod now (was CrashLoopBackOff)');
  });

  it('tell workloads of one name in two namespaces apart (a ClusterPodAlert\'s), each alert with its namespace', () => {
    const inNamespace = (namespace: string, pod: string) => ({ ...unhealthy(pod, 'CrashLoopBackOff', '2026-06-01T10:00:00Z'),
      namespace });
    const groups = groupByWorkload([inNamespace('shop', 'web-1'), inNamespace('cart', 'web-1'), inNamespace('shop', 'web-2')], []);
    assert.deepEqual(groups.map((g) => [g.namespace, g.owner, g.unhealthyPods]), [['cart', 'Deployment/web', 1],
      ['shop', 'Deployment/web', 2]]);
    assert.equal(workloadText(groups[0]!), 'Deployment web in cart: 1 pod unhealthy (CrashLoopBackOff): web-1');
    // Each keeps its own start and reason the next time round.
    const again = groupByWorkload([inNamespace('cart', 'web-1')], groups);
    assert.deepEqual(again.map((g) => [g.namespace, g.since]), [['cart', '2026-06-01T10:00:00Z']]);
  });

  it('take the reason that tells most at once, and give it up only when no pod has had it for a while', () => {
    const at = '2026-06-01T10:00:00Z';
    const starting = groupByWorkload([unhealthy('web-1', 'ContainerCreating', at), unhealthy('web-2', 'ContainerCreating', at)], []);
    assert.equal(starting[0]!.reason, 'ContainerCreating');
    const fired = groupByWorkload([unhealthy('web-1', 'CrashLoopBackOff', at), unhealthy('web-2', 'ContainerCreating', at)],
      starting);
    assert.equal(fired[0]!.reason, 'CrashLoopBackOff');
    // Between back-offs a crash-looping pod is NotReady for a moment: the alert stays what it is.
    const between = [unhealthy('web-1', 'NotReady', at), unhealthy('web-2', 'NotReady', at)];
    const now = Date.parse('2026-06-01T11:00:00Z');
    assert.equal(groupByWorkload(between, fired, { now, lastSeen: () => now - 60_000 })[0]!.reason, 'CrashLoopBackOff');
    assert.equal(groupByWorkload(between, fired, { now })[0]!.reason, 'CrashLoopBackOff');
    // None has had it for five minutes: the reason most have.
    assert.equal(groupByWorkload(between, fired, { now, lastSeen: () => now - reasonHoldMs })[0]!.reason, 'NotReady');
  });

  it('keep when they began while they fire, and move their container only with their reason', () => {
    const fired = groupByWorkload([unhealthy('web-1', 'Unschedulable', '2026-06-01T10:00:00Z'),
      unhealthy('web-2', 'Unschedulable', '2026-06-01T10:05:00Z')], []);
    // The oldest pod recovers; the other starts creating its container, which says less than Unschedulable.
    const later = groupByWorkload([{ ...unhealthy('web-2', 'ContainerCreating', '2026-06-01T10:05:00Z'), container: 'app' }],
      fired, { now: Date.parse('2026-06-01T10:06:00Z') });
    assert.deepEqual([later[0]!.since, later[0]!.reason, later[0]!.container], ['2026-06-01T10:00:00Z', 'Unschedulable', undefined]);
  });

  it('make one alert per pod with perPod, each with its owner', () => {
    const alerts = groupByWorkload([unhealthy('web-1', 'Error', '2026-06-01T10:00:00Z'),
      unhealthy('web-2', 'Error', '2026-06-01T10:01:00Z')], [], { perPod: true });
    assert.deepEqual(alerts.map((a) => [a.owner, a.pod, a.unhealthyPods]), [['Deployment/web', 'web-2', 1],
      ['Deployment/web', 'web-1', 1]]);
  });

  it('name ten pods at most, and count the rest', () => {
    const many = Array.from({ length: 12 }, (_, i) => unhealthy(`web-${i}`, 'NotReady', '2026-06-01T10:00:00Z'));
    const [group] = groupByWorkload(many, []);
    assert.equal(group!.pods!.length, 10);
    assert.match(workloadText(group!, 'shop'), /: 12 pods unhealthy \(NotReady\): web-0, web-1, web-10, .*, web-7, and 2 more$/);
  });
});
