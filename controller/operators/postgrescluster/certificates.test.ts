import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { certificatesOf, issueCa, issueServer, renewalDue, serverLifetimeMs, serverProblems, type Issued }
  from './certificates.ts';
import { issuedNames, requiredNames, ServerCertificates, type TlsDeps } from './tls.ts';
import { BackupPeers } from './standby-backups.ts';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type TLSSocket } from 'node:tls';

const day = 86_400_000;
const cluster = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster',
  metadata: { name: 'orders', namespace: 'shop', uid: 'u1', generation: 1 }, spec: {} } as any;
let ca: Issued;
let server: Issued;

before(async () => {
  ca = await issueCa('shop/orders PostgreSQL CA');
  server = await issueServer(ca, issuedNames(cluster));
});

describe('certificates a cluster issues', () => {
  it('make a CA that signs certificates and nothing else, and a server certificate of that CA only', () => {
    const [authority] = certificatesOf(ca.cert);
    const [leaf] = certificatesOf(server.cert);
    assert.ok(authority!.ca);
    assert.match(authority!.toLegacyObject().ext_key_usage?.join() ?? '', /^$/);
    assert.ok(!leaf!.ca);
    assert.ok(leaf!.checkIssued(authority!) && leaf!.verify(authority!.publicKey));
    assert.ok(Date.parse(leaf!.validTo) - Date.now() > serverLifetimeMs - day);
  });

  it('name both Services however they are spelled, and each member', async () => {
    const [leaf] = certificatesOf(server.cert);
    for (const host of ['orders', 'orders.shop.svc', 'orders-ro', 'orders-ro.shop.svc.cluster.local',
      'orders-0001.orders-members.shop.svc']) {
      assert.notEqual(leaf!.checkHost(host), undefined, host);
    }
    assert.equal(leaf!.checkHost('orders.other.svc'), undefined);
    assert.deepEqual(await serverProblems({ ...server, ca: ca.cert }, requiredNames(cluster)), []);
  });

  it('are due for renewal past two thirds of their life', () => {
    const [leaf] = certificatesOf(server.cert);
    const from = Date.parse(leaf!.validFrom);
    const to = Date.parse(leaf!.validTo);
    assert.equal(renewalDue(leaf!, to - 31 * day), false);
    assert.equal(renewalDue(leaf!, from + ((to - from) * 2) / 3 + 1000), true);
  });
});

describe('a certificate Secret of the user\'s', () => {
  it('is refused with every reason a client would give', async () => {
    const other = await issueCa('someone else');
    const stranger = await issueServer(other, ['elsewhere.example']);
    const expired = await issueServer(ca, issuedNames(cluster), Date.now() - 100 * day);
    assert.deepEqual(await serverProblems({ cert: server.cert }, []), ['no tls.key', 'no ca.crt']);
    assert.deepEqual(await serverProblems({ cert: server.cert, key: stranger.key, ca: ca.cert }, []),
      ['tls.key is not the key of tls.crt']);
    assert.deepEqual(await serverProblems({ ...stranger, ca: ca.cert }, requiredNames(cluster)), [
      'tls.crt is not signed by a CA in ca.crt', 'tls.crt does not name orders.shop.svc, orders-ro.shop.svc']);
    assert.match((await serverProblems({ ...expired, ca: ca.cert }, []))[0]!, /^tls\.crt is valid from .* to .* only$/);
    assert.deepEqual(await serverProblems({ cert: 'nonsense', key: server.key, ca: ca.cert }, []),
      ['tls.crt holds no PEM certificate']);
  });

  it('is refused for an issuer that is no CA, and for a CA that has expired, which a handshake finds', async () => {
    // Naming what it must, but signed by a server certificate, which may not sign certificates.
    const byLeaf = await issueServer(server, requiredNames(cluster));
    assert.deepEqual(await serverProblems({ ...byLeaf, ca: server.cert }, requiredNames(cluster)),
      ['tls.crt is not signed by a CA in ca.crt']);
    // A key Debian's OpenSSL will not serve with (security level 2), though Node's default would.
    const weakKey = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs1', format: 'pem' });
    const weak = await issueCa('weak', Date.now(), weakKey as string);
    assert.match((await serverProblems({ ...weak, ca: weak.cert }, [])).join(), /^a server refuses it: .*too small/);
    // Everything in order but the CA's own dates: OpenSSL, as libpq uses it, refuses the chain.
    const old = await issueCa('old CA', Date.now() - 3700 * day);
    const ofOld = await issueServer(old, requiredNames(cluster));
    assert.deepEqual(await serverProblems({ ...ofOld, ca: old.cert }, requiredNames(cluster)),
      ['a client refuses it: certificate has expired']);
  });

  it('is taken with its chain and a bundle of CAs', async () => {
    const bundle = `${(await issueCa('old CA')).cert}\n${ca.cert}`;
    assert.deepEqual(await serverProblems({ cert: `${server.cert}\n${ca.cert}`, key: server.key, ca: bundle },
      requiredNames(cluster)), []);
  });
});

