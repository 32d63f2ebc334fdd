// spec.roles and spec.databases: the SQL against real PostgreSQL (Debian's packages), logging in with the password
// through the SCRAM verifier computed here; and when the operator applies it again.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runScript, sql, suitePrimary } from '../../../test/support/postgres.ts';
import { ScriptFailed } from './configuration.ts';
import { ManagedRoles, rolesSql, scramVerifier, type DatabaseSpec, type RoleSpec } from './roles.ts';

const role = (name: string, extra: Partial<RoleSpec> = {}): RoleSpec =>
  ({ name, ensure: 'present', login: true, createdb: false, connectionLimit: -1, ...extra });
const database = (name: string, owner: string, ensure: DatabaseSpec['ensure'] = 'present'): DatabaseSpec =>
  ({ name, owner, ensure });

describe('roles and databases in real PostgreSQL', () => {
  const suite = suitePrimary();
  const apply = (roles: RoleSpec[], databases: DatabaseSpec[], passwords: Record<string, string> = {}) =>
    execFileSync(`${suite.environment.bin}/psql`, ['-X', '-q', '-h', suite.environment.socketDir, '-p', String(suite.member.port), '-U',
      'postgres', '-d', 'postgres', '-f', '-'], { input: rolesSql(roles, databases,
      new Map(Object.entries(passwords).map(([n, p]) => [n, scramVerifier(p)]))), stdio: ['pipe', 'pipe', 'pipe'] });
  const login = (user: string, password: string, db = 'postgres') => runScript(suite.environment, `psql -X -h 127.0.0.1 ` +
    `-p ${suite.member.port} -U ${user} -d ${db} -Atc "SELECT current_user || '@' || current_database()"`,
  { PGPASSWORD: password }).then((out) => out, (error: { stderr?: string }) => error.stderr!.trim());

  it('makes roles that log in with their passwords, through verifiers PostgreSQL takes as they are', async () => {
    // Granted a role listed after it: every role is made before any is granted.
    apply([role('app', { inRoles: ['readers'], connectionLimit: 5 }), role('readers', { login: false,
      inRoles: ['pg_read_all_data'] })], [database('appdb', 'app')], { app: 'first password, ~`!@#$%^&*()\\\'"' });
    assert.equal(await login('app', 'first password, ~`!@#$%^&*()\\\'"', 'appdb'), 'app@appdb');
    assert.match(await login('app', 'wrong'), /password authentication failed for user "app"/);
    assert.equal(await sql(suite.environment, suite.member, 'SELECT rolconnlimit || \' \' || pg_has_role(\'app\', ' +
      '\'pg_read_all_data\', \'member\') FROM pg_roles WHERE rolname = \'app\''), '5 true');
    assert.equal(await sql(suite.environment, suite.member, 'SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = \'appdb\''),
      'app');
    assert.doesNotMatch(await sql(suite.environment, suite.member, 'SELECT rolpassword FROM pg_authid WHERE rolname = \'app\''),
      /first password/);
  });

  it('applies again without error, a new password and a new owner included', async () => {
    apply([role('app'), role('other')], [database('appdb', 'other')], { app: 'second' });
    assert.equal(await login('app', 'second'), 'app@postgres');
    assert.match(await login('app', 'first password, ~`!@#$%^&*()\\\'"'), /password authentication failed/);
    assert.equal(await sql(suite.environment, suite.member, 'SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = \'appdb\''),
      'other');
  });

  it('drops only what is marked absent, databases before the roles that own them', async () => {
    apply([role('app'), role('other', { ensure: 'absent' })], [database('appdb', 'other', 'absent')]);
    assert.equal(await sql(suite.environment, suite.member, 'SELECT string_agg(rolname, \',\' ORDER BY rolname) FROM pg_roles ' +
      'WHERE rolname IN (\'app\', \'other\')'), 'app');
    assert.equal(await sql(suite.environment, suite.member, 'SELECT count(*) FROM pg_database WHERE datname = \'appdb\''), '0');
  });
});

