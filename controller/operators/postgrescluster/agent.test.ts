// The member agent against the real apiserver, as the ServiceAccount and Role the operator gives it, through a proxy
// the test can cut: it renews the Lease naming its member and says so in the role file, withdraws that word when it
// can no longer confirm it, before the Lease could expire, and says "replica" when the Lease names another member.
// In failsafe, agents on loopback ports vouch for the primary while the apiserver is out of reach.
// What the member script does with the word is proven against real PostgreSQL (member.test.ts) and on the real node.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { freshNamespace, testCluster } from '../../../test/support/cluster.ts';
import { CuttableProxy } from '../../../test/support/proxy.ts';
import { waitFor } from '../../../cluster/wait.ts';
import { Client } from '../../runtime/client.ts';
import { loadKubeConfig } from '../../runtime/kubeconfig.ts';
import { RestClient } from '../../runtime/rest.ts';
import { MemberAgent, promiseMs } from './agent.ts';
import { agentIdentity, lease } from './objects.ts';
import { agentPermissions } from './permissions.ts';
import { failsafeMembersAnnotation, failsafePeersAnnotation, fenceAfterMs, leaseDurationMs } from './plan.ts';
import { freePort } from '../../../cluster/ports.ts';

const cluster = testCluster();
let namespace: string;
let scratch: string;
let proxy: CuttableProxy;
let client: Client;
/** The agents' client that no proxy cuts. */
let direct: Client;
const cleanups: (() => Promise<unknown>)[] = [];

function agent(member: string, through = client): { stop: () => void; roleFile: string; agent: MemberAgent } {
  const roleFile = join(scratch, `${member}.role`);
  const stop = new AbortController();
  const memberAgent = new MemberAgent({ client: through, namespace, lease: 'db-primary', member, roleFile,
    log: pino({ level: 'silent' }) });
  void memberAgent.run(stop.signal);
  return { stop: () => stop.abort(), roleFile, agent: memberAgent };
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
  const uncut = await cluster.serviceAccountKubeconfig(namespace, 'db-member', join(scratch, 'direct.kubeconfig'));
  direct = new Client(new RestClient(await loadKubeConfig(uncut)), agentPermissions, 'keelson-member-agent');
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

  it('keeps its primary through an apiserver outage while every member vouches for it, and stops it before ' +
    'a member that stops vouching takes over', async () => {
    const names = ['db-0010', 'db-0011', 'db-0012'];
    const ports = await Promise.all(names.map(() => freePort()));
    const patchLease = (patch: object) => cluster.kubectl(['patch', '-n', namespace, 'lease', 'db-primary', '--type=merge',
      '-p', JSON.stringify(patch)]);
    await patchLease({ metadata: { annotations: { [failsafeMembersAnnotation]:
      JSON.stringify(Object.fromEntries(names.map((n, i) => [n, `127.0.0.1:${ports[i]}`]))) } },
    spec: { holderIdentity: names[0] } });
    // The primary and db-0012 reach the apiserver through the proxy; db-0011 directly, so it sees the Lease move.
    const agents = names.map((n, i) => agent(n, i === 1 ? direct : client));
    const servers = await Promise.all(agents.map((a, i) => a.agent.serve(ports[i]!, '127.0.0.1')));
    cleanups.push(async () => { agents.forEach((a) => a.stop()); servers.forEach((s) => s.close()); proxy.resume(); });
    const [primary, next] = [agents[0]!, agents[1]!];
    await waitFor('the primary\'s word', async () => (await word(primary.roleFile)) === 'primary\n', { timeoutMs: 10_000 });
    await waitFor('the members it counts on written with a renewal', async () => (await cluster.getJson(namespace, 'lease',
      'db-primary')).metadata.annotations[failsafePeersAnnotation] === JSON.stringify(names.slice(1)), { timeoutMs: 10_000 });

    proxy.partition();
    for (const until = Date.now() + 2 * leaseDurationMs; Date.now() < until; await sleep(250)) {
      assert.equal(await word(primary.roleFile), 'primary\n', 'the primary lost its word while every member vouched');
    }
    // The operator, which still reaches the apiserver, names db-0011: it refuses to vouch from its next look on.
    const moved = Date.now();
    await patchLease({ spec: { holderIdentity: names[1] } });
    let withdrawn = 0;
    const taken = await waitFor('db-0011 to say "primary"', async () => {
      if (!withdrawn && (await word(primary.roleFile)) === undefined) withdrawn = Date.now();
      return (await word(next.roleFile)) === 'primary\n' && Date.now();
    }, { timeoutMs: 30_000, intervalMs: 100 });
    assert.ok(withdrawn > 0 && withdrawn < taken, 'db-0011 said "primary" while the old primary still had its word');
    assert.ok(withdrawn - moved <= fenceAfterMs + 2 * 2_000 + 1_000, `withdrawn ${withdrawn - moved} ms after the move`);
    assert.ok(taken - withdrawn <= promiseMs, `db-0011 waited ${taken - withdrawn} ms past the old primary's withdrawal`);
    proxy.resume();
    agents.forEach((a) => a.stop());
  });

  it('says "replica" at once when the Lease names another member', async () => {
    const other = agent('db-0001');
    cleanups.push(async () => other.stop());
    await waitFor('the word', async () => (await word(other.roleFile)) === 'replica\n', { timeoutMs: 5_000 });
    other.stop();
  });
});
