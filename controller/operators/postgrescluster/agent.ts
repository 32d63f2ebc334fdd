// The member agent: a sidecar in every member pod, the part of fencing that still works when the member is cut off.
// The agent of the member the cluster's Lease names renews it, and writes its word to a role file the postgres
// container's PID 1 (the member script) reads every second: "primary" after each renewal, "replica" when the Lease
// names another member. The script stops a PostgreSQL running as a primary once that word is anything but a fresh
// "primary" (fenceAfterMs), so a cut-off member, an agent that died or hangs, or a second primary all end the same
// way, and no process of the user's image needs to share anything with the agent but that file. When it has not
// renewed for fenceAfterMs, the agent withdraws the file at once rather than let it go stale, because by the time
// the Lease expires the operator may promote another member; a stopped primary starts again only as what the Lease
// says.
import { rename, rm, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { withSignal } from '../../runtime/abort.ts';
import type { Client } from '../../runtime/client.ts';
import { microTime, type Lease } from '../../runtime/leader.ts';
import { types } from '../../runtime/resources.ts';
import { fenceAfterMs, renewIntervalMs } from './plan.ts';

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
  /** Until when (on the monotonic clock) the last renewal vouches for this member as the primary. */
  private confirmedUntil = 0;
  private readonly now: () => number;

  constructor(private readonly options: AgentOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** One look at the Lease: renew it if it names this member, and write down the role it gives. */
  async tick(): Promise<void> {
    const { client, namespace, lease: name, member } = this.options;
    const started = this.now();
    let lease: Lease | undefined;
    try {
      lease = await withSignal(AbortSignal.timeout(renewIntervalMs), async () => {
        const current = await client.get<Lease>(types.leases, namespace, name);
        if (current?.spec?.holderIdentity !== member) return current;
        return client.update<Lease>(types.leases, { ...current, spec: { ...current.spec, renewTime: microTime() } });
      });
    } catch (error) {
      this.options.log.warn({ err: error }, 'could not confirm this member\'s role');
      return this.withdrawIfUnconfirmed();
    }
    if (!lease) {
      this.options.log.warn({ lease: name }, 'the cluster\'s Lease does not exist');
      return this.withdrawIfUnconfirmed();
    }
    const role = lease.spec?.holderIdentity === member ? 'primary' : 'replica';
    if (role === 'primary') this.armFence(fenceAfterMs - (this.now() - started));
    else this.disarm();
    await this.writeRole(role);
  }

  /** Ticks every renewIntervalMs until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.tick();
      await new Promise((resolve) => setTimeout(resolve, renewIntervalMs));
    }
    this.disarm();
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
  private async writeRole(role: 'primary' | 'replica'): Promise<void> {
    const temporary = `${this.options.roleFile}.new`;
    await writeFile(temporary, `${role}\n`);
    await rename(temporary, this.options.roleFile);
  }
}
