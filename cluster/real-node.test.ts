// The real node as a user meets it: containers that run, logs, exec, debug containers, crash loops, volumes that
// keep data, Services and DNS between pods, the object store.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { freshNamespace, testCluster } from '../test/support/cluster.ts';
import { javaAppImage, postgresImage } from '../images/recipes.ts';
import { isReady, waitForPod, withoutRealNode } from '../test/support/real-node.ts';
import { waitFor } from './wait.ts';
import { s3Request, type ObjectStore } from './node/objectstore.ts';

const runFile = promisify(execFile);
const cluster = testCluster();
const tools = 'keelson.local/tools:1';
let namespace: string;
let cleanup: () => Promise<void>;

function pod(name: string, spec: object): object {
  // sleep as PID 1 ignores SIGTERM: a short grace period keeps deletions quick.
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels: { app: name } },
    spec: { terminationGracePeriodSeconds: 1, ...spec } };
}

function container(name: string, command: string, extra: object = {}): object {
  return { name, image: tools, imagePullPolicy: 'Never', command: ['sh', '-c', command], ...extra };
}

async function apply(...objects: object[]): Promise<void> {
  await cluster.kubectl(['apply', '-n', namespace, '-f', '-'],
    { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) });
}

async function kubectl(...args: string[]): Promise<string> {
  return (await cluster.kubectl(['-n', namespace, ...args])).stdout;
}

const running = (pod: any) => pod.status?.phase === 'Running' && isReady(pod);

