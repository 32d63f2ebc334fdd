// The REST client against the real apiserver: reading credentials again (as it does every minute, for rotated
// tokens and certificates) must not drop open connections when the credentials are the same; a request the apiserver
// throttles is sent again when it says; one whose headers never come is given up, in its time even while it waits for
// a connection.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { freshNamespace, testCluster } from '../../test/support/cluster.ts';
import { waitFor } from '../../cluster/wait.ts';
import { Client } from './client.ts';
import { RestClient } from './rest.ts';
import { pathOf, types } from './resources.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
let scratch: string;
before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'rest'));
  scratch = await mkdtemp(join(tmpdir(), 'keelson-rest-test-'));
});
after(async () => {
  await rm(scratch, { recursive: true, force: true });
  await cleanup();
});

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

it('patches an object that may be gone: undefined when it is, not an error', async () => {
  const config = new KubeConfig();
  config.loadFromFile(cluster.state.kubeconfig);
  const rest = new RestClient(config, 'keelson-test');
  const client = new Client(rest, [{ group: '', resource: 'configmaps', verbs: ['create', 'patch'], reason: 'test' }], 'test');
  try {
    const marks = { metadata: { annotations: { marked: null } } };
    assert.equal(await client.patchIfPresent(types.configMaps, namespace, 'never-was', marks, 'merge'), undefined);
    await client.create(types.configMaps, { metadata: { name: 'is', namespace } });
    const patched = await client.patchIfPresent(types.configMaps, namespace, 'is', { metadata: { labels: { a: 'b' } } }, 'merge');
    assert.equal(patched?.metadata.labels?.a, 'b');
  } finally {
    rest.close();
  }
});

it('waits as a 429 from priority and fairness asks (Retry-After), then gets its answer', async () => {
  // One ServiceAccount gets a priority level of zero seats that rejects instead of queueing: a request of its runs
  // only while none of its others does. A validating webhook on this machine holds one of its creates open.
  const pki = join(cluster.state.dir, 'pki');
  const name = `keelson-${namespace}`;
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  let held = false;
  const hook = createServer({ cert: await readFile(join(pki, 'apiserver.crt')), key: await readFile(join(pki, 'apiserver.key')) },
    (req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk)).on('end', async () => {
        const review = JSON.parse(body);
        if (review.request.name === 'held') {
          held = true;
          await released;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } }));
      });
    });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const account = 'throttled';
  const clusterObjects = [`flowschema/${name}`, `prioritylevelconfiguration/${name}`, `validatingwebhookconfiguration/${name}`];
  try {
    await cluster.kubectl(['create', 'serviceaccount', account, '-n', namespace]);
    await cluster.kubectl(['create', 'rolebinding', account, '-n', namespace, '--clusterrole=edit',
      `--serviceaccount=${namespace}:${account}`]);
    const labels = { 'keelson.dev/held': 'yes' };
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name },
        spec: { type: 'Limited', limited: { nominalConcurrencyShares: 0, lendablePercent: 0, borrowingLimitPercent: 0,
          limitResponse: { type: 'Reject' } } } },
      { apiVersion: 'flowcontrol.apiserver.k8s.io/v1', kind: 'FlowSchema', metadata: { name },
        spec: { priorityLevelConfiguration: { name }, matchingPrecedence: 100, rules: [{
          subjects: [{ kind: 'ServiceAccount', serviceAccount: { name: account, namespace } }],
          resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'], clusterScope: true }] }] } },
      { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name },
        webhooks: [{ name: 'held.keelson.dev', admissionReviewVersions: ['v1'], sideEffects: 'None', timeoutSeconds: 30,
          failurePolicy: 'Fail', objectSelector: { matchLabels: labels },
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          clientConfig: { url: `https://127.0.0.1:${(hook.address() as { port: number }).port}/`,
            caBundle: (await readFile(join(pki, 'ca.crt'))).toString('base64') } }] },
    ] }) });
    const config = new KubeConfig();
    config.loadFromFile(await cluster.serviceAccountKubeconfig(namespace, account, join(scratch, 'throttled.kubeconfig')));
    const throttled = new RestClient(config, 'keelson-test');
    const list = { method: 'GET', path: pathOf(types.configMaps, namespace) };
    try {
      const level = JSON.parse((await cluster.kubectl(['get', 'prioritylevelconfiguration', name, '-o', 'json'])).stdout).metadata.uid;
      await waitFor('the account\'s requests to meet its priority level', async () =>
        (await throttled.open(list)).resume().headers['x-kubernetes-pf-prioritylevel-uid'] === level);
      const holding = throttled.json({ method: 'POST', path: pathOf(types.configMaps, namespace),
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'held', labels } } });
      holding.catch(() => undefined); // awaited below; a failure above must not surface as this one's
      await waitFor('the webhook to hold a create', () => held);
      const started = performance.now();
      const answered = throttled.json<{ items: unknown[] }>(list);
      setTimeout(release, 1_500);
      assert.ok(Array.isArray((await answered).items));
      const waited = performance.now() - started;
      assert.ok(waited >= 1_000, `answered after ${waited.toFixed(0)} ms: the 429 was not waited out`);
      await holding;
    } finally {
      release();
      throttled.close();
    }
  } finally {
    await cluster.kubectl(['delete', ...clusterObjects, '--ignore-not-found']);
    await new Promise((resolve) => hook.close(resolve));
  }
});