/** Secrets and ConfigMaps in memory, as the operator's client would leave them. */
function store(): TlsDeps & { objects: Map<string, any>; events: string[] } {
  const objects = new Map<string, any>();
  const events: string[] = [];
  return {
    objects, events,
    secret: async (_ns, name) => objects.get(`Secret/${name}`),
    apply: async (_c, object) => {
      objects.set(`${object.kind}/${object.metadata.name}`, object);
      return true;
    },
    record: async (_c, type, reason) => events.push(`${type} ${reason}`),
    owned: (_c, kind, name, fields) => ({ apiVersion: 'v1', kind, metadata: { name, namespace: 'shop',
      ownerReferences: [{ apiVersion: cluster.apiVersion, kind: cluster.kind, name: 'orders', uid: 'u1', controller: true }] },
    ...fields }),
  };
}
const pem = (object: any, key: string) => Buffer.from(object.data[key], 'base64').toString();

describe('the members\' certificates, kept', () => {
  it('issues a CA and a certificate once, and again only when due', async () => {
    let now = Date.now();
    const deps = store();
    const certificates = new ServerCertificates(deps, () => now);
    const first = await certificates.follow(cluster, undefined, 1);
    assert.equal(first.condition.status, 'True');
    assert.equal(first.condition.reason, 'Issued');
    assert.deepEqual(deps.events, ['Normal CAIssued', 'Normal CertificateIssued']);
    const issued = pem(deps.objects.get('Secret/orders-tls'), 'tls.crt');
    assert.equal(deps.objects.get('ConfigMap/orders-ca').data['ca.crt'], pem(deps.objects.get('Secret/orders-ca'), 'ca.crt'));
    now += 61_000;
    await certificates.follow(cluster, undefined, 1);
    assert.equal(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'), issued);
    now += 61 * day;
    const renewed = await certificates.follow(cluster, undefined, 1);
    assert.deepEqual(deps.events, ['Normal CAIssued', 'Normal CertificateIssued', 'Normal CertificateRenewed']);
    const leaf = new X509Certificate(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'));
    assert.notEqual(leaf.serialNumber, new X509Certificate(issued).serialNumber);
    assert.equal(renewed.status?.notAfter, new Date(leaf.validTo).toISOString());
  });

  it('renews the CA on its key, so that the CA clients hold verifies what the new one signs', async () => {
    let now = Date.now();
    const deps = store();
    const certificates = new ServerCertificates(deps, () => now);
    await certificates.follow(cluster, undefined, 1);
    const held = new X509Certificate(pem(deps.objects.get('Secret/orders-ca'), 'ca.crt'));
    now += 7 * 365 * day;
    await certificates.follow(cluster, undefined, 1);
    assert.deepEqual(deps.events.slice(2), ['Normal CARenewed', 'Normal CertificateRenewed']);
    const renewed = new X509Certificate(pem(deps.objects.get('Secret/orders-ca'), 'ca.crt'));
    assert.notEqual(renewed.serialNumber, held.serialNumber);
    const leaf = new X509Certificate(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'));
    assert.ok(leaf.checkIssued(held) && leaf.verify(held.publicKey), 'the CA clients hold does not verify the new certificate');
    // A CA Secret whose key is not its certificate's is no CA: made again, and said loudly.
    deps.objects.get('Secret/orders-ca').data['ca.key'] = Buffer.from((await issueCa('x')).key).toString('base64');
    now += 61_000;
    deps.objects.delete('Secret/orders-tls');
    await certificates.follow(cluster, undefined, 1);
    assert.deepEqual(deps.events.slice(4), ['Warning CAIssued', 'Normal CertificateIssued']);
  });

  it('copies a user\'s Secret once it checks out, and leaves the members\' as it is until then', async () => {
    const deps = store();
    const certificates = new ServerCertificates(deps);
    await certificates.follow(cluster, undefined, 1);
    const ours = deps.objects.get('Secret/orders-tls');
    const theirs = await issueServer(ca, ['orders.shop.svc']);
    deps.objects.set('Secret/given', { data: { 'tls.crt': Buffer.from(theirs.cert).toString('base64'),
      'tls.key': Buffer.from(theirs.key).toString('base64'), 'ca.crt': Buffer.from(ca.cert).toString('base64') } });
    const refused = await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 2);
    assert.equal(refused.condition.reason, 'ServerSecretInvalid');
    assert.match(refused.condition.message, /does not name orders-ro\.shop\.svc\. Members keep the certificate they have/);
    assert.equal(deps.objects.get('Secret/orders-tls'), ours);
    await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 3);
    assert.equal(deps.events.filter((e) => e === 'Warning ServerSecretInvalid').length, 1, 'one Event per problem');
    const fixed = await issueServer(ca, requiredNames(cluster));
    deps.objects.get('Secret/given').data['tls.crt'] = Buffer.from(fixed.cert).toString('base64');
    deps.objects.get('Secret/given').data['tls.key'] = Buffer.from(fixed.key).toString('base64');
    const taken = await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 4);
    assert.equal(taken.condition.reason, 'FromSecret');
    assert.equal(taken.status?.source, 'given');
    assert.equal(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'), fixed.cert);
  });

  it('takes up a user\'s Secret renewed under an unchanged spec within a minute', async () => {
    let now = Date.now();
    const deps = store();
    const certificates = new ServerCertificates(deps, () => now);
    const given = async () => {
      const issued = await issueServer(ca, requiredNames(cluster));
      deps.objects.set('Secret/given', { data: { 'tls.crt': Buffer.from(issued.cert).toString('base64'),
        'tls.key': Buffer.from(issued.key).toString('base64'), 'ca.crt': Buffer.from(ca.cert).toString('base64') } });
      return issued.cert;
    };
    const first = await given();
    await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 2);
    assert.equal(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'), first);
    // As cert-manager renews it: the same Secret, a new certificate, the cluster's spec as it was.
    const renewed = await given();
    now += 30_000;
    await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 2);
    now += 31_000;
    await certificates.follow(cluster, { serverSecret: { name: 'given' } }, 2);
    assert.equal(pem(deps.objects.get('Secret/orders-tls'), 'tls.crt'), renewed);
  });
});

