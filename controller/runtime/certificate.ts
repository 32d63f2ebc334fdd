// A self-signed serving certificate, made at start-up when no certificate is given, as controller-runtime's secure
// metrics make one: an ECDSA P-256 key that never leaves the process, and an X.509 v3 certificate naming the hosts it
// serves. Node can sign but not build a certificate, so its few DER structures are written here.
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

const tag = { integer: 0x02, bitString: 0x03, octetString: 0x04, oid: 0x06, utf8String: 0x0c, sequence: 0x30, set: 0x31,
  generalizedTime: 0x18 } as const;

function der(type: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  const length: number[] = [];
  for (let n = body.length; n > 0; n >>>= 8) length.unshift(n & 0xff);
  const header = body.length < 0x80 ? [body.length] : [0x80 | length.length, ...length];
  return Buffer.concat([Buffer.from([type, ...header]), body]);
}

function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const bytes = [first! * 40 + second!];
  for (const arc of rest) {
    const groups = [arc & 0x7f];
    for (let value = arc >>> 7; value > 0; value >>>= 7) groups.unshift((value & 0x7f) | 0x80);
    bytes.push(...groups);
  }
  return der(tag.oid, Buffer.from(bytes));
}

/**
 * A random positive INTEGER of 16 bytes. Its first byte is kept between 0x40 and 0x7f: DER forbids a leading zero byte
 * (OpenSSL and Go refuse such a certificate) and a set top bit would make it negative.
 */
function serialNumber(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x3f) | 0x40;
  return der(tag.integer, bytes);
}
const time = (date: Date) => der(tag.generalizedTime, Buffer.from(`${date.toISOString().replace(/[-:T]|\.\d+/g, '')}`));
const name = (commonName: string) => der(tag.sequence, der(tag.set, der(tag.sequence, oid('2.5.4.3'),
  der(tag.utf8String, Buffer.from(commonName)))));
const explicit = (n: number, content: Buffer) => der(0xa0 | n, content);

function ipBytes(address: string): Buffer {
  if (isIP(address) === 4) return Buffer.from(address.split('.').map(Number));
  const [head, tail = ''] = address.split('::');
  const groups = (text: string) => (text ? text.split(':') : []);
  const missing = 8 - groups(head!).length - groups(tail).length;
  const all = [...groups(head!), ...Array<string>(address.includes('::') ? missing : 0).fill('0'), ...groups(tail)];
  return Buffer.from(all.map((g) => g.padStart(4, '0')).join(''), 'hex');
}

/** subjectAltName: DNS names and IP addresses, as context-specific [2] and [7]. */
function subjectAltNames(hosts: string[]): Buffer {
  const names = hosts.map((host) => isIP(host) ? der(0x87, ipBytes(host)) : der(0x82, Buffer.from(host)));
  return der(tag.sequence, oid('2.5.29.17'), der(tag.octetString, der(tag.sequence, ...names)));
}

const toPem = (label: string, body: Buffer) =>
  `-----BEGIN ${label}-----\n${body.toString('base64').match(/.{1,64}/g)!.join('\n')}\n-----END ${label}-----\n`;

export interface ServingCertificate {
  cert: string;
  key: string;
  /** sha256 of the certificate's DER, hex: what a client pinning it compares. */
  fingerprint: string;
}

/** A certificate for `hosts` (DNS names, IP addresses), valid from an hour ago for `days` days, and its key. */
export function selfSignedCertificate(commonName: string, hosts: string[], days = 365): ServingCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const ecdsaWithSha256 = der(tag.sequence, oid('1.2.840.10045.4.3.2'));
  const now = Date.now();
  const basicConstraints = der(tag.sequence, oid('2.5.29.19'), der(tag.octetString, der(tag.sequence)));
  const serverAuth = der(tag.sequence, oid('2.5.29.37'), der(tag.octetString, der(tag.sequence, oid('1.3.6.1.5.5.7.3.1'))));
  const tbs = der(tag.sequence,
    explicit(0, der(tag.integer, Buffer.from([2]))),
    serialNumber(),
    ecdsaWithSha256,
    name(commonName),
    der(tag.sequence, time(new Date(now - 3_600_000)), time(new Date(now + days * 86_400_000))),
    name(commonName),
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, der(tag.sequence, basicConstraints, serverAuth, subjectAltNames(hosts))));
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const certificate = der(tag.sequence, tbs, ecdsaWithSha256, der(tag.bitString, Buffer.from([0]), signature));
  return { cert: toPem('CERTIFICATE', certificate), key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    fingerprint: createHash('sha256').update(certificate).digest('hex') };
}