/** A server on this machine that accepts requests and says nothing, as a hung peer or a proxy whose backend is gone. */
async function quietServer(): Promise<{ rest: RestClient; close: () => Promise<void> }> {
  const pki = join(cluster.state.dir, 'pki');
  const server = createServer({ cert: await readFile(join(pki, 'apiserver.crt')), key: await readFile(join(pki, 'apiserver.key')) },
    (req, res) => {
      if (req.url !== '/slow') return;
      res.writeHead(200, { 'Content-Type': 'application/json' }).flushHeaders();
      setTimeout(() => res.end('late\n'), 2_500);
    });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const config = new KubeConfig();
  config.loadFromOptions({ clusters: [{ name: 'quiet', server: `https://127.0.0.1:${(server.address() as { port: number }).port}`,
    caFile: join(pki, 'ca.crt') }], users: [{ name: 'nobody' }], contexts: [{ name: 'quiet', cluster: 'quiet', user: 'nobody' }],
  currentContext: 'quiet' });
  const rest = new RestClient(config, 'keelson-test');
  return { rest, close: async () => {
    rest.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  } };
}

it('gives up on a request whose response headers do not come, and not on a body that takes its time', async () => {
  const { rest, close } = await quietServer();
  try {
    // Bounded by a signal of its own, so that a client without the timeout fails here rather than hangs the file.
    await assert.rejects(rest.open({ method: 'GET', path: '/silent', headersTimeoutMs: 1_000,
      signal: AbortSignal.timeout(10_000) }), /no response headers in 1000ms/);
    const slow = await rest.open({ method: 'GET', path: '/slow', headersTimeoutMs: 1_000 });
    let body = '';
    for await (const chunk of slow) body += chunk;
    assert.equal(body, 'late\n');
  } finally {
    await close();
  }
});

it('gives up on a request in its time even while it waits for one of the connections, all held by hung requests', async () => {
  const { rest, close } = await quietServer();
  const hung = new AbortController();
  try {
    const holding = Array.from({ length: 64 }, () =>
      rest.open({ method: 'GET', path: '/silent', signal: hung.signal }).catch(() => undefined));
    const started = performance.now();
    await assert.rejects(rest.json({ method: 'GET', path: '/silent', timeoutMs: 1_000, signal: AbortSignal.timeout(10_000) }),
      /no answer in 1000ms/);
    assert.ok(performance.now() - started < 5_000, 'given up about its timeout after the call');
    hung.abort();
    await Promise.all(holding);
  } finally {
    hung.abort();
    await close();
  }
});
