// The member agent against the real apiserver, as the ServiceAccount and Role the operator gives it, through a proxy
// the test can cut: it renews the Lease naming its member, stops a primary it can no longer confirm before the
// Lease could expire, and stops at once a primary the Lease does not name. PostgreSQL is stood in for by a pid
// whose stop is recorded; the real one is stopped on the real node (postgres-on-node.test.ts).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { CuttableProxy } from '../../../test/support/proxy.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { Client } from '../../runtime/client.ts';
import { loadKubeConfig } from '../../runtime/kubeconfig.ts';
import { RestClient } from '../../runtime/rest.ts';
import { MemberAgent, type LocalPostgres } from './agent.ts';
import { agentIdentity, lease } from './objects.ts';
import { agentPermissions } from './permissions.ts';
import { fenceAfterMs, leaseDurationMs } from './plan.ts';

const cluster = testCluster();
let namespace: string;
let scratch: string;
let proxy: CuttableProxy;
let client: Client;
const cleanups: (() => Promise<unknown>)[] = [];

type FakePostgres = LocalPostgres & { stoppedAt?: number; stops: number; restart(): void };

/** A primary PostgreSQL as far as the agent can tell, until stopped; `restart` brings it back as a primary. */
function primaryPostgres(): FakePostgres {
  const postgres: FakePostgres = {
    stops: 0,
    primaryPid: async () => (postgres.stoppedAt === undefined ? 4242 : undefined),
    stop: async () => {
      postgres.stoppedAt = Date.now();
      postgres.stops++;
    },
    restart: () => { postgres.stoppedAt = undefined; },
  };
  return postgres;
}

function agent(member: string, postgres: LocalPostgres): { stop: () => void; roleFile: string } {
  const roleFile = join(scratch, `${member}.role`);
  const stop = new AbortController();
  void new MemberAgent({ client, namespace, lease: 'db-primary', member, roleFile, postgres, log: pino({ level: 'silent' }) })
    .run(stop.signal);
  return { stop: () => stop.abort(), roleFile };
}

const renewTime = async () => Date.parse((await cluster.getJson(namespace, 'lease', 'db-primary')).spec.renewTime);

before(async () => {
  const ns = await freshNamespace(cluster, 'pgc-agent');
  namespace = ns.name;
  cleanups.push(ns.cleanup);
  scratch = await mkdtemp(join(tmpdir(), 'keelson-agent-test-'));
  const owner = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name: 'db', namespace, uid: 'u' } } as any;
  // Without the owner (there is no cluster here), which the garbage collector would act on.
  const unowned = (o: any) => ({ ...o, metadata: { ...o.metadata, ownerReferences: undefined } });
  const { serviceAccount, role, roleBinding } = agentIdentity(owner);
  await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List',
    items: [serviceAccount, role, roleBinding, lease(owner, { persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain' } } as any, 'db-0000')].map(unowned) }) });
  const server = new URL(cluster.state.server);
  proxy = await CuttableProxy.start({ host: server.hostname, port: Number(server.port) });
  cleanups.push(() => proxy.close());
  const kubeconfig = await cluster.serviceAccountKubeconfig(namespace, 'db-member', join(scratch, 'agent.kubeconfig'), proxy.url);
  client = new Client(new RestClient(await loadKubeConfig(kubeconfig)), agentPermissions, 'keelson-member-agent');
});
after(async () => {
  await Promise.all(cleanups.map((c) => c()));
  await rm(scratch, { recursive: true, force: true });
});

describe('the member agent, as its ServiceAccount', () => {
  it('renews its member\'s Lease, and stops the primary it can no longer confirm before the Lease expires', async () => {
    const postgres = primaryPostgres();
    const primary = agent('db-0000', postgres);
    cleanups.push(async () => primary.stop());
    const first = await renewTime();
    await waitFor('a renewal', async () => (await renewTime()) > first, { timeoutMs: 10_000 });
    assert.equal(await readFile(primary.roleFile, 'utf8'), 'primary\n');
    assert.equal(postgres.stoppedAt, undefined);

    proxy.partition();
    const lastRenewal = await renewTime();
    await waitFor('PostgreSQL stopped', async () => postgres.stoppedAt !== undefined, { timeoutMs: leaseDurationMs + 5_000 });
    proxy.resume();
    const stoppedAfter = postgres.stoppedAt! - lastRenewal;
    assert.ok(stoppedAfter >= fenceAfterMs - 2_500, `stopped ${stoppedAfter} ms after the last renewal: too soon`);
    assert.ok(stoppedAfter < leaseDurationMs, `stopped ${stoppedAfter} ms after the last renewal: the Lease had expired`);
    primary.stop();
  });

  it('keeps a primary it stopped from coming back until it can renew again', async () => {
    const postgres = primaryPostgres();
    const primary = agent('db-0000', postgres);
    cleanups.push(async () => primary.stop());
    await waitFor('the role confirmed', () => readFile(primary.roleFile, 'utf8').then((r) => r === 'primary\n', () => false));
    proxy.partition();
    try {
      await waitFor('PostgreSQL stopped', async () => postgres.stoppedAt !== undefined, { timeoutMs: leaseDurationMs + 5_000 });
      // The start script finds no role file, so it waits instead of starting a primary on a word 8 s old.
      assert.equal(existsSync(primary.roleFile), false, 'the role file outlived the stop');
      // A primary that starts anyway (the container restarted before the file went) is stopped at the next look.
      postgres.restart();
      await waitFor('PostgreSQL stopped again', async () => postgres.stops === 2, { timeoutMs: 10_000 });
    } finally {
      proxy.resume();
    }
    await waitFor('the role confirmed again', () => readFile(primary.roleFile, 'utf8').then((r) => r === 'primary\n', () => false),
      { timeoutMs: 15_000 });
    primary.stop();
  });

  it('stops at once a primary whose role the Lease gives to another member', async () => {
    const postgres = primaryPostgres();
    const other = agent('db-0001', postgres);
    cleanups.push(async () => other.stop());
    await waitFor('PostgreSQL stopped', async () => postgres.stoppedAt !== undefined, { timeoutMs: 5_000 });
    assert.equal(await readFile(other.roleFile, 'utf8'), 'replica\n');
    other.stop();
  });
});
