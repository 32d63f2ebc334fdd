// spec.roles and spec.databases: roles and databases the operator keeps in PostgreSQL, as CloudNativePG's managed
// roles do. A role's password comes from a Secret and reaches PostgreSQL only as a SCRAM-SHA-256 verifier computed
// here, so no statement, log or process list on the member ever holds the password itself. Nothing is dropped unless
// the spec says `ensure: absent`; a role or database taken out of the spec is left as it is.
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { array, boolean, enumeration, integer, object, string, type Infer } from '../../api/schema.ts';
import type { Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import type { Condition } from '../../runtime/status.ts';
import { ScriptFailed } from './configuration.ts';
import type { PostgresClusterResource } from './schema.ts';
import { forgetUid } from '../../runtime/memos.ts';

const identifier = '^[a-z_][a-z0-9_]{0,62}$';
/** What the operator and PostgreSQL keep for themselves, or refuse as role names. */
const reservedRoles = ['postgres', 'replicator', 'keelson_monitor', 'public', 'none'];
/** Roles no spec may grant: the superuser and the replication role. */
const ungrantable = ['postgres', 'replicator', 'public', 'none'];
const celList = (values: readonly string[]) => `[${values.map((v) => `'${v}'`).join(', ')}]`;

const ensure = enumeration(['present', 'absent'], { description: 'present (the default) makes it and keeps it as ' +
  'the spec says; absent drops it. Taken out of the spec, it is left as it is.', default: 'present' });

export const roleSpec = object({
  name: string({ description: 'The role: lower case letters, digits and _.', required: true, pattern: identifier,
    maxLength: 63 }),
  ensure,
  login: boolean({ description: 'Whether it may log in.', default: true }),
  createdb: boolean({ description: 'Whether it may create databases.', default: false }),
  connectionLimit: integer({ description: 'Connections it may hold at once; -1, the default, for no limit.',
    minimum: -1, maximum: 10_000, default: -1 }),
  inRoles: array(string({ description: 'A role it is granted.', pattern: identifier, maxLength: 63 }),
    { description: 'Roles it is a member of (granted; memberships not listed are not revoked). Not postgres or ' +
      'replicator.', maxItems: 16, rules: [
      { rule: `self.all(p, !(p in ${celList(ungrantable)}))`, message: `${ungrantable.join(', ')} cannot be granted` },
    ] }),
  passwordSecret: object({
    name: string({ description: 'The Secret in the cluster\'s namespace.', required: true, maxLength: 253,
      pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' }),
  }, { description: 'The Secret whose key "password" is its password, printable ASCII (a kubernetes.io/basic-auth ' +
    'Secret will do); a change there is applied within a minute. Unset: its password is not managed.' }),
}, { description: 'A role.', rules: [
  { rule: '!has(self.inRoles) || !(self.name in self.inRoles)', message: 'a role cannot be a member of itself' },
] });

export const rolesSpec = array(roleSpec, { description: 'Roles kept in PostgreSQL by the operator, on the primary.',
  maxItems: 32, listType: 'map', listMapKeys: ['name'], rules: [
    { rule: `self.all(r, !(r.name in ${celList(reservedRoles)}) && !r.name.startsWith('pg_'))`,
      message: `${reservedRoles.join(', ')} and pg_* are PostgreSQL's or the operator's own` },
    { rule: 'self.all(r, !has(r.inRoles) || r.inRoles.all(p, !self.exists(o, o.name == p && o.ensure == \'absent\')))',
      message: 'a role cannot be granted a role marked absent' },
  ] });

export const databasesSpec = array(object({
  name: string({ description: 'The database: lower case letters, digits and _.', required: true, pattern: identifier,
    maxLength: 63 }),
  owner: string({ description: 'Its owner, a role (one of spec.roles, or one that exists).', required: true,
    pattern: identifier, maxLength: 63 }),
  ensure,
}, { description: 'A database.' }), { description: 'Databases kept in PostgreSQL by the operator, on the primary. ' +
  'Dropping one (ensure: absent) ends the sessions connected to it.', maxItems: 32, listType: 'map',
listMapKeys: ['name'], rules: [
  { rule: 'self.all(d, !(d.name in [\'postgres\', \'template0\', \'template1\']))',
    message: 'postgres, template0 and template1 are PostgreSQL\'s own' },
] });

export type RoleSpec = Infer<typeof roleSpec>;
export type DatabaseSpec = Infer<typeof databasesSpec>[number];

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802, RFC 7677, PostgreSQL's scram_build_secret),
 * with `salt` and 4096 iterations as PostgreSQL's default. PostgreSQL takes one given as a password as it is.
 */
export function scramVerifier(password: string, salt: Buffer = randomBytes(16)): string {
  const salted = pbkdf2Sync(Buffer.from(password.normalize('NFKC'), 'utf8'), salt, 4096, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$4096:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/**
 * psql input that brings PostgreSQL to the roles and databases asked for: roles first (a database's owner must
 * exist), databases, then the roles to drop (after the databases they may own). `verifiers` by role name; a role
 * without one keeps its password.
 */
export function rolesSql(roles: readonly RoleSpec[], databases: readonly DatabaseSpec[],
  verifiers: ReadonlyMap<string, string>): string {
  const present = roles.filter((r) => r.ensure === 'present');
  const lines = ['\\set ON_ERROR_STOP on',
    // Nothing of this session is logged or shown: its statements carry password verifiers.
    'SET log_statement = \'none\';', 'SET log_min_duration_statement = -1;', 'SET log_min_error_statement = panic;',
    'SET log_min_duration_sample = -1;', 'SET log_transaction_sample_rate = 0;', 'SET track_activities = off;',
    'SET pg_stat_statements.track_utility = off;', 'SET pgaudit.log = \'none\';',
    // What goes wrong is said first, not after notices of what was there already.
    'SET client_min_messages = warning;',
    // The roles in one transaction, made before any is changed or granted another.
    'BEGIN;',
    ...present.map((role) => `SELECT format('CREATE ROLE %I', '${role.name}') WHERE NOT EXISTS (SELECT FROM pg_roles ` +
      `WHERE rolname = '${role.name}') \\gexec`),
    ...present.map((role) => {
      const verifier = verifiers.get(role.name);
      return `ALTER ROLE "${role.name}" WITH ${role.login ? 'LOGIN' : 'NOLOGIN'} ${role.createdb ? 'CREATEDB' : 'NOCREATEDB'} ` +
        `CONNECTION LIMIT ${role.connectionLimit}${verifier ? ` PASSWORD '${verifier}'` : ''};`;
    }),
    ...present.flatMap((role) => (role.inRoles ?? []).map((parent) => `GRANT "${parent}" TO "${role.name}";`)),
    'COMMIT;'];
  // Databases outside a transaction, as CREATE and DROP DATABASE must be; then the roles to drop, which may own some.
  for (const database of databases) {
    if (database.ensure === 'absent') {
      lines.push(`DROP DATABASE IF EXISTS "${database.name}" WITH (FORCE);`);
      continue;
    }
    lines.push(`SELECT format('CREATE DATABASE %I OWNER %I', '${database.name}', '${database.owner}') WHERE NOT EXISTS ` +
      `(SELECT FROM pg_database WHERE datname = '${database.name}') \\gexec`,
    `ALTER DATABASE "${database.name}" OWNER TO "${database.owner}";`);
  }
  for (const role of roles.filter((r) => r.ensure === 'absent')) lines.push(`DROP ROLE IF EXISTS "${role.name}";`);
  return `${lines.join('\n')}\n`;
}

export interface RolesDeps {
  /** A Secret read live (nothing caches Secrets), or undefined when there is none. */
  secret(namespace: string, name: string): Promise<{ metadata: { uid?: string; resourceVersion?: string };
    data?: Record<string, string> } | undefined>;
  /** Runs psql on the member with `input` on its standard input. */
  psql(namespace: string, pod: string, input: string): Promise<string>;
  record(cluster: Cluster, type: 'Normal' | 'Warning', reason: string, note: string): void;
}

type Cluster = PostgresClusterResource & Owner;
type Pending = Omit<Condition, 'lastTransitionTime'>;

/** How often the Secrets are read again while the spec stays as it is: a password changed there within this. */
const secretsEveryMs = 60_000;

/** Why a password cannot be set as given, or undefined. */
function passwordProblem(bytes: Buffer): string | undefined {
  // PostgreSQL prepares a non-ASCII password with SASLprep, or keeps its bytes where SASLprep refuses it: a verifier
  // computed otherwise would never match. Printable ASCII is the same either way.
  return bytes.every((b) => b >= 0x20 && b < 0x7f) ? undefined : 'holds a password that is not printable ASCII';
}

/**
 * Keeps spec.roles and spec.databases in PostgreSQL, on the primary while it serves and nothing but waiting is under
 * way: again whenever the spec, a password Secret (read every minute) or the primary changes (a restore or a failover
 * may have brought older roles back); a failure, again with the next read of the Secrets.
 */
export class ManagedRoles {
  /** By cluster uid: what was last applied (spec, Secrets' versions, primary pod) and when the Secrets were read. */
  private readonly applied = new Map<string, { key: string; generation?: number; readAt: number; condition: Pending }>();

  constructor(private readonly deps: RolesDeps) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.applied, uid);
  }

  async follow(cluster: Cluster, roles: readonly RoleSpec[], databases: readonly DatabaseSpec[], primary: Pod | undefined,
    mayApply: boolean, generation: number | undefined): Promise<Pending | undefined> {
    const uid = cluster.metadata.uid;
    const last = this.applied.get(uid);
    if (!roles.length && !databases.length) {
      this.applied.delete(uid);
      return undefined;
    }
    const condition = (status: 'True' | 'False', reason: string, message: string): Pending =>
      ({ type: 'RolesApplied', status, reason, message, observedGeneration: generation });
    const shown = last && { ...last.condition, observedGeneration: generation };
    if (!mayApply || !primary) {
      // What was said of an earlier spec is not said of this one.
      return last?.generation === generation ? shown
        : condition('False', 'Waiting', 'roles and databases are applied once the primary serves');
    }
    const fresh = last !== undefined && last.generation === generation && Date.now() - last.readAt < secretsEveryMs;
    if (shown && fresh && last.key.endsWith(`/${primary.metadata.uid}`)) return shown;
    const ns = cluster.metadata.namespace!;
    const unusable: string[] = [];
    const passwords = new Map<string, { password: string; version: string }>();
    let result: Pending | undefined;
    let key = `failed/${primary.metadata.uid}`;
    try {
      for (const role of roles.filter((r) => r.ensure === 'present' && r.passwordSecret)) {
        const secretName = role.passwordSecret!.name;
        const secret = await this.deps.secret(ns, secretName);
        const bytes = secret?.data?.password === undefined ? undefined : Buffer.from(secret.data.password, 'base64');
        const problem = !secret ? 'not found' : !bytes?.length ? 'has no key "password"' : passwordProblem(bytes);
        if (problem) {
          unusable.push(`${role.name} (Secret ${secretName} ${problem})`);
          continue;
        }
        passwords.set(role.name, { password: bytes!.toString('utf8'),
          version: `${secret!.metadata.uid}@${secret!.metadata.resourceVersion}` });
      }
      key = `${JSON.stringify([roles, databases, [...passwords].map(([n, p]) => [n, p.version])])}/${primary.metadata.uid}`;
      if (last?.key === key) {
        this.applied.set(uid, { ...last, generation, readAt: Date.now() });
        return shown;
      }
      const verifiers = new Map([...passwords].map(([name, p]) => [name, scramVerifier(p.password)]));
      await this.deps.psql(ns, primary.metadata.name, rolesSql(roles, databases, verifiers));
      result = unusable.length
        ? condition('False', 'PasswordSecretInvalid', `no password set for ${unusable.join(', ')}; the rest is applied`)
        : condition('True', 'Applied', `${roles.length} role${roles.length === 1 ? '' : 's'} and ${databases.length} ` +
          `database${databases.length === 1 ? '' : 's'} as spec.roles and spec.databases ask, on ${primary.metadata.name}`);
    } catch (error) {
      const words = (error instanceof ScriptFailed ? error.stderr : (error as Error).message).trim()
        .replace(/^psql:<stdin>:\d+: /gm, '').slice(0, 900);
      key = `failed/${primary.metadata.uid}`;
      result = condition('False', 'ApplyFailed', `on ${primary.metadata.name}: ${words}`);
    }
    if (result.status === 'False' && result.message !== last?.condition.message) {
      this.deps.record(cluster, 'Warning', result.reason, result.message);
    }
    this.applied.set(uid, { key, generation, readAt: Date.now(), condition: result });
    return result;
  }
}