describe('the real node', { skip: withoutRealNode(cluster) }, () => {
  before(async () => {
    ({ name: namespace, cleanup } = await freshNamespace(cluster, 'real-node', { pods: 'real' }));
  });
  after(() => cleanup?.());

  it('runs a container whose output kubectl logs shows and into which kubectl exec runs commands', async () => {
    await apply(pod('hello', { containers: [container('app', 'echo "hello from $(hostname)"; exec sleep 3600')] }));
    const ready = await waitForPod(cluster, namespace, 'hello', 'Running and Ready', running);
    assert.equal(ready.spec.nodeName, (cluster.state.realNode as { name: string }).name);
    await waitFor('the container log', async () => (await kubectl('logs', 'hello')).includes('hello from hello'));
    assert.equal((await kubectl('exec', 'hello', '--', 'sh', '-c', 'echo $((6 * 7))')).trim(), '42');
  });

  it('lists the target container\'s processes from a debug container (kubectl debug --target)', async () => {
    await waitForPod(cluster, namespace, 'hello', 'Running', running);
    await kubectl('debug', 'hello', `--image=${tools}`, '--image-pull-policy=Never', '--profile=general',
      '--target=app', '-c', 'debugger',
      '--', 'ps', '-o', 'pid,args');
    const listing = await waitFor('the debug container\'s process list', async () => {
      const log = await kubectl('logs', 'hello', '-c', 'debugger');
      return log.includes('sleep 3600') ? log : undefined;
    }, { timeoutMs: 60_000 });
    assert.match(listing, /^\s*1\s+sleep 3600$/m, 'the target\'s process is PID 1 of the shared namespace');
  });

  it('keeps a crash-looping container\'s previous log for kubectl logs --previous', async () => {
    await apply(pod('crasher', { containers: [container('app', 'echo "attempt at $(date +%s)"; echo "fatal: no config"; exit 3')] }));
    // Once it has restarted, the previous instance's log is there. The status reads CrashLoopBackOff only for moments
    // of each back-off (terminated the rest), which a loaded machine's polls can miss every time; and the kubelet may
    // answer "unable to retrieve container logs" for a moment after a crash: a user asks again.
    // What was last seen, for the failure's message: the container's status and what kubectl answered.
    let seen: object = {};
    const previous = await waitFor('kubectl logs --previous of a restarted container', async () => {
      const pod = await cluster.getJson(namespace, 'pod', 'crasher');
      const status = pod?.status?.containerStatuses?.[0];
      seen = { restartCount: status?.restartCount, state: status?.state, lastState: status?.lastState };
      if (!(status?.restartCount >= 1) || !status.lastState?.terminated) return undefined;
      const log = await kubectl('logs', 'crasher', '--previous').catch((error: Error) => `(failed) ${error.message}`);
      seen = { ...seen, log };
      return log.includes('fatal: no config') ? { log, exitCode: status.lastState.terminated.exitCode } : undefined;
    }, { timeoutMs: 150_000, intervalMs: 1_000 }).catch((error: Error) => {
      throw new Error(`${error.message}; last seen: ${JSON.stringify(seen)}`);
    });
    assert.match(previous.log, /^attempt at \d+\nfatal: no config\n$/);
    assert.equal(previous.exitCode, 3);
  });

  it('shares an emptyDir between containers, and keeps a PersistentVolumeClaim\'s data across the pod\'s deletion', async () => {
    const claim = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } } } };
    const withVolumes = (name: string, write: string) => pod(name, {
      containers: [
        container('writer', `${write}; echo shared > /scratch/note; exec sleep 3600`,
          { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }, { name: 'data', mountPath: '/data' }] }),
        container('reader', 'exec sleep 3600', { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }),
      ],
      volumes: [{ name: 'scratch', emptyDir: {} }, { name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
    });
    await apply(claim, withVolumes('first', 'echo "written by first" > /data/kept'));
    await waitForPod(cluster, namespace, 'first', 'Running', running);
    assert.equal((await kubectl('exec', 'first', '-c', 'reader', '--', 'cat', '/scratch/note')).trim(), 'shared');
    const bound = await cluster.getJson(namespace, 'pvc', 'data');
    assert.equal(bound.status.phase, 'Bound');
    assert.equal(bound.spec.storageClassName, 'local-path', 'the default StorageClass provisioned it');

    await kubectl('delete', 'pod', 'first', '--wait=true');
    await apply(withVolumes('second', 'true'));
    await waitForPod(cluster, namespace, 'second', 'Running', running);
    assert.equal((await kubectl('exec', 'second', '-c', 'writer', '--', 'cat', '/data/kept')).trim(), 'written by first');
  });

  it('reaches a Service by its DNS name from another pod', async () => {
    await apply(
      pod('web', { containers: [{ name: 'web', image: 'keelson.local/hello-world:1', imagePullPolicy: 'Never',
        ports: [{ containerPort: 8000 }], readinessProbe: { httpGet: { path: '/', port: 8000 }, periodSeconds: 1 } }] }),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8000 }] } },
      pod('client', { containers: [container('client', 'exec sleep 3600')] }),
    );
    await waitForPod(cluster, namespace, 'web', 'Ready', running);
    await waitForPod(cluster, namespace, 'client', 'Running', running);
    const page = await waitFor('the Service to answer through its DNS name', async () => {
      // BusyBox's own wget -T crashes (SIGSEGV) in Debian's static build: timeout bounds it instead.
      const result = await cluster.kubectl(['-n', namespace, 'exec', 'client', '--', 'timeout', '5', 'wget', '-qO-',
        `http://web.${namespace}.svc.cluster.local/`], { allowFailure: true });
      return result.code === 0 ? result.stdout : undefined;
    }, { timeoutMs: 60_000 });
    assert.equal(page, '<pre>Hello World</pre>\n');
  });

  it('serves an S3 bucket to signed requests only, from this machine and through its Service from pods', async (t) => {
    const { objectStore: store } = cluster.state.realNode as { objectStore?: ObjectStore };
    if (!store) return t.skip('this cluster was started before it had an object store: npm run cluster -- down, then up');
    const key = `/${store.bucket}/${namespace}/greeting`;
    await s3Request(store, 'PUT', key, 'hello from the object store');
    assert.equal(await s3Request(store, 'GET', key), 'hello from the object store');
    assert.match(await s3Request(store, 'GET', `/${store.bucket}?list-type=2&prefix=${encodeURIComponent(`${namespace}/`)}`),
      new RegExp(`<Key>${namespace}/greeting</Key>`));
    // Verified against the cluster's CA, but unsigned: refused.
    const unsigned = await runFile('curl', ['--silent', '--cacert', store.ca, '--write-out', '%{http_code}',
      '--output', '/dev/null', `${store.hostEndpoint}${key}`]);
    assert.equal(unsigned.stdout, '403');
    // The certificate names the Service as pods call it, verified against the CA they have (kube-root-ca.crt).
    const { hostname: address, port } = new URL(store.hostEndpoint);
    const serviceHost = new URL(store.endpoint).hostname;
    const rootCa = (await cluster.kubectl(['get', 'configmap', 'kube-root-ca.crt', '-n', namespace, '-o',
      'jsonpath={.data.ca\\.crt}'])).stdout;
    assert.equal(rootCa.trim(), (await readFile(store.ca, 'utf8')).trim());
    const health = await runFile('curl', ['--silent', '--show-error', '--cacert', store.ca, '--resolve',
      `${serviceHost}:${port}:${address}`, `https://${serviceHost}:${port}/health`]);
    assert.equal(health.stderr, '');
    await s3Request(store, 'DELETE', key);
    assert.doesNotMatch(await s3Request(store, 'GET', `/${store.bucket}?list-type=2&prefix=${encodeURIComponent(`${namespace}/`)}`),
      /<Key>/);
    await waitForPod(cluster, namespace, 'client', 'Running', running);
    await waitFor('the object store to answer through its Service', async () => {
      const result = await cluster.kubectl(['-n', namespace, 'exec', 'client', '--', 'sh', '-c',
        `timeout 5 nc -w 3 ${new URL(store.endpoint).hostname} 443 </dev/null`], { allowFailure: true });
      return result.code === 0 || undefined;
    }, { timeoutMs: 60_000 });
  });

  it('runs PostgreSQL from Debian in the image built here, answering psql from another pod through its Service', async () => {
    const image = await cluster.loadImage(postgresImage);
    const server = pod('postgres', {
      securityContext: { runAsUser: 999, runAsGroup: 999, fsGroup: 999 },
      containers: [{ name: 'postgres', image, imagePullPolicy: 'Never', command: ['sh', '-c',
        'initdb -D /data/pg -U postgres --auth=trust >/dev/null && ' +
        'echo "host all all 10.250.0.0/24 trust" >> /data/pg/pg_hba.conf && ' +
        'exec postgres -D /data/pg -c "listen_addresses=*" -c unix_socket_directories=/tmp'],
      ports: [{ containerPort: 5432 }], volumeMounts: [{ name: 'data', mountPath: '/data' }],
      readinessProbe: { exec: { command: ['pg_isready', '-h', '/tmp'] }, periodSeconds: 1 } }],
      volumes: [{ name: 'data', emptyDir: {} }],
    });
    await apply(server, { apiVersion: 'v1', kind: 'Service', metadata: { name: 'postgres' },
      spec: { selector: { app: 'postgres' }, ports: [{ port: 5432 }] } },
    pod('psql', { containers: [{ name: 'psql', image, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] }));
    await waitForPod(cluster, namespace, 'postgres', 'Ready', running, { timeoutMs: 120_000 });
    await waitForPod(cluster, namespace, 'psql', 'Running', running);
    const answer = await waitFor('a query through the Service', async () => {
      const result = await cluster.kubectl(['-n', namespace, 'exec', 'psql', '--', 'psql', '-h', 'postgres', '-U', 'postgres',
        '-tAc', 'select version()'], { allowFailure: true });
      if (result.code !== 0) throw new Error(result.stderr);
      return result.stdout;
    }, { timeoutMs: 60_000 });
    assert.match(answer, /^PostgreSQL 15\.\d+ \(Debian/);
  });

  it('runs a JVM application from the image built here, answering HTTP from another pod', async () => {
    const image = await cluster.loadImage(javaAppImage);
    await apply(pod('java-app', { containers: [{ name: 'app', image, imagePullPolicy: 'Never',
      ports: [{ containerPort: 8080 }], readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 } }] }));
    const ready = await waitForPod(cluster, namespace, 'java-app', 'Ready', running, { timeoutMs: 120_000 });
    await waitForPod(cluster, namespace, 'client', 'Running', running);
    const page = await waitFor('the JVM to answer', async () => {
      const result = await cluster.kubectl(['-n', namespace, 'exec', 'client', '--', 'timeout', '5', 'wget', '-qO-',
        `http://${ready.status.podIP}:8080/`], { allowFailure: true });
      return result.code === 0 ? result.stdout : undefined;
    }, { timeoutMs: 60_000 });
    assert.match(page, /^java-app on 17\./);
  });
});
