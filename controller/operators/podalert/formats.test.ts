import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pagerDutyViolations, slackViolations, teamsViolations } from '../../../test/support/receivers.ts';
import { render } from './formats.ts';
import type { Notification } from './webhook.ts';

const context = { kind: 'PodAlert', namespace: 'shop', name: 'web-alerts', severity: 'critical', routingKey: 'R0UT1NGKEY' };
const fired: Notification = { id: 'a1', event: 'alert', owner: 'Deployment/web', pods: 3, reason: 'CrashLoopBackOff',
  since: '2026-06-01T10:00:00Z', text: 'Deployment web in shop: 3 pods unhealthy (CrashLoopBackOff): <web-1> & more' };
const resolved: Notification = { ...fired, id: 'a2', event: 'resolved', text: 'Deployment web in shop has no unhealthy pod now' };

describe('webhook payloads', () => {
  it('are what Slack documents, with its markup escaped', () => {
    const body = render.slack(fired, context) as any;
    assert.deepEqual(slackViolations(body), []);
    assert.equal(body.text, 'Deployment web in shop: 3 pods unhealthy (CrashLoopBackOff): &lt;web-1&gt; &amp; more');
    assert.match(body.blocks[0].text.text, /^\*Unhealthy\*: .*&lt;web-1&gt; &amp; more$/);
  });

  it('are an Adaptive Card for Teams', () => {
    const body = render.teams(fired, context) as any;
    assert.deepEqual(teamsViolations(body), []);
    assert.deepEqual(body.attachments[0].content.body[2].facts.find((f: any) => f.title === 'Pods'), { title: 'Pods', value: '3' });
    assert.deepEqual(teamsViolations(render.teams(resolved, context)), []);
  });

  it('are PagerDuty events whose trigger and resolve share one dedup key, one per pod with groupBy pod', () => {
    const pod = (name: string, event: Notification['event']) => render.pagerduty({ ...fired, event, pod: name }, context) as any;
    assert.notEqual(pod('web-1', 'alert').dedup_key, pod('web-2', 'alert').dedup_key);
    assert.equal(pod('web-1', 'alert').dedup_key, pod('web-1', 'resolved').dedup_key);
    assert.equal(pod('web-1', 'alert').payload.source, 'shop/Deployment/web/web-1');
    const trigger = render.pagerduty(fired, context) as any;
    const resolve = render.pagerduty(resolved, context) as any;
    assert.deepEqual([pagerDutyViolations(trigger), pagerDutyViolations(resolve)], [[], []]);
    assert.deepEqual([trigger.event_action, resolve.event_action], ['trigger', 'resolve']);
    assert.equal(trigger.dedup_key, resolve.dedup_key);
    assert.equal(trigger.payload.severity, 'critical');
    assert.equal((render.pagerduty(fired, { ...context, severity: 'page' }) as any).payload.severity, 'warning');
    // A receiver's checks can fail: an empty routing key is not an event.
    assert.deepEqual(pagerDutyViolations(render.pagerduty(fired, { ...context, routingKey: '' })), ['routing_key: required']);
  });

  it('are the message\'s own fields when generic', () => {
    assert.deepEqual(render.generic({ ...fired, attempts: 2, notBefore: 'x' }, context), { ...fired,
      podAlert: { kind: 'PodAlert', namespace: 'shop', name: 'web-alerts' }, namespace: 'shop' });
  });

  it('tell a ClusterPodAlert\'s alert by its own namespace, one PagerDuty incident per namespace', () => {
    const cluster = { kind: 'ClusterPodAlert', name: 'all-teams', severity: 'warning', routingKey: 'R0UT1NGKEY' };
    const inShop = { ...fired, namespace: 'shop' };
    const inCart = { ...fired, namespace: 'cart' };
    assert.deepEqual(render.generic(inShop, cluster), { ...inShop, podAlert: { kind: 'ClusterPodAlert', name: 'all-teams' },
      namespace: 'shop' });
    const [shop, cart] = [render.pagerduty(inShop, cluster) as any, render.pagerduty(inCart, cluster) as any];
    assert.notEqual(shop.dedup_key, cart.dedup_key);
    assert.deepEqual([shop.payload.source, shop.payload.group, shop.payload.custom_details.clusterPodAlert],
      ['shop/Deployment/web', 'shop', 'all-teams']);
    const slack = render.slack(inCart, cluster) as any;
    assert.equal(slack.blocks[1].elements[0].text, 'namespace cart · ClusterPodAlert all-teams · reason CrashLoopBackOff · ' +
      'since 2026-06-01T10:00:00Z');
    assert.deepEqual(teamsViolations(render.teams(inCart, cluster)), []);
  });
});
