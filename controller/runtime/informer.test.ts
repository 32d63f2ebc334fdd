import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { waitFor } from '../../cluster/wait.ts';
import { Client } from './client.ts';
import { Cache } from './cache.ts';
import { defaultInformerOptions, Informer } from './informer.ts';
import { createLogger } from './log.ts';
import { Metrics } from './metrics.ts';
import { ApiError, RestClient } from './rest.ts';
import { types, type KubeObject } from './resources.ts';

const cluster = testCluster();
const rest = new RestClient(cluster.adminConfig());
let namespace: string;
let cleanup: () => Promise<void>;

const configMaps = () => `/api/v1/namespaces/${namespace}/configmaps`;
const put = (name: string) => rest.json({ method: 'PATCH', path: `${configMaps()}/${name}`,
  query: { fieldManager: 'test' }, contentType: 'application/apply-patch+yaml',
  body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } } });
const remove = (name: string) => rest.json({ method: 'DELETE', path: `${configMaps()}/${name}` })
  .catch((error: unknown) => assert.ok(error instanceof ApiError && error.notFound, String(error)));

const reader = (observe?: (verb: string) => void) => new Client(rest,
  [{ group: '', resource: 'configmaps', verbs: ['list', 'watch'], reason: 'test' }], 'test', observe);

/** An informer on this test's ConfigMaps, with every call it makes and every event it emits written down. */
function informer(initialState: 'stream' | 'list') {
  const calls: string[] = [];
  const events: string[] = [];
  const client = reader((verb) => calls.push(verb));
  const subject = new Informer<KubeObject>(client, types.configMaps, namespace, new Metrics(), createLogger('error'),
    { ...defaultInformerOptions, initialState });
  subject.addHandler({
    added: (o) => events.push(`added ${o.metadata.name}`),
    updated: (_, o) => events.push(`updated ${o.metadata.name}`),
    deleted: (o) => events.push(`deleted ${o.metadata.name}`),
  });
  return { subject, calls, events };
}

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'informer'));
  for (const name of ['a', 'b', 'c']) await put(name);
});
after(async () => {
  rest.close();
  await cleanup();
});

describe('informer', () => {
  for (const initialState of ['stream', 'list'] as const) {
    it(`learns what exists by ${initialState === 'stream' ? 'a watch streaming its initial events' : 'a list'}, ` +
      'then follows changes', async () => {
      const { subject, calls, events } = informer(initialState);
      subject.start();
      try {
        await subject.waitForSync();
        const names = () => subject.list().map((o) => o.metadata.name).filter((n) => n !== 'kube-root-ca.crt').sort();
        assert.deepEqual(names(), ['a', 'b', 'c']);
        await put(`new-${initialState}`);
        await remove('b');
        await waitFor('the change to arrive', () => events.includes('deleted b'));
        assert.deepEqual(names(), ['a', 'c', `new-${initialState}`]);
        assert.deepEqual(events.filter((e) => !e.includes('kube-root-ca.crt')),
          ['added a', 'added b', 'added c', `added new-${initialState}`, 'deleted b']);
        assert.equal(calls[0], initialState === 'stream' ? 'watch' : 'list');
        assert.equal(calls.includes('list'), initialState === 'list', `calls made: ${calls.join(', ')}`);
      } finally {
        await subject.stop();
        await put('b');
        await remove(`new-${initialState}`);
      }
    });
  }

  it('stops at once when stopped just after its first list, before its watch opened', async () => {
    const { subject } = informer('list');
    subject.start();
    await subject.waitForSync();
    const stopped = subject.stop().then(() => 'stopped');
    const bound = new Promise((resolve) => setTimeout(resolve, 10_000, 'still running').unref());
    assert.equal(await Promise.race([stopped, bound]), 'stopped');
  });

  it('holds only the objects its readers select, and of each the union of the fields they read, or metadata only', async () => {
    const apply = (name: string, labels: Record<string, string>) => rest.json({ method: 'PATCH',
      path: `${configMaps()}/${name}`, query: { fieldManager: 'test' }, contentType: 'application/apply-patch+yaml',
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { x: '1', y: '2', z: '3' } } });
    await apply('picked', { tier: 'gold' });
    await apply('other', {});
    const cache = new Cache(reader(), new Metrics(), createLogger('error'));
    const gold = { labelSelector: 'tier=gold' };
    const selected = cache.informer<KubeObject & { data?: object }>(types.configMaps, namespace, reader(),
      { ...gold, keep: ['data.x'] });
    assert.equal(cache.informer(types.configMaps, namespace, reader(), { ...gold, keep: ['data.y'] }), selected);
    const all = cache.informer<KubeObject & { data?: object }>(types.configMaps, namespace, reader(), { keep: ['data.z'] });
    const metadata = cache.informer<KubeObject & { kind?: string }>(types.configMaps, namespace, reader(),
      { labelSelector: 'tier', keep: [] });
    const deleted: string[] = [];
    selected.addHandler({ deleted: (o) => deleted.push(o.metadata.name) });
    cache.start();
    try {
      await cache.waitForSync();
      assert.deepEqual(selected.list().map((o) => [o.metadata.name, o.data]), [['picked', { x: '1', y: '2' }]]);
      assert.deepEqual(all.listNamespace(namespace).find((o) => o.metadata.name === 'other')?.data, { z: '3' });
      assert.deepEqual(metadata.list().map((o) => [o.kind, o.metadata.labels, 'data' in o]),
        [['PartialObjectMetadata', { tier: 'gold' }, false]], 'with no field kept, the apiserver sends metadata only');
      assert.throws(() => cache.informer(types.configMaps, namespace, reader(), { ...gold, keep: ['immutable'] }),
        /asked for more fields than the started cache keeps/);
      await apply('picked', { tier: 'silver' });
      await waitFor('the unselected object to leave the cache', () => deleted.includes('picked'));
      assert.deepEqual(selected.list(), []);
    } finally {
      await cache.stop();
      await remove('picked');
      await remove('other');
    }
  });
});
