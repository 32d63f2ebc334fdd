// spec.postgresql applied to real PostgreSQL (Debian's packages) by the script the operator runs in members: a
// reload, the parameters a restart needs named, refusals that leave the member as it was and able to start.
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runScript, sql, startMember, suitePrimary } from '../../../test/support/postgres.ts';
import { configurationAnnotation, configurationFiles, configurationHash, configurationScript, hbaFile, MemberConfigurations,
  parameterFile,
  refusedExitCode, restartPendingAnnotation, ScriptFailed, type PostgresqlConfiguration } from './configuration.ts';
import { memberScript } from './scripts.ts';

describe('spec.postgresql as files', () => {
  it('quotes values as postgresql.conf reads them, in a stable order', () => {
    assert.equal(parameterFile({ work_mem: '16MB', search_path: '"$user", public', application_name: 'it\'s \\x' }),
      '# Written by the operator from spec.postgresql.parameters; changes here are overwritten.\n' +
      'application_name = \'it\'\'s \\\\x\'\nsearch_path = \'"$user", public\'\nwork_mem = \'16MB\'\n');
    assert.equal(configurationHash({ parameters: { a: '1', b: '2' } }), configurationHash({ parameters: { b: '2', a: '1' } }));
    assert.notEqual(configurationHash({ pgHba: ['host all bob all reject'] }), configurationHash({}));
  });

  it('keeps the operator\'s rules before the user\'s and the password rule last', () => {
    const lines = hbaFile(['host all bob all reject']).trim().split('\n');
    assert.deepEqual(lines.slice(1), ['local all all trust', 'local replication all trust',
      'host replication replicator all scram-sha-256', 'host postgres replicator all scram-sha-256',
      'host postgres postgres all scram-sha-256', 'host all bob all reject', 'host all all all scram-sha-256']);
  });
});

