// The member agent: a sidecar in every member pod, the part of fencing that still works when the member is cut off.
// The agent of the member the cluster's Lease names renews it, and writes its word to a role file the postgres
// container's PID 1 (the member script) reads every second: "primary" after each renewal, "replica" when the Lease
// names another member. The script stops a PostgreSQL running as a primary once that word is anything but a fresh
// "primary" (fenceAfterMs), so a cut-off member, an agent that died or hangs, or a second primary all end the same
// way, and no process of the user's image needs to share anything with the agent but that file. When it has not
// renewed for fenceAfterMs, the agent withdraws the file at once rather than let it go stale, because by the time
// the Lease expires the operator may promote another member; a stopped primary starts again only as what the Lease
// says.
//
// Failsafe, as Patroni's: when the apiserver cannot be reached (not when the Lease names another member), the
// primary asks every other member's agent, at the addresses the operator wrote into the Lease, to vouch for it. Each
// vouches only for the member it last read in the Lease, and promises not to say "primary" itself for promiseMs;
// when all of them do, the primary's word is renewed for another fenceAfterMs. One member that does not answer, or
// that has read since that the Lease names someone else, and the primary stops within fenceAfterMs as before. The
// primary writes the members it counts on into the Lease with each renewal, and the operator promotes, while the old
// primary's pod may still run, only one of those: that member's promise outlasts the old primary's word.
import { existsSync, writeFileSync } from 'node:fs';
import { rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { withSignal } from '../../runtime/abort.ts';
import type { Client } from '../../runtime/client.ts';
import { microTime, type Lease } from '../../runtime/leader.ts';
import { ApiError } from '../../runtime/rest.ts';
import { types } from '../../runtime/resources.ts';
import { failsafeMembersAnnotation, failsafePeersAnnotation, fenceAfterMs, renewIntervalMs, type Role } from './plan.ts';

/**
 * How long a member that vouched for the primary will not say "primary" itself: past the primary's word (written up
 * to a vouch timeout after the vouch), the member script's whole-second look at it, and its shutdown, with seconds
 * to spare.
 */
export const promiseMs = fenceAfterMs + 8_000;
/** How long the primary waits for each member's answer in a failsafe round. */
const vouchTimeoutMs = 1_000;

export interface AgentOptions {
  client: Client;
  namespace: string;
  lease: string;
  member: string;
  roleFile: string;
  log: Logger;
  now?: () => number;
}

export class MemberAgent {
  private fenceTimer: NodeJS.Timeout | undefined;
  /** Until when (on the monotonic clock) the last renewal, or failsafe round, vouches for this member as the primary. */
  private confirmedUntil = 0;
  /** Until when this member said it would not be the primary, having vouched for another. */
  private promisedUntil = 0;
  /** Whom the Lease named when this agent last read it. */
  private holder: string | undefined;
  /**
   * The members this one counts on in a failsafe round, and their agents' addresses, as its last renewal wrote; none
   * known (a Lease the operator wrote no addresses into), no failsafe.
   */
  private peers: Record<string, string> | undefined;
  private readonly now: () => number;

  constructor(private readonly options: AgentOptions) {
    this.now = options.now ?? (() => performance.now());
    // A restarted agent may have vouched for a primary before: it keeps that promise. A new pod has made none.
    const started = `${options.roleFile}.agent`;
    if (existsSync(started)) this.promisedUntil = this.now() + promiseMs;
    else writeFileSync(started, '');
  }

  /** One look at the Lease: renew it if it names this member, and write down the role it gives. */
  async tick(): Promise<void> {
    const started = this.now();
    let lease: Lease | undefined;
    try {
      lease = await withSignal(AbortSignal.timeout(renewIntervalMs), () => this.readOrRenew());
    } catch (error) {
      this.options.log.warn({ err: error }, 'could not confirm this member\'s role');
      // Failsafe is for an apiserver out of reach, not for one that answers with a refusal.
      const answered = error instanceof ApiError && error.status < 500;
      if (!answered && this.holder === this.options.member && this.now() >= this.promisedUntil &&
        (await this.failsafeRound())) {
        this.armFence(fenceAfterMs - (this.now() - started));
        return this.writeRole('primary');
      }
      return this.withdrawIfUnconfirmed();
    }
    if (!lease) {
      this.options.log.warn({ lease: this.options.lease }, 'the cluster\'s Lease does not exist');
      this.holder = undefined;
      return this.withdrawIfUnconfirmed();
    }
    this.holder = lease.spec?.holderIdentity;
    if (this.holder !== this.options.member) {
      this.disarm();
      return this.writeRole('replica');
    }
    this.peers = peersOf(lease, this.options.member);
    this.armFence(fenceAfterMs - (this.now() - started));
    // Promised to another primary: no word yet, so the member script starts nothing and a promotion waits.
    if (this.now() >= this.promisedUntil) await this.writeRole('primary');
  }

  /** Ticks every renewIntervalMs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tick();
      await new Promise((resolve) => setTimeout(resolve, renewIntervalMs));
    }
    this.disarm();
  }

  /**
   * Serves other members' failsafe rounds: POST /failsafe with {"primary": name} is answered 200 only for the member
   * the Lease named when this agent last read it, and never by the member it names itself.
   */
  serve(port: number, host: string): Promise<Server> {
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
        if (body.length > 1024) request.destroy();
      });
      request.on('end', () => {
        const primary = (() => { try { return (JSON.parse(body) as { primary?: string }).primary; } catch { return undefined; } })();
        const refusal = request.method !== 'POST' || request.url !== '/failsafe' ? 'not a failsafe call'
          : primary === undefined || primary !== this.holder ? `the Lease names ${this.holder ?? 'nobody'} as far as ` +
            `${this.options.member} knows, not ${primary}` : primary === this.options.member ? 'that is this member' : undefined;
        if (!refusal) this.promisedUntil = Math.max(this.promisedUntil, this.now() + promiseMs);
        response.writeHead(refusal ? 409 : 200, { 'content-type': 'text/plain' }).end(refusal ?? 'vouched');
      });
    });
    return new Promise((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve(server)));
  }

  /** Reads the Lease, and renews it (with the members counted on) when it names this member; once more on a conflict. */
  private async readOrRenew(): Promise<Lease | undefined> {
    const { client, namespace, lease: name, member } = this.options;
    for (let attempt = 1; ; attempt++) {
      const current = await client.get<Lease>(types.leases, namespace, name);
      if (current?.spec?.holderIdentity !== member) return current;
      // Without addresses to call there is no failsafe, and the Lease says so by naming nobody counted on.
      const peers = peersOf(current, member);
      const { [failsafePeersAnnotation]: _, ...annotations } = current.metadata.annotations ?? {};
      if (peers) annotations[failsafePeersAnnotation] = JSON.stringify(Object.keys(peers).sort());
      try {
        return await client.update<Lease>(types.leases, { ...current, metadata: { ...current.metadata, annotations },
          spec: { ...current.spec, renewTime: microTime() } });
      } catch (error) {
        // The operator writes the members' addresses into the Lease: read it again.
        if (!(error instanceof ApiError && error.conflict) || attempt === 2) throw error;
      }
    }
  }

  /** Whether every member this one counts on vouched for it: none at all, in a cluster of one. */
  private async failsafeRound(): Promise<boolean> {
    if (!this.peers) return false;
    const answers = await Promise.all(Object.entries(this.peers).map(async ([peer, address]) => {
      try {
        const response = await fetch(`http://${address}/failsafe`, { method: 'POST', body: JSON.stringify({
          primary: this.options.member }), signal: AbortSignal.timeout(vouchTimeoutMs) });
        return response.ok || `${peer}: ${await response.text()}`;
      } catch (error) {
        return `${peer}: ${(error as Error).message}`;
      }
    }));
    const refusals = answers.filter((a) => a !== true);
    if (refusals.length) this.options.log.warn({ refusals }, 'failsafe: not every member vouched for this primary');
    else this.options.log.warn({ members: Object.keys(this.peers) }, 'failsafe: the apiserver is out of reach, and ' +
      'every member vouched for this primary');
    return refusals.length === 0;
  }

  private armFence(inMs: number): void {
    this.disarm();
    this.confirmedUntil = this.now() + inMs;
    this.fenceTimer = setTimeout(() => void this.withdraw(), Math.max(0, inMs));
  }

  private async withdrawIfUnconfirmed(): Promise<void> {
    if (this.now() >= this.confirmedUntil) await this.withdraw();
  }

  private disarm(): void {
    clearTimeout(this.fenceTimer);
    this.fenceTimer = undefined;
  }

  /** No word at all: the member script stops a primary, and starts nothing, until the agent can renew again. */
  private async withdraw(): Promise<void> {
    await rm(this.options.roleFile, { force: true }).then(() => undefined, (error: Error) =>
      this.options.log.error({ err: error }, 'could not withdraw the role file'));
    this.options.log.warn({ after: fenceAfterMs }, 'this member can no longer confirm it is the primary: role withdrawn');
  }

  /** Atomically, so the member script never reads half a file. */
  private async writeRole(role: Role): Promise<void> {
    const temporary = `${this.options.roleFile}.new`;
    await writeFile(temporary, `${role}\n`);
    await rename(temporary, this.options.roleFile);
  }
}

/** The other members' agents, by member, from the addresses the operator wrote into the Lease. */
function peersOf(lease: Lease, member: string): Record<string, string> | undefined {
  const written = lease.metadata.annotations?.[failsafeMembersAnnotation];
  if (written === undefined) return undefined;
  const members = (() => { try { return JSON.parse(written) as Record<string, string>; } catch { return undefined; } })();
  return members && Object.fromEntries(Object.entries(members).filter(([name]) => name !== member));
}
