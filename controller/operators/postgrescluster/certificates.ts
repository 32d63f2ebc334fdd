// The X.509 side of a cluster's TLS: a CA the operator keeps per cluster and the server certificate it signs, or a
// user's certificate, checked before any member is given it. Node makes the keys and reads certificates back
// (X509Certificate); node-forge, the field's pure-JS toolkit, builds them, which Node's crypto cannot. It is loaded
// only when a certificate is issued.
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, X509Certificate } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:tls';
import { promisify } from 'node:util';

/** A certificate and its private key, PEM. */
export interface Issued {
  cert: string;
  key: string;
}

const day = 86_400_000;
/** The CA's lifetime: a new CA means every client re-reads it, so it is long, and renewed in the same way. */
export const caLifetimeMs = 3650 * day;
/** The server certificate's lifetime; renewed (renewalDue) 30 days before it ends, as cert-manager does by default. */
export const serverLifetimeMs = 90 * day;
/** Clocks of other machines may be behind this one's. */
const backdateMs = 5 * 60_000;

/** A new RSA key, or the public half of `kept`. */
async function rsaKey(kept?: string): Promise<{ publicPem: string; privatePem: string }> {
  if (kept) return { publicPem: createPublicKey(kept).export({ type: 'spki', format: 'pem' }) as string, privatePem: kept };
  const { publicKey, privateKey } = await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
  return { publicPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    privatePem: privateKey.export({ type: 'pkcs1', format: 'pem' }) as string };
}

async function sign(subject: string, issuer: Issued | 'self', lifetimeMs: number, now: number,
  extensions: (issuerKeyId: string) => object[], keptKey?: string): Promise<Issued> {
  const { default: forge } = await import('node-forge');
  const { pki, md } = forge;
  const keys = await rsaKey(keptKey);
  const cert = pki.createCertificate();
  cert.publicKey = pki.publicKeyFromPem(keys.publicPem);
  // Positive, 128 bits of randomness: serial numbers must not repeat under one issuer.
  cert.serialNumber = `01${randomBytes(16).toString('hex')}`;
  cert.validity.notBefore = new Date(now - backdateMs);
  cert.validity.notAfter = new Date(now + lifetimeMs);
  cert.setSubject([{ name: 'commonName', value: subject }]);
  const issuerCert = issuer === 'self' ? cert : pki.certificateFromPem(issuer.cert);
  cert.setIssuer(issuerCert.subject.attributes);
  cert.setExtensions([...extensions(issuerCert.generateSubjectKeyIdentifier().getBytes()), { name: 'subjectKeyIdentifier' }]);
  cert.sign(pki.privateKeyFromPem(issuer === 'self' ? keys.privatePem : issuer.key), md.sha256.create());
  return { cert: pki.certificateToPem(cert), key: keys.privatePem };
}

/**
 * A cluster's own CA, which signs its server certificates and nothing else (path length 0). Renewed on the key it
 * had (`keptKey`), the CA certificate clients hold from before still verifies what the new one signs.
 */
export function issueCa(commonName: string, now = Date.now(), keptKey?: string): Promise<Issued> {
  return sign(commonName, 'self', caLifetimeMs, now, (keyId) => [
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'authorityKeyIdentifier', keyIdentifier: keyId },
  ], keptKey);
}

function issueLeaf(ca: Issued, commonName: string, dnsNames: string[], clientAuth: boolean, now: number,
  lifetimeMs: number): Promise<Issued> {
  return sign(commonName, ca, lifetimeMs, now, (keyId) => [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, ...(clientAuth ? { clientAuth: true } : {}) },
    { name: 'subjectAltName', altNames: dnsNames.map((value) => ({ type: 2, value })) },
    { name: 'authorityKeyIdentifier', keyIdentifier: keyId },
  ]);
}

/** A server certificate for `dnsNames` (the first is its common name too), signed by `ca`. */
export function issueServer(ca: Issued, dnsNames: string[], now = Date.now(), lifetimeMs = serverLifetimeMs): Promise<Issued> {
  return issueLeaf(ca, dnsNames[0]!, dnsNames, false, now, lifetimeMs);
}

/**
 * A certificate both ends of a mutual TLS connection present (pgBackRest's between members): it serves `dnsNames`,
 * and `commonName` is who it is as a client.
 */