describe('following spec.postgresql on the members', () => {
  const cluster = { metadata: { name: 'db', namespace: 'shop', uid: 'c-1' } } as any;
  const pod = (name: string, annotations: Record<string, string> = {}, isReady = true, restartCount = 0) => ({
    metadata: { name, namespace: 'shop', annotations }, status: { conditions: [{ type: 'Ready',
      status: isReady ? 'True' : 'False' }], containerStatuses: [{ name: 'postgres', restartCount }] } }) as any;

  /** `answer` says what the script prints on a member, or how it fails, by pod and mode. */
  function harness(answer: (pod: string, mode: 'check' | 'apply') => string | ScriptFailed) {
    const ran: string[] = [];
    const annotated: [string, Record<string, string | null>][] = [];
    const events: string[] = [];
    const stored: (PostgresqlConfiguration | undefined)[] = [];
    const configurations = new MemberConfigurations({
      run: async (_ns, name, script) => {
        const mode = script.includes('pg_reload_conf') ? 'apply' : 'check';
        ran.push(`${mode} ${name}`);
        const out = answer(name, mode);
        if (out instanceof ScriptFailed) throw out;
        return out;
      },
      annotate: async (_ns, name, annotations) => { annotated.push([name, annotations]); },
      store: async (_c, config) => { stored.push(config); },
      record: async (_c, _type, reason, note) => { events.push(`${reason}: ${note}`); },
    });
    return { configurations, ran, annotated, events, stored };
  }
  const config = { parameters: { shared_buffers: '256MB' } };
  const hash = configurationHash(config);
  const steady = (size = 3, generation = 3) => ({ mayApply: true, size, generation });

  it('checks every ready member, stores, then applies, and says which need a restart', async () => {
    const { configurations, ran, annotated, stored } = harness((_pod, mode) => mode === 'apply' ? 'shared_buffers\n' : '');
    const members = [pod('db-0000'), pod('db-0001'), pod('db-0002', {}, false)];
    const waiting = await configurations.follow(cluster, config, members, { ...steady(), mayApply: false });
    assert.equal(ran.length, 0, 'nothing while the cluster is not steady');
    assert.equal(waiting.reason, 'Applying');
    const condition = await configurations.follow(cluster, config, members, steady());
    assert.deepEqual(ran, ['check db-0000', 'check db-0001', 'apply db-0000', 'apply db-0001']);
    assert.deepEqual(stored, [config]);
    assert.deepEqual(annotated[0], ['db-0000', { [configurationAnnotation]: `${hash}/0`,
      [restartPendingAnnotation]: 'shared_buffers' }]);
    assert.equal(condition.reason, 'RestartPending');
    assert.match(condition.message, /^shared_buffers needs a restart: members restart one at a time, replicas first/);
    const restarted = ['db-0000', 'db-0001', 'db-0002'].map((n) => pod(n, { [configurationAnnotation]: `${hash}/0` }));
    assert.deepEqual(await configurations.follow(cluster, config, restarted, steady()), { type: 'ConfigurationApplied',
      status: 'True', reason: 'Applied', message: 'spec.postgresql is in force on every member', observedGeneration: 3 });
    assert.equal((await configurations.follow(cluster, config, restarted.slice(1), steady())).reason, 'Applying',
      'not Applied while a member has no pod');
  });

  it('applies again to a member whose container restarted: it started with the stored files', async () => {
    const { configurations, ran } = harness(() => '');
    const members = [pod('db-0000', { [configurationAnnotation]: `${hash}/0` }),
      pod('db-0001', { [configurationAnnotation]: `${hash}/0` }, true, 1)];
    await configurations.follow(cluster, config, members, steady(2));
    assert.deepEqual(ran, ['check db-0000', 'check db-0001', 'apply db-0001']);
  });

  it('changes no member when any refuses, says it once, and tries again only when the spec changes', async () => {
    const { configurations, ran, events, annotated, stored } = harness((name) => name === 'db-0001'
      ? new ScriptFailed(name, refusedExitCode, 'max_connections: lowering it needs the primary restarted\n') : '');
    const members = [pod('db-0000'), pod('db-0001')];
    const lower = { parameters: { max_connections: '50' } };
    const refused = await configurations.follow(cluster, lower, members, steady(2));
    assert.equal(refused.reason, 'InvalidConfiguration');
    assert.match(refused.message, /^PostgreSQL refused spec.postgresql on db-0001, and no member was changed: max_conn/);
    await configurations.follow(cluster, lower, members, steady(2));
    assert.deepEqual(ran, ['check db-0000', 'check db-0001']);
    assert.equal(events.length, 1);
    assert.equal(annotated.length, 0);
    assert.equal(stored.length, 0, 'what PostgreSQL refused never reaches members starting');
    await configurations.follow(cluster, { parameters: { max_connections: '150' } }, members, steady(2));
    assert.equal(ran.length, 4);
  });

  it('reports an exec that failed otherwise, and tries again on the next pass', async () => {
    const { configurations, ran } = harness((name) => new ScriptFailed(name, 1, 'psql: connection refused'));
    const failed = await configurations.follow(cluster, config, [pod('db-0000')], steady(1));
    assert.equal(failed.reason, 'ApplyFailed');
    await configurations.follow(cluster, config, [pod('db-0000')], steady(1));
    assert.equal(ran.length, 2);
  });
});

