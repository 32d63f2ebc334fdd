// The members' TLS, always offered. The server certificate lives in Secret <name>-tls, which member pods mount; the
// member script copies it where PostgreSQL reads it and reloads PostgreSQL whenever kubelet brings a new one, so
// renewing it restarts nothing. By default the operator issues it from a CA of the cluster's own (Secret <name>-ca,
// which no member mounts) and issues it again 30 days before it expires; spec.tls.serverSecret names a user's instead
// (cert-manager's, say), which is copied in only once checked, and followed as its issuer renews it. Either way
// ConfigMap <name>-ca holds the CA clients verify with, and replicas stream over sslmode=verify-full.
import { dns1123Subdomain } from '../../api/common.ts';
import { object, string, type Infer } from '../../api/schema.ts';
import { isControlledBy, type Owner } from '../../runtime/objects.ts';
import type { Condition } from '../../runtime/status.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import { createPrivateKey } from 'node:crypto';
import { certificatesOf, issueCa, issueServer, renewalDue, serverProblems, type Issued } from './certificates.ts';
import type { PostgresClusterResource } from './schema.ts';
import { forgetUid } from '../../runtime/memos.ts';

export const tlsSpec = object({
  serverSecret: object({
    name: string({ description: 'The Secret, in the cluster\'s namespace.', required: true, maxLength: 253,
      pattern: dns1123Subdomain }),
  }, { description: 'A Secret with tls.crt (its chain may follow), tls.key and ca.crt, as cert-manager writes them, ' +
    'naming at least <name>.<namespace>.svc and <name>-ro.<namespace>.svc. It is checked before any member is ' +
    'given it (TLSReady says what is wrong; members keep the certificate they have), and followed as it is renewed.' }),
}, { description: 'The members\' server certificate. Members always offer TLS; by default the certificate comes from ' +
  'a CA the operator keeps for the cluster, and is renewed 30 days before it expires. Clients verify it with the ' +
  'ca.crt of ConfigMap <name>-ca, through <name>.<namespace>.svc and <name>-ro.<namespace>.svc (sslmode=verify-full).' });

export type TlsSpec = Infer<typeof tlsSpec>;
type Cluster = PostgresClusterResource & Owner;
type Pending = Omit<Condition, 'lastTransitionTime'>;
type Pems = { cert: string; key: string; ca: string };

/** The names of the Secrets and the ConfigMap this file keeps. */
export const tlsNames = {
  server: (cluster: string) => `${cluster}-tls`,
  ca: (cluster: string) => `${cluster}-ca`,
};

/** The names a certificate must cover for clients and replicas that verify the full name (sslmode=verify-full). */
export function requiredNames(cluster: Cluster): string[] {
  const { name, namespace } = cluster.metadata;
  return [`${name}.${namespace}.svc`, `${name}-ro.${namespace}.svc`];
}

/** The names the operator's certificates cover: both Services however they are spelled, and each member's address. */
export function issuedNames(cluster: Cluster): string[] {
  const { name, namespace } = cluster.metadata;
  const spellings = (host: string) => [host, `${host}.${namespace}`, `${host}.${namespace}.svc`,
    `${host}.${namespace}.svc.cluster.local`];
  return [...spellings(name), ...spellings(`${name}-ro`), `*.${name}-members.${namespace}.svc`,
    `*.${name}-members.${namespace}.svc.cluster.local`];
}

const decoded = (object: KubeObject | undefined, key: string): string | undefined => {
  const value = (object as { data?: Record<string, string> } | undefined)?.data?.[key];
  return value === undefined ? undefined : Buffer.from(value, 'base64').toString('utf8');
};
const encoded = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));

export interface TlsDeps {
  /** A Secret, read live (nothing caches Secrets). */
  secret(namespace: string, name: string): Promise<KubeObject | undefined>;
  /** Makes or updates an object controlled by the cluster; false when one of that name is not the cluster's. */
  apply(cluster: Cluster, object: KubeObject): Promise<boolean>;
  record(cluster: Cluster, type: 'Normal' | 'Warning', reason: string, note: string): void;
  /** Builds an object the cluster controls, with its labels (objects.ts). */
  owned(cluster: Cluster, kind: 'Secret' | 'ConfigMap', name: string, fields: object): KubeObject;
}