describe('the certificate members take backups from a standby with', () => {
  const peerSecret = (deps: ReturnType<typeof store>) => deps.objects.get('Secret/orders-backup-peer');

  it('is one pair both ends present: it serves every member\'s address and is admitted as keelson-backup', async () => {
    const deps = store();
    assert.equal(await new BackupPeers(deps).ensure(cluster), undefined);
    const [leaf] = certificatesOf(pem(peerSecret(deps), 'tls.crt'));
    assert.match(leaf!.subject, /^CN=keelson-backup$/);
    assert.deepEqual(leaf!.keyUsage?.sort(), ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2'], 'server and client auth');
    assert.ok(leaf!.checkHost('orders-0007.orders-members.shop.svc'));
    assert.equal(leaf!.checkHost('orders-0007.other-members.shop.svc'), undefined);
    // A mutual handshake as pgBackRest's server and client make one with OpenSSL: each verifies the other by the CA.
    const pair = { cert: pem(peerSecret(deps), 'tls.crt'), key: pem(peerSecret(deps), 'tls.key') };
    const authority = pem(peerSecret(deps), 'ca.crt');
    const server = createServer({ ...pair, ca: authority, requestCert: true, rejectUnauthorized: true },
      (socket) => socket.end(`${(socket as TLSSocket).getPeerCertificate().subject.CN}\n`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect({ ...pair, ca: authority, host: '127.0.0.1', port: (server.address() as AddressInfo).port,
          servername: 'orders-0000.orders-members.shop.svc' });
        let text = '';
        socket.on('data', (chunk) => (text += chunk)).on('end', () => resolve(text)).on('error', reject);
      });
      assert.equal(answer, 'keelson-backup\n');
    } finally {
      server.close();
    }
  });

  it('is kept while good, and made again, CA and all, when deleted or past two thirds of its life', async () => {
    let now = Date.now();
    const deps = store();
    const peers = new BackupPeers(deps, () => now);
    await peers.ensure(cluster);
    const first = pem(peerSecret(deps), 'tls.crt');
    now += 61_000;
    await peers.ensure(cluster);
    assert.equal(pem(peerSecret(deps), 'tls.crt'), first);
    deps.objects.delete('Secret/orders-backup-peer');
    now += 30_000;
    assert.equal(await peers.ensure(cluster), undefined, 'within a minute of a good look, not read again');
    now += 31_000;
    await peers.ensure(cluster);
    assert.notEqual(pem(peerSecret(deps), 'tls.crt'), first);
    assert.deepEqual(deps.events, [], 'a Secret made where there was none is no renewal');
    const secondCa = pem(peerSecret(deps), 'ca.crt');
    now += 2500 * day;
    await peers.ensure(cluster);
    assert.notEqual(pem(peerSecret(deps), 'ca.crt'), secondCa);
    assert.deepEqual(deps.events, ['Normal BackupPeerCertificateRenewed']);
  });

  it('looks afresh at a cluster it forgot (one deleted, made again under its name)', async () => {
    const deps = store();
    const peers = new BackupPeers(deps);
    await peers.ensure(cluster);
    deps.objects.delete('Secret/orders-backup-peer');
    peers.forget(cluster.metadata.uid);
    await peers.ensure(cluster);
    assert.ok(peerSecret(deps), 'made again at once: nothing remembered of the cluster');
  });

  it('is not written over when the Secret of its name is someone else\'s', async () => {
    const deps = store();
    deps.objects.set('Secret/orders-backup-peer', { metadata: { name: 'orders-backup-peer' }, data: {} });
    assert.equal(await new BackupPeers(deps).ensure(cluster), 'Secret orders-backup-peer is not this cluster\'s');
    assert.deepEqual(peerSecret(deps).data, {});
  });
});
