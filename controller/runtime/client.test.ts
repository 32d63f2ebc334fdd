import assert from 'node:assert/strict';
import { it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { Client, UndeclaredCallError } from './client.ts';
import { RestClient } from './rest.ts';
import { types } from './resources.ts';

it('refuses, before sending, any call its caller did not declare', async () => {
  const config = new KubeConfig();
  config.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }], users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  const client = new Client(new RestClient(config), [
    { group: '', resource: 'pods', verbs: ['get', 'list'], reason: 'test' },
    { group: '', resource: 'pods/log', verbs: ['get'], reason: 'test' },
  ], 'test');
  assert.doesNotThrow(() => client.check(types.pods, 'list'));
  assert.doesNotThrow(() => client.check(types.pods, 'get', 'log'));
  await assert.rejects(client.delete(types.pods, 'ns', 'p'), (error: unknown) => error instanceof UndeclaredCallError &&
    /undeclared API call: delete core\/pods; add it to the permissions the caller declares/.test(error.message));
  assert.throws(() => client.check(types.pods, 'update', 'ephemeralcontainers'), /update core\/pods\/ephemeralcontainers/);
  assert.throws(() => client.check(types.deployments, 'get'), /get apps\/deployments/);
});

it('refuses a cluster behind a proxy-url rather than going around the proxy', () => {
  const config = new KubeConfig();
  config.loadFromOptions({ clusters: [{ name: 'c', server: 'https://127.0.0.1:1', proxyUrl: 'http://127.0.0.1:3128' }],
    users: [{ name: 'u' }], contexts: [{ name: 'x', cluster: 'c', user: 'u' }], currentContext: 'x' });
  assert.throws(() => new RestClient(config), /cluster c sets proxy-url, which Keelson does not support/);
});
