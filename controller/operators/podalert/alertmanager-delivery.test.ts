import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { OperatorContext } from '../../runtime/manager.ts';
import { AlertmanagerSender, labelKey } from './alertmanager-delivery.ts';
import { parseDestinations } from './destination.ts';
import { resendIntervalMs } from './alertmanager.ts';

let status = 200;
let replicaDown = true;
const bodies: any[] = [];
/** What the replica under /down/ was posted, once up. */
const replicaBodies: any[] = [];
let downPosts = 0;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk) => (body += chunk)).on('end', () => {
    if (req.url!.startsWith('/down/')) {
      downPosts++;
      if (replicaDown) return res.writeHead(503).end();
      replicaBodies.push(JSON.parse(body));
      return res.writeHead(200).end();
    }
    bodies.push(JSON.parse(body));
    res.writeHead(status).end();
  });
});
let url: string;
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => new Promise((resolve) => server.close(resolve)));

const alert = (owner: string, endsAt: string) => ({ labels: { owner, alertname: 'PodUnhealthy' },
  annotations: { summary: owner }, startsAt: '2026-06-01T10:00:00Z', endsAt });
const ctx = { log: pino({ level: 'silent' }) } as unknown as OperatorContext;

describe('posting to Alertmanager', () => {
  it('posts fresh resolutions before the firing alerts, drops those of alerts firing again, and backs off on failure', async () => {
    const sender = new AlertmanagerSender(ctx, parseDestinations('127.0.0.1', undefined));
    const t0 = new Date('2026-06-01T10:00:00Z');
    const firing = [alert('web', '2026-06-01T10:05:00Z')];
    const ended = [alert('db', '2026-06-01T10:00:00Z'), alert('web', '2026-06-01T09:59:00Z')];
    const sent = await sender.send('u', 'shop', { url }, firing, ended, t0);
    assert.ok(!('wait' in sent) && sent.condition.status === 'True');
    assert.deepEqual(bodies.at(-1).map((a: any) => [a.labels.owner, a.endsAt]),
      [['db', '2026-06-01T10:00:00Z'], ['web', '2026-06-01T10:05:00Z']]);
    assert.equal((sent as any).delivered.length, 2);
    // The same, a moment later: nothing to post until the resend interval.
    assert.ok('wait' in await sender.send('u', 'shop', { url }, firing, [], new Date(t0.getTime() + 1_000)));
    status = 500;
    const failed = await sender.send('u', 'shop', { url }, firing, [], new Date(t0.getTime() + resendIntervalMs));
    assert.ok(!('wait' in failed) && failed.condition.reason === 'DeliveryFailed');
    // Within the backoff nothing is posted, even with a resolution waiting.
    const posts = bodies.length;
    assert.ok('wait' in await sender.send('u', 'shop', { url }, firing, ended, new Date(t0.getTime() + resendIntervalMs + 1_000)));
    assert.equal(bodies.length, posts);
    status = 200;
  });

  it('posts to every replica of a cluster, and counts a post once one replica has it', async () => {
    const sender = new AlertmanagerSender(ctx, parseDestinations('127.0.0.1', undefined));
    const t0 = new Date('2026-06-01T11:00:00Z');
    const ended = [alert('db', '2026-06-01T11:00:00Z')];
    const posts = bodies.length;
    const partly = await sender.send('ha', 'shop', { urls: [url, `${url}/down`] }, [], ended, t0);
    assert.ok(!('wait' in partly));
    assert.deepEqual([partly.condition.status, partly.condition.reason, partly.delivered.length], ['True', 'PartlyDelivered', 1]);
    assert.equal(partly.condition.message, `${url}/down: Alertmanager answered HTTP 503; retrying it with backoff; the other ` +
      'replicas have every alert (0 firing now)');
    assert.equal(bodies.length, posts + 1);
    // Within its backoff, the replica is left out, and misses what is resolved meanwhile too; after it, it is posted
    // what it missed, and nothing more.
    const firing = [alert('web', '2026-06-01T11:05:00Z')];
    const triedDown = downPosts;
    const skipped = await sender.send('ha', 'shop', { urls: [url, `${url}/down`] }, firing,
      [alert('cache', '2026-06-01T11:00:01Z')], new Date(t0.getTime() + 1_000));
    assert.ok(!('wait' in skipped) && skipped.condition.reason === 'PartlyDelivered');
    assert.equal(bodies.length, posts + 2);
    assert.equal(downPosts, triedDown, 'posted to a replica within its backoff');
    replicaDown = false;
    const caughtUp = await sender.send('ha', 'shop', { urls: [url, `${url}/down`] }, firing, [], new Date(t0.getTime() + 5_000));
    assert.ok(!('wait' in caughtUp) && caughtUp.condition.reason === 'Delivered');
    assert.deepEqual(replicaBodies.map((b) => b.map((a: any) => a.labels.owner)), [['db', 'cache', 'web']]);
    assert.equal(bodies.length, posts + 2, 'the replica that had everything was posted again before its resend');
    replicaDown = true;
    const none = await sender.send('ha-down', 'shop', { urls: [`${url}/down`, `${url}/down/`] }, [], ended, t0);
    assert.ok(!('wait' in none));
    assert.deepEqual([none.condition.status, none.condition.reason, none.delivered.length], ['False', 'DeliveryFailed', 0]);
  });

  it('waits, with nothing to post, for longer than a second; and backs off no longer than a resend', async () => {
    const sender = new AlertmanagerSender(ctx, parseDestinations('127.0.0.1', undefined));
    const t0 = new Date('2026-06-01T12:00:00Z');
    assert.ok(!('wait' in await sender.send('idle', 'shop', { url }, [], [], t0)));
    const idle = await sender.send('idle', 'shop', { url }, [], [], new Date(t0.getTime() + 2 * resendIntervalMs));
    assert.ok('wait' in idle && idle.wait >= 30_000, `an idle PodAlert waits ${JSON.stringify(idle)}`);
    // Pointed elsewhere with nothing firing, it tries the new way there at once.
    const moved = await sender.send('idle', 'shop', { url: `${url}/down` }, [], [], new Date(t0.getTime() + 2 * resendIntervalMs));
    assert.ok(!('wait' in moved) && moved.condition.status === 'False', `a new URL was not tried: ${JSON.stringify(moved)}`);
    let at = t0.getTime();
    let failed;
    for (let i = 0; i < 8; i++) {
      failed = await sender.send('down', 'shop', { url: `${url}/down` }, [], [], new Date(at));
      assert.ok(!('wait' in failed));
      at += failed.nextMs;
    }
    assert.equal((failed as { nextMs: number }).nextMs, resendIntervalMs);
  });

  it('tells alerts apart by their label set, whatever the order of its keys', () => {
    assert.equal(labelKey({ a: '1', b: '2' }), labelKey({ b: '2', a: '1' }));
  });
});