describe('following spec.roles', () => {
  const cluster = { metadata: { name: 'db', namespace: 'shop', uid: 'c-1' } } as any;
  const primary = { metadata: { name: 'db-0000', uid: 'p-1' } } as any;

  function harness() {
    const secrets = new Map<string, { metadata: { uid: string; resourceVersion: string }; data: Record<string, string> }>();
    const inputs: string[] = [];
    const events: string[] = [];
    let fail = false;
    const roles = new ManagedRoles({
      secret: async (_ns, name) => secrets.get(name),
      psql: async (_ns, pod, input) => {
        inputs.push(input);
        if (fail) throw new ScriptFailed(pod, 3, 'ERROR:  role "nobody" does not exist\n');
        return '';
      },
      record: async (_c, _t, reason, note) => { events.push(`${reason}: ${note}`); },
    });
    const setSecret = (name: string, password: string, version: string) => secrets.set(name,
      { metadata: { uid: `${name}-uid`, resourceVersion: version }, data: { password: Buffer.from(password).toString('base64') } });
    return { roles, inputs, events, setSecret, failing: (value: boolean) => { fail = value; } };
  }
  const spec = [role('app', { passwordSecret: { name: 'app-password' } })];

  it('says which password Secret is missing, applies the rest, and applies again once it is there', async (t) => {
    t.mock.timers.enable({ apis: ['Date'] });
    const { roles, inputs, events, setSecret } = harness();
    const missing = await roles.follow(cluster, spec, [database('appdb', 'app')], primary, true, 1);
    assert.equal(missing?.reason, 'PasswordSecretInvalid');
    assert.match(missing!.message, /^no password set for app \(Secret app-password not found\)/);
    assert.equal(inputs.length, 1);
    assert.doesNotMatch(inputs[0]!, /PASSWORD/);
    assert.equal(events.length, 1);
    setSecret('app-password', 'sekrit', '7');
    await roles.follow(cluster, spec, [database('appdb', 'app')], primary, true, 1);
    assert.equal(inputs.length, 1, 'the Secrets are read again only after a while');
    t.mock.timers.tick(61_000);
    const applied = await roles.follow(cluster, spec, [database('appdb', 'app')], primary, true, 1);
    assert.equal(applied?.reason, 'Applied');
    assert.equal(inputs.length, 2);
    assert.match(inputs[1]!, /ALTER ROLE "app" WITH LOGIN NOCREATEDB CONNECTION LIMIT -1 PASSWORD 'SCRAM-SHA-256\$4096:/);
    assert.doesNotMatch(inputs[1]!, /sekrit/);
  });

  it('applies again when the spec, a Secret or the primary changes, and only then', async (t) => {
    t.mock.timers.enable({ apis: ['Date'] });
    const { roles, inputs, setSecret } = harness();
    setSecret('app-password', 'sekrit', '7');
    await roles.follow(cluster, spec, [], primary, true, 1);
    t.mock.timers.tick(61_000);
    await roles.follow(cluster, spec, [], primary, true, 1);
    assert.equal(inputs.length, 1, 'nothing changed');
    setSecret('app-password', 'rotated', '8');
    t.mock.timers.tick(61_000);
    await roles.follow(cluster, spec, [], primary, true, 1);
    assert.equal(inputs.length, 2, 'the password changed');
    await roles.follow(cluster, spec, [], { metadata: { name: 'db-0001', uid: 'p-2' } } as any, true, 1);
    assert.equal(inputs.length, 3, 'a new primary');
    await roles.follow(cluster, [...spec, role('ro', { login: false })], [], primary, true, 2);
    assert.equal(inputs.length, 4, 'the spec changed');
    assert.equal(await roles.follow(cluster, [], [], primary, true, 3), undefined);
  });

  it('reports what PostgreSQL said when it fails, once, tries again a minute later, and nothing meanwhile', async (t) => {
    t.mock.timers.enable({ apis: ['Date'] });
    const { roles, inputs, events, failing } = harness();
    failing(true);
    const failed = await roles.follow(cluster, [role('app', { inRoles: ['nobody'] })], [], primary, true, 1);
    assert.equal(failed?.reason, 'ApplyFailed');
    assert.match(failed!.message, /role "nobody" does not exist/);
    assert.equal((await roles.follow(cluster, [role('app', { inRoles: ['nobody'] })], [], primary, true, 1))?.reason,
      'ApplyFailed');
    const waiting = await roles.follow(cluster, [role('app', { inRoles: ['nobody'] })], [], primary, false, 2);
    assert.equal(waiting?.observedGeneration, 2, 'what it says is said of the spec as it is now');
    assert.equal(inputs.length, 1);
    t.mock.timers.tick(61_000);
    await roles.follow(cluster, [role('app', { inRoles: ['nobody'] })], [], primary, true, 2);
    assert.equal(inputs.length, 2);
    assert.equal(events.length, 1);
  });

  it('sets no password a verifier could get wrong: only printable ASCII', async () => {
    const { roles, inputs, setSecret } = harness();
    setSecret('app-password', 'pass\u00adword', '1');
    const refused = await roles.follow(cluster, spec, [], primary, true, 1);
    assert.equal(refused?.reason, 'PasswordSecretInvalid');
    assert.match(refused!.message, /app \(Secret app-password holds a password that is not printable ASCII\)/);
    assert.doesNotMatch(inputs[0]!, /PASSWORD/);
  });
});