export interface TlsStatus {
  /** "operator", or the user's Secret the certificate comes from. */
  source: string;
  notAfter: string;
}

/**
 * How long a good look at a cluster's certificates stands while its spec is unchanged (whether <name>-tls is there is
 * seen on every reconcile): Secrets are read live, and a renewal (ours 30 days ahead, or a user's issuer's) is not in
 * that much of a hurry. A look that found something wrong is not kept.
 */
const lookEveryMs = 60_000;

export interface Followed {
  condition: Pending;
  status?: TlsStatus;
  /** Whether <name>-tls is there and the cluster's: a member pod made now can mount it. */
  ready: boolean;
}

/** Keeps <name>-tls and <name>-ca as the spec says; TLSReady says how that went. */
export class ServerCertificates {
  /** By cluster uid, the last warning recorded: one Event per problem, not one per reconcile. */
  private readonly warned = new Map<string, string>();
  /** By cluster uid, the last good look, for which spec, and when. */
  private readonly looked = new Map<string, { key: string; at: number; result: Followed }>();

  constructor(private readonly deps: TlsDeps, private readonly now: () => number = Date.now) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.warned, uid);
    forgetUid(this.looked, uid);
  }

  async follow(cluster: Cluster, spec: TlsSpec | undefined, generation: number | undefined): Promise<Followed> {
    const { name, namespace, uid } = cluster.metadata;
    const key = `${generation}/${spec?.serverSecret?.name ?? ''}`;
    const last = this.looked.get(uid);
    if (last?.key === key && this.now() - last.at < lookEveryMs) {
      // Whatever the apiserver says of Secrets, a failover goes on: a read that fails is looked into below, which
      // reports it.
      const current = await this.deps.secret(namespace!, tlsNames.server(name)).catch(() => undefined);
      if (current && isControlledBy(current, cluster)) return last.result;
    }
    const result = await this.look(cluster, spec, generation);
    if (result.condition.status === 'True') this.looked.set(uid, { key, at: this.now(), result });
    else this.looked.delete(uid);
    return result;
  }

  private async look(cluster: Cluster, spec: TlsSpec | undefined, generation: number | undefined): Promise<Followed> {
    const condition = (status: 'True' | 'False', reason: string, message: string): Pending =>
      ({ type: 'TLSReady', status, reason, message, observedGeneration: generation });
    const { name, namespace, uid } = cluster.metadata;
    let current: KubeObject | undefined;
    /** Whether <name>-tls is there and the cluster's. */
    let ready = false;
    const warn = async (reason: string, message: string) => {
      if (this.warned.get(uid) !== `${reason} ${message}`) {
        this.deps.record(cluster, 'Warning', reason, message);
        this.warned.set(uid, `${reason} ${message}`);
      }
      return { condition: condition('False', reason, message), ready };
    };
    try {
      current = await this.deps.secret(namespace!, tlsNames.server(name));
      ready = current !== undefined && isControlledBy(current, cluster);
      if (current && !ready) {
        return warn('NotOwned', `Secret ${tlsNames.server(name)} belongs to something else: no member is made to ` +
          'mount it; rename or remove it');
      }
      const given = spec?.serverSecret?.name;
      let pems: Pems;
      if (given) {
        const keptHere = [tlsNames.server(name), tlsNames.ca(name), `${name}-credentials`].includes(given);
        const secret = keptHere ? undefined : await this.deps.secret(namespace!, given);
        const found = { cert: decoded(secret, 'tls.crt') ?? '', key: decoded(secret, 'tls.key') ?? '',
          ca: decoded(secret, 'ca.crt') ?? '' };
        const problems = keptHere ? ['it is one the operator keeps for this cluster'] : !secret ? ['it is not there']
          : await serverProblems(found, requiredNames(cluster), this.now());
        if (problems.length) {
          return warn('ServerSecretInvalid', `Secret ${given} cannot serve the members: ${problems.join('; ')}. ` +
            (ready ? 'Members keep the certificate they have.' : 'No member is made until it can.'));
        }
        pems = found;
      } else {
        pems = await this.issued(cluster, current);
      }
      this.warned.delete(uid);
      const written = await this.deps.apply(cluster, this.deps.owned(cluster, 'Secret', tlsNames.server(name),
        { type: 'kubernetes.io/tls', data: encoded({ 'tls.crt': pems.cert, 'tls.key': pems.key, 'ca.crt': pems.ca }) }));
      if (!written) return warn('NotOwned', `Secret ${tlsNames.server(name)} belongs to something else: rename or remove it`);
      ready = true;
      if (!(await this.deps.apply(cluster, this.deps.owned(cluster, 'ConfigMap', tlsNames.ca(name), { data: { 'ca.crt': pems.ca } })))) {
        return warn('NotOwned', `ConfigMap ${tlsNames.ca(name)} belongs to something else, so clients cannot read the ` +
          'CA there: rename or remove it');
      }
      const notAfter = new Date(certificatesOf(pems.cert)[0]!.validTo).toISOString();
      return { condition: condition('True', given ? 'FromSecret' : 'Issued', given
        ? `the members serve the certificate of Secret ${given}, valid until ${notAfter}`
        : `the members serve a certificate of the cluster's CA, valid until ${notAfter} and renewed 30 days before`),
      status: { source: given ?? 'operator', notAfter }, ready: true };
    } catch (error) {
      return { condition: condition('False', 'IssueFailed', `could not keep the members' certificate: ` +
        (error as Error).message.slice(0, 600)), ready };
    }
  }

  /** The operator's certificate: the one in <name>-tls while it is this CA's, names the cluster and is not due. */
  private async issued(cluster: Cluster, current: KubeObject | undefined): Promise<Pems> {
    const ca = await this.authority(cluster);
    const now = this.now();
    const existing = { cert: decoded(current, 'tls.crt') ?? '', key: decoded(current, 'tls.key') ?? '', ca: ca.cert };
    const keep = (await serverProblems(existing, issuedNames(cluster), now)).length === 0 &&
      !renewalDue(certificatesOf(existing.cert)[0]!, now);
    if (keep) return existing;
    const server = { ...await issueServer(ca, issuedNames(cluster), now), ca: ca.cert };
    this.deps.record(cluster, 'Normal', current ? 'CertificateRenewed' : 'CertificateIssued',
      `Issued the members' server certificate from the cluster's CA, valid until ` +
      `${new Date(certificatesOf(server.cert)[0]!.validTo).toISOString()}; members reload it as it reaches them`);
    return server;
  }

  /**
   * The cluster's CA: made when missing or unreadable (clients must then read the new one), renewed on its own key past
   * two thirds of its life (what clients hold still verifies).
   */
  private async authority(cluster: Cluster): Promise<Issued> {
    const { name, namespace } = cluster.metadata;
    const secret = await this.deps.secret(namespace!, tlsNames.ca(name));
    if (secret && !isControlledBy(secret, cluster)) {
      throw new Error(`Secret ${tlsNames.ca(name)} belongs to something else: rename or remove it`);
    }
    const kept = { cert: decoded(secret, 'ca.crt') ?? '', key: decoded(secret, 'ca.key') ?? '' };
    let usable = false;
    try {
      const [cert] = certificatesOf(kept.cert);
      usable = cert !== undefined && cert.ca && cert.checkPrivateKey(createPrivateKey(kept.key));
      if (usable && !renewalDue(cert!, this.now())) return kept;
    } catch { /* unreadable: made again below */ }
    const ca = await issueCa(`${namespace}/${name} PostgreSQL CA`, this.now(), usable ? kept.key : undefined);
    if (!(await this.deps.apply(cluster, this.deps.owned(cluster, 'Secret', tlsNames.ca(name),
      { type: 'Opaque', data: encoded({ 'ca.crt': ca.cert, 'ca.key': ca.key }) })))) {
      throw new Error(`Secret ${tlsNames.ca(name)} belongs to something else: rename or remove it`);
    }
    const map = `ConfigMap ${tlsNames.ca(name)}`;
    if (usable) {
      this.deps.record(cluster, 'Normal', 'CARenewed', `Renewed the cluster's CA on the key it had: ` +
        `the CA certificate clients hold still verifies the members; ${map} has the new one`);
    } else {
      this.deps.record(cluster, secret ? 'Warning' : 'Normal', 'CAIssued', secret
        ? `Made the cluster's CA again (Secret ${tlsNames.ca(name)} held no usable CA and key): clients must re-read ${map}`
        : `Made the cluster's CA: clients verify the members with ${map}`);
    }
    return ca;
  }
}
