// The member agent against the real apiserver, as the ServiceAccount and Role the operator gives it, through a proxy
// the test can cut: it renews the Lease naming its member and says so in the role file, withdraws that word when it
// can no longer confirm it, before the Lease could expire, and says "replica" when the Lease names another member.
// What the member script does with the word is proven against real PostgreSQL (member.test.ts) and on the real node.
import assert from 'node:assert/strict';
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
import { MemberAgent } from './agent.ts';
import { agentIdentity, lease } from './objects.ts';
import { agentPermissions } from './permissions.ts';
import { fenceAfterMs, leaseDurationMs } from './plan.ts';

const cluster = testCluster();
let namespace: string;
let scratch: string;
let proxy: CuttableProxy;
let client: Client;
const cleanups: (() => Promise<unknown>)[] = [];

function agent(member: string): { stop: () => void; roleFile: string } {
  const roleFile = join(scratch, `${member}.role`);
  const stop = new AbortController();
  void new MemberAgent({ client, namespace, lease: 'db-primary', member, roleFile, log: pino({ level: 'silent' }) })
    .run(stop.signal);
  return { stop: () => stop.abort(), roleFile };
}

const word = (roleFile: string) => readFile(roleFile, 'utf8').catch(() => undefined);

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
  it('renews its member\'s Lease, and withdraws its word before the Lease could expire once it cannot', async () => {
    const primary = agent('db-0000');
    cleanups.push(async () => primary.stop());
    const first = await renewTime();
    await waitFor('a renewal', async () => (await renewTime()) > first, { timeoutMs: 10_000 });
    assert.equal(await word(primary.roleFile), 'primary\n');

    proxy.partition();
    const lastRenewal = await renewTime();
    const withdrawn = await waitFor('the word withdrawn', async () => (await word(primary.roleFile)) === undefined && Date.now(),
      { timeoutMs: leaseDurationMs + 5_000, intervalMs: 100 });
    const after = withdrawn - lastRenewal;
    assert.ok(after >= fenceAfterMs - 2_500, `withdrawn ${after} ms after the last renewal: too soon`);
    assert.ok(after < leaseDurationMs, `withdrawn ${after} ms after the last renewal: the Lease had expired`);
    // The member script finds no word, so it starts nothing until the agent can renew again.
    await assert.rejects(waitFor('a word while cut off', () => word(primary.roleFile), { timeoutMs: 5_000 }));
    proxy.resume();
    await waitFor('the role confirmed again', async () => (await word(primary.roleFile)) === 'primary\n', { timeoutMs: 15_000 });
    primary.stop();
  });

  it('says "replica" at once when the Lease names another member', async () => {
    const other = agent('db-0001');
    cleanups.push(async () => other.stop());
    await waitFor('the word', async () => (await word(other.roleFile)) === 'replica\n', { timeoutMs: 5_000 });
    other.stop();
  });
});