export function issuePeer(ca: Issued, commonName: string, dnsNames: string[], now = Date.now(),
  lifetimeMs = caLifetimeMs): Promise<Issued> {
  return issueLeaf(ca, commonName, dnsNames, true, now, lifetimeMs);
}

/** The certificates in a PEM bundle, in order. */
export function certificatesOf(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []).map((c) => new X509Certificate(c));
}

/** Past two thirds of its life, or over: a certificate to issue again. */
export function renewalDue(cert: X509Certificate, now = Date.now()): boolean {
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return now >= from + ((to - from) * 2) / 3;
}

/**
 * What is wrong with a server certificate (`tls.crt`, its chain after it), key and CA bundle for serving `names`
 * now; nothing when a client verifying the full name against the bundle accepts it. What can be read off the
 * certificates is said plainly; the rest is what OpenSSL says in a handshake on loopback, as libpq's would.
 */
export async function serverProblems(pems: { cert?: string; key?: string; ca?: string }, names: string[],
  now = Date.now()): Promise<string[]> {
  const missing = (['cert', 'key', 'ca'] as const).filter((k) => !pems[k]?.trim());
  if (missing.length) return missing.map((k) => `no ${{ cert: 'tls.crt', key: 'tls.key', ca: 'ca.crt' }[k]}`);
  let chain: X509Certificate[];
  let authorities: X509Certificate[];
  try {
    chain = certificatesOf(pems.cert!);
    authorities = certificatesOf(pems.ca!);
  } catch (error) {
    return [`a certificate cannot be read: ${(error as Error).message}`];
  }
  if (!chain.length) return ['tls.crt holds no PEM certificate'];
  if (!authorities.length) return ['ca.crt holds no PEM certificate'];
  const problems: string[] = [];
  const leaf = chain[0]!;
  try {
    if (!leaf.checkPrivateKey(createPrivateKey(pems.key!))) problems.push('tls.key is not the key of tls.crt');
  } catch (error) {
    problems.push(`tls.key cannot be read: ${(error as Error).message}`);
  }
  const signedBy = (cert: X509Certificate, issuer: X509Certificate) => cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  const linked = chain.every((cert, i) => i === chain.length - 1 || signedBy(cert, chain[i + 1]!));
  const last = chain[chain.length - 1]!;
  if (!linked || !authorities.some((ca) => last.fingerprint256 === ca.fingerprint256 || signedBy(last, ca))) {
    problems.push('tls.crt is not signed by a CA in ca.crt');
  }
  if (now < Date.parse(leaf.validFrom) || now >= Date.parse(leaf.validTo)) {
    problems.push(`tls.crt is valid from ${leaf.validFrom} to ${leaf.validTo} only`);
  }
  const uncovered = names.filter((name) => leaf.checkHost(name) === undefined);
  if (uncovered.length) problems.push(`tls.crt does not name ${uncovered.join(', ')}`);
  return problems.length ? problems : handshakeRefusals(pems as Required<typeof pems>, names);
}

/**
 * What OpenSSL, as Debian's PostgreSQL and libpq use it, says of this certificate and key (security level 2, their
 * default: no RSA key under 2048 bits, no SHA-1 signature): as a server, then as a client verifying each of `names`
 * against the CA bundle.
 */
async function handshakeRefusals(pems: Required<Parameters<typeof serverProblems>[0]>, names: string[]): Promise<string[]> {
  const ciphers = 'DEFAULT:@SECLEVEL=2';
  let server: ReturnType<typeof createServer>;
  try {
    server = createServer({ cert: pems.cert, key: pems.key, ciphers }, (socket) => socket.end());
  } catch (error) {
    return [`a server refuses it: ${(error as Error).message}`];
  }
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const refusals = await Promise.all((names.length ? names : [undefined]).map((name) => new Promise<string | undefined>(
      (resolve) => {
        const socket = connect({ host: '127.0.0.1', port, ca: pems.ca, servername: name, ciphers,
          ...(name ? {} : { checkServerIdentity: () => undefined }) }, () => {
          socket.destroy();
          resolve(undefined);
        });
        socket.setTimeout(5000, () => socket.destroy(new Error('no answer within 5 s')));
        socket.once('error', (error) => resolve(`a client refuses it: ${error.message}`));
      })));
    return [...new Set(refusals.filter((r) => r !== undefined))];
  } finally {
    server.close();
  }
}