describe('spec.postgresql applied to real PostgreSQL', () => {
  const suite = suitePrimary();
  const script = (config: PostgresqlConfiguration, mode: 'check' | 'apply') => runScript(suite.environment,
    configurationScript(config, mode), { PGDATA: suite.member.dataDir, PGPORT: String(suite.member.port) });
  const apply = (config: PostgresqlConfiguration) => script(config, 'apply');
  const refusal = (config: PostgresqlConfiguration, mode: 'check' | 'apply' = 'apply') => script(config, mode).then(
    () => assert.fail('applied'),
    (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 3);
      return error.stderr!.trim();
    });
  const show = (name: string) => sql(suite.environment, suite.member, `SHOW ${name}`);

  it('starts a suite.member with the configuration last accepted, what needs a restart included', async () => {
    const accepted = join(suite.dir, 'accepted');
    await mkdir(accepted);
    for (const [file, text] of Object.entries(configurationFiles({ parameters: { shared_buffers: '40MB' },
      pgHba: ['host all nobody all reject'] }))) await writeFile(join(accepted, file), text);
    const b = await startMember(suite.environment, 'b', join(suite.dir, 'b'), memberScript, { MEMBER_ROLE: 'primary',
      CONFIG_DIR: accepted });
    try {
      assert.equal(await sql(suite.environment, b, 'SHOW shared_buffers'), '40MB');
      assert.equal(await sql(suite.environment, b, 'SELECT count(*) FROM pg_hba_file_rules WHERE \'nobody\' = ANY(user_name)'), '1');
    } finally {
      await b.kill();
    }
  });

  it('reloads what a reload applies and names what needs a restart', async () => {
    assert.equal(await apply({ parameters: { work_mem: '24MB' } }), '');
    assert.equal(await show('work_mem'), '24MB');
    assert.equal(await apply({ parameters: { work_mem: '24MB', shared_buffers: '48MB', max_connections: '120' } }),
      'max_connections\nshared_buffers');
    assert.equal(await show('shared_buffers'), '128MB', 'in force only once restarted');
  });

  it('refuses a value, a name or a library PostgreSQL would refuse at its next start, and puts the files back', async () => {
    const before = await readFile(join(suite.member.dataDir, 'keelson.conf'), 'utf8');
    assert.match(await refusal({ parameters: { work_mem: 'lots' } }), /invalid value for parameter "work_mem": "lots"/);
    assert.match(await refusal({ parameters: { wrok_mem: '1MB' } }), /unrecognized configuration parameter "wrok_mem"/);
    assert.match(await refusal({ parameters: { shared_preload_libraries: 'pg_stat_statements,nonesuch' } }),
      /library "nonesuch" is not installed/);
    assert.match(await refusal({ parameters: { session_preload_libraries: 'nonesuch' } }),
      /^session_preload_libraries: library "nonesuch" is not installed/);
    assert.match(await refusal({ parameters: { local_preload_libraries: 'auto_explain' } }),
      /^local_preload_libraries: library "auto_explain" is not installed/, 'local ones come from plugins/');
    assert.match(await refusal({ parameters: { max_connections: '80' } }), /^max_connections: lowering it needs the primary/);
    assert.equal(await readFile(join(suite.member.dataDir, 'keelson.conf'), 'utf8'), before);
    assert.equal(await show('work_mem'), '24MB');
  });

  it('checks without changing anything, what it accepts included', async () => {
    const files = async () => Promise.all(['keelson.conf', 'pg_hba.conf'].map((f) => readFile(join(suite.member.dataDir, f), 'utf8')));
    const before = await files();
    assert.equal(await script({ parameters: { work_mem: '64MB' }, pgHba: ['host all all all reject'] }, 'check'), '');
    assert.match(await refusal({ parameters: { work_mem: 'lots' } }, 'check'), /invalid value for parameter "work_mem"/);
    assert.deepEqual(await files(), before);
    assert.equal(await show('work_mem'), '24MB');
  });

  it('keeps replication and the operator\'s connections in through a rule that rejects everyone else', async () => {
    await apply({ pgHba: ['host all all all reject'] });
    const asReplicator = await runScript(suite.environment, `PGPASSWORD=replSecret1 psql -X -h 127.0.0.1 -p ${suite.member.port} ` +
      '-U replicator -d postgres -Atc "SELECT current_user"', {});
    assert.equal(asReplicator, 'replicator');
    await apply({});
  });

  it('applies pg_hba.conf rules by a reload, and refuses one PostgreSQL cannot read', async () => {
    await sql(suite.environment, suite.member, 'CREATE ROLE app LOGIN PASSWORD \'appSecret1\'');
    const connect = () => runScript(suite.environment, `PGPASSWORD=appSecret1 psql -X -h 127.0.0.1 -p ${suite.member.port} -U app ` +
      '-d postgres -Atc "SELECT current_user"', {}).then((out) => out, (error: { stderr?: string }) => error.stderr!);
    assert.equal(await connect(), 'app');
    await apply({ pgHba: ['host all app all reject'] });
    assert.match(await connect(), /pg_hba.conf rejects connection .* user "app"/);
    assert.match(await refusal({ pgHba: ['host all app all reject', 'hostt all all all trust'] }),
      /^pg_hba.conf rule 2: invalid connection type "hostt"/);
    assert.match(await connect(), /rejects/, 'the rules in force stay');
    await apply({});
    assert.equal(await connect(), 'app');
  });

  it('refuses lowering a standby minimum by removing it, once a restart put it in force', async () => {
    await apply({ parameters: { max_worker_processes: '16' } });
    await suite.member.kill();
    suite.member = await startMember(suite.environment, 'a', suite.member.dataDir, memberScript, { MEMBER_ROLE: 'primary' });
    assert.equal(await show('max_worker_processes'), '16');
    assert.match(await refusal({}), /^max_worker_processes: lowering it needs the primary/);
    assert.equal(await apply({ parameters: { max_worker_processes: '16' } }), '');
  });
});
