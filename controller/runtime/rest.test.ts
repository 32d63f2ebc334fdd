// The REST client against the real apiserver: reading credentials again (as it does every minute, for rotated
// tokens and certificates) must not drop open connections when the credentials are the same.
import assert from 'node:assert/strict';
import { createInterface } from 'node:readline';
import { after, before, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { waitFor } from '../../test/support/wait.ts';
import { RestClient } from './rest.ts';
import { pathOf, types } from './resources.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
before(async () => ({ name: namespace, cleanup } = await freshNamespace(cluster, 'rest')));
after(() => cleanup());

it('keeps an open watch when it reads unchanged credentials again', async () => {
  const config = new KubeConfig();
  config.loadFromFile(cluster.state.kubeconfig);
  const client = new RestClient(config, 'keelson-test', 0);
  const abort = new AbortController();
  try {
    const seen: string[] = [];
    const res = await client.open({ method: 'GET', path: pathOf(types.configMaps, namespace), query: { watch: 1 },
      signal: abort.signal });
    res.on('error', () => undefined);
    createInterface({ input: res }).on('error', () => undefined).on('line', (line) => seen.push((JSON.parse(line) as { object: { metadata: { name: string } } }).object.metadata.name));
    // Every call refreshes (authRefreshMs 0); this one also makes the ConfigMap the watch should report.
    await client.json({ method: 'POST', path: pathOf(types.configMaps, namespace),
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'after-refresh' } } });
    await waitFor('the watch to report the ConfigMap', () => seen.includes('after-refresh'), { timeoutMs: 10_000 });
    assert.equal(res.destroyed, false);
  } finally {
    abort.abort();
    client.close();
  }
});
