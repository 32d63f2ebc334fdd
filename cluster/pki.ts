import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { objectStoreNames } from './node/objectstore.ts';

const run = promisify(execFile);

/** File paths of a throwaway PKI for one local cluster. */
export interface Pki {
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  adminCert: string;
  adminKey: string;
  kubeletCert: string;
  kubeletKey: string;
  serviceAccountKey: string;
  serviceAccountPub: string;
  /** A real node's identities, when the cluster has one. */
  node?: NodePki;
}

export interface NodePki {
  /** The kubelet's client identity (system:node:NAME, for the Node authorizer). */
  kubeletClient: { cert: string; key: string };
  /** The kubelet's serving certificate, for its address on the cluster's bridge. */
  kubeletServing: { cert: string; key: string };
  kubeProxy: { cert: string; key: string };
  /** The object store's serving certificate. */
  objectStore: { cert: string; key: string };
}

const apiserverNames = [
  'DNS:localhost',
  'DNS:kubernetes',
  'DNS:kubernetes.default',
  'DNS:kubernetes.default.svc',
  'DNS:kubernetes.default.svc.cluster.local',
  'IP:127.0.0.1',
  'IP:0:0:0:0:0:0:0:1',
  'IP:10.0.0.1',
];

async function openssl(args: string[]): Promise<void> {
  await run('openssl', args, { timeout: 30_000 });
}

async function issue(
  dir: string,
  name: string,
  subject: string,
  extensions: string[],
  ca: { cert: string; key: string },
): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(ext, extensions.join('\n') + '\n');
  await openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', csr, '-subj', subject]);
  await openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key,
    '-set_serial', `0x${randomBytes(16).toString('hex')}`,
    '-days', '30', '-sha256', '-extfile', ext, '-out', cert]);
  await chmod(key, 0o600);
  return { cert, key };
}

/**
 * Makes a CA and the certificates and keys a local control plane needs, all in `dir`; with `node`, those of a real
 * node named `node.name` at `node.ip` too (which the apiserver then also serves on).
 */
export async function makePki(dir: string, node?: { name: string; ip: string }): Promise<Pki> {
  const ca = { cert: join(dir, 'ca.crt'), key: join(dir, 'ca.key') };
  await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', ca.key, '-out', ca.cert, '-days', '30', '-subj', '/CN=keelson-local-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await chmod(ca.key, 0o600);

  const leaf = ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment'];
  const serviceAccountKey = join(dir, 'service-account.key');
  const serviceAccountPub = join(dir, 'service-account.pub');
  const [apiserver, admin, kubelet] = await Promise.all([
    issue(dir, 'apiserver', '/CN=kube-apiserver',
      [...leaf, 'extendedKeyUsage=serverAuth',
        `subjectAltName=${[...apiserverNames, ...(node ? [`IP:${node.ip}`] : [])].join(',')}`], ca),
    issue(dir, 'admin', '/O=system:masters/CN=keelson-admin', [...leaf, 'extendedKeyUsage=clientAuth'], ca),
    issue(dir, 'kubelet', '/CN=kwok-kubelet',
      [...leaf, 'extendedKeyUsage=serverAuth,clientAuth', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], ca),
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', serviceAccountKey])
      .then(() => openssl(['pkey', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPub])),
  ]);
  await chmod(serviceAccountKey, 0o600);
  const client = [...leaf, 'extendedKeyUsage=clientAuth'];
  const nodePki = node && await Promise.all([
    issue(dir, 'node-kubelet-client', `/O=system:nodes/CN=system:node:${node.name}`, client, ca),
    issue(dir, 'node-kubelet-serving', `/CN=${node.name}`,
      [...leaf, 'extendedKeyUsage=serverAuth', `subjectAltName=DNS:${node.name},IP:${node.ip}`], ca),
    issue(dir, 'node-kube-proxy', '/CN=system:kube-proxy', client, ca),
    issue(dir, 'node-objectstore', '/CN=objectstore', [...leaf, 'extendedKeyUsage=serverAuth',
      `subjectAltName=${objectStoreNames.join(',')}`], ca),
  ]).then(([kubeletClient, kubeletServing, kubeProxy, objectStore]) =>
    ({ kubeletClient, kubeletServing, kubeProxy, objectStore }));
  return {
    ...(nodePki ? { node: nodePki } : {}),
    caCert: ca.cert,
    caKey: ca.key,
    apiserverCert: apiserver.cert,
    apiserverKey: apiserver.key,
    adminCert: admin.cert,
    adminKey: admin.key,
    kubeletCert: kubelet.cert,
    kubeletKey: kubelet.key,
    serviceAccountKey,
    serviceAccountPub,
  };
}
