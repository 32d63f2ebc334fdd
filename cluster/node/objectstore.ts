// An S3-compatible object store beside the real node, for what stores objects (PostgreSQL's WAL archive and base
// backups): Versity's gateway over a directory in the cluster's folder, built from its Go module like the rest. It
// serves TLS with a certificate from the cluster's CA (which every namespace has as ConfigMap kube-root-ca.crt), on
// the node's address, behind a Service: https://objectstore.keelson-local.svc.cluster.local. Its credentials are made per cluster
// and kept in a Secret there; one bucket, keelson, exists from the start.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ComponentSpec } from '../components.ts';
import { nodeNetwork } from './host.ts';

const run = promisify(execFile);

export const objectStoreNamespace = 'keelson-local';
const serviceName = 'objectstore';
export const objectStoreBucket = 'keelson';
/** The Secret in objectStoreNamespace with the store's keys, under the names the AWS tools read. */
export const objectStoreSecret = 'objectstore-credentials';
/** Names the certificate is valid for: the Service, and the node's address. */
export const objectStoreNames = [`DNS:${serviceName}.${objectStoreNamespace}.svc`,
  `DNS:${serviceName}.${objectStoreNamespace}.svc.cluster.local`, `IP:${nodeNetwork.ip}`];

export interface ObjectStoreCredentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** Where clients find the store, for ClusterState. */
export interface ObjectStore {
  /** From pods: the Service. */
  endpoint: string;
  /** From this machine: the node's address and the server's port. */
  hostEndpoint: string;
  bucket: string;
  region: string;
  /** A JSON file (mode 0600) with the ObjectStoreCredentials. */
  credentialsFile: string;
  /** The CA that signed its certificate: the cluster's. */
  ca: string;
}

export interface ObjectStoreLayout {
  dir: string;
  bin: string;
  port: number;
  ca: string;
  tls: { cert: string; key: string };
}

const region = 'us-east-1';

function storeDir(dir: string): string {
  return join(dir, 'objectstore');
}

/** Makes the store's credentials and data directory; returns its component and where clients find it. */
export async function objectStoreComponent(layout: ObjectStoreLayout):
Promise<{ component: ComponentSpec; store: ObjectStore }> {
  const files = storeDir(layout.dir);
  await mkdir(join(files, 'data'), { recursive: true, mode: 0o700 });
  await mkdir(join(files, 'metadata'), { recursive: true, mode: 0o700 });
  const credentials: ObjectStoreCredentials = {
    accessKeyId: `keelson${randomBytes(6).toString('hex')}`,
    secretAccessKey: randomBytes(24).toString('base64url'),
  };
  const credentialsFile = join(files, 'credentials.json');
  await writeFile(credentialsFile, JSON.stringify(credentials), { mode: 0o600 });
  const hostEndpoint = `https://${nodeNetwork.ip}:${layout.port}`;
  return {
    component: {
      name: 'objectstore', command: join(layout.bin, 'versitygw'),
      args: ['--port', `${nodeNetwork.ip}:${layout.port}`, '--cert', layout.tls.cert, '--key', layout.tls.key,
        // Metadata in files beside the data: the posix backend's default, extended attributes, is missing where
        // the cluster's folder is on tmpfs (before Linux 6.6), NFS or ZFS without xattrs.
        '--region', region, '--health', '/health', 'posix', '--sidecar', join(files, 'metadata'), join(files, 'data')],
      // In the environment, not the arguments, which anyone on the machine can read.
      env: { ROOT_ACCESS_KEY_ID: credentials.accessKeyId, ROOT_SECRET_ACCESS_KEY: credentials.secretAccessKey },
      health: `${hostEndpoint}/health`,
    },
    store: { endpoint: `https://${serviceName}.${objectStoreNamespace}.svc.cluster.local`, hostEndpoint, bucket: objectStoreBucket,
      region, credentialsFile, ca: layout.ca },
  };
}

export async function readCredentials(store: ObjectStore): Promise<ObjectStoreCredentials> {
  return JSON.parse(await readFile(store.credentialsFile, 'utf8')) as ObjectStoreCredentials;
}

/**
 * A signed request to the store from this machine (curl signs it with AWS Signature Version 4); resolves with the body.
 * The keys reach curl on its standard input, never in its arguments, and no error repeats them.
 */
export async function s3Request(store: ObjectStore, method: string, path: string, body?: string): Promise<string> {
  const { accessKeyId, secretAccessKey } = await readCredentials(store);
  const scratch = await mkdtemp(join(tmpdir(), 'keelson-s3-'));
  try {
    if (body !== undefined) await writeFile(join(scratch, 'body'), body);
    const request = run('curl', ['--silent', '--show-error', '--fail-with-body', '--cacert', store.ca, '--config', '-',
      '--aws-sigv4', `aws:amz:${store.region}:s3`, '-H', 'x-amz-content-sha256: UNSIGNED-PAYLOAD', '-X', method,
      ...(body === undefined ? [] : ['--data-binary', `@${join(scratch, 'body')}`]), `${store.hostEndpoint}${path}`],
    { timeout: 30_000 });
    // curl may exit before reading its input (EPIPE); its exit status says what happened.
    request.child.stdin!.on('error', () => {});
    request.child.stdin!.end(`user = "${accessKeyId}:${secretAccessKey}"\n`);
    return (await request.catch((error: { code?: string | number; signal?: string; stdout?: string; stderr?: string }) => {
      const cause = error.signal ? `curl was stopped by ${error.signal}` : typeof error.code === 'string'
        ? `curl: ${error.code}` : `curl exited with ${error.code}`;
      throw new Error(`${method} ${path} on the object store failed (${cause}): ${error.stderr?.trim() ?? ''} ` +
        `${error.stdout ?? ''}`.trim());
    })).stdout;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The Service pods reach the store by, the Secret with its keys, and its bucket. */
export async function objectStoreObjects(store: ObjectStore, port: number): Promise<object[]> {
  const { accessKeyId, secretAccessKey } = await readCredentials(store);
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: objectStoreNamespace } },
    { apiVersion: 'v1', kind: 'Service', metadata: { name: serviceName, namespace: objectStoreNamespace },
      spec: { ports: [{ name: 'https', port: 443, targetPort: port, protocol: 'TCP' }] } },
    // The store runs on the host, at the node's address: its endpoints are given, not selected.
    { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: `${serviceName}-host`,
      namespace: objectStoreNamespace, labels: { 'kubernetes.io/service-name': serviceName,
        'endpointslice.kubernetes.io/managed-by': 'keelson-local-cluster' } },
    addressType: 'IPv4', endpoints: [{ addresses: [nodeNetwork.ip], conditions: { ready: true } }],
    ports: [{ name: 'https', port, protocol: 'TCP' }] },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: objectStoreSecret, namespace: objectStoreNamespace },
      type: 'Opaque', stringData: { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey } },
  ];
}

/** Makes the store's one bucket. */
export async function createBucket(store: ObjectStore): Promise<void> {
  await s3Request(store, 'PUT', `/${store.bucket}`);
}
