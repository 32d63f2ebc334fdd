// The member agent: a sidecar in every member pod, the part of fencing that still works when the member is cut off.
// The agent of the member the cluster's Lease names renews it; when it has not renewed for fenceAfterMs it stops
// PostgreSQL, whatever the reason (the apiserver unreachable, the network gone), because by the time the Lease
// expires the operator may promote another member. An agent whose member runs as a primary that the Lease does not
// name stops it at once. Each confirmed role is written to a file the member's start script waits for, so a
// stopped primary starts again only as what the Lease says: a stop withdraws the file first, and a primary that
// starts again while the agent still cannot confirm it is stopped again.
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { withSignal } from '../../runtime/abort.ts';
import type { Client } from '../../runtime/client.ts';
import { microTime, type Lease } from '../../runtime/leader.ts';
import { types } from '../../runtime/resources.ts';
import { fenceAfterMs, renewIntervalMs } from './plan.ts';


/** The local PostgreSQL, as the agent sees it through the data directory and the shared process namespace. */
export interface LocalPostgres {
  /** The postmaster's pid when it runs as a primary (no standby.signal); undefined otherwise. */
  primaryPid(): Promise<number | undefined>;
  /** Immediate shutdown: no client gets another answer. */
  stop(pid: number): Promise<void>;
}

export interface AgentOptions {
  client: Client;
  namespace: string;
  lease: string;
  member: string;
  roleFile: string;
  postgres: LocalPostgres;
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

  /** One look at the Lease: renew it if it names this member, stop a primary it does not name. */
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
      return this.fenceIfUnconfirmed();
    }
    if (!lease) {
      this.options.log.warn({ lease: name }, 'the cluster\'s Lease does not exist');
      return this.fenceIfUnconfirmed();
    }
    const role = lease.spec?.holderIdentity === member ? 'primary' : 'replica';
    if (role === 'primary') {
      this.armFence(fenceAfterMs - (this.now() - started));
    } else {
      this.disarm();
      const pid = await this.options.postgres.primaryPid();
      if (pid !== undefined) await this.fence(pid, `the Lease names ${lease.spec?.holderIdentity ?? 'no member'}`);
    }
    await this.writeRole(role);
  }

  /** Ticks every renewIntervalMs until `signal` aborts. A primary that no tick confirms is stopped, too. */
  async run(signal: AbortSignal): Promise<void> {
    this.armFence(fenceAfterMs);
    while (!signal.aborted) {
      await this.tick();
      await new Promise((resolve) => setTimeout(resolve, renewIntervalMs));
    }
    this.disarm();
  }

  private armFence(inMs: number): void {
    this.disarm();
    this.confirmedUntil = this.now() + inMs;
    this.fenceTimer = setTimeout(() => void this.fenceIfPrimary(), Math.max(0, inMs));
  }

  /** Past the last renewal's word, a primary running (say, its container restarted) is stopped again. */
  private async fenceIfUnconfirmed(): Promise<void> {
    if (this.now() >= this.confirmedUntil) await this.fenceIfPrimary();
  }

  private disarm(): void {
    clearTimeout(this.fenceTimer);
    this.fenceTimer = undefined;
  }

  private async fenceIfPrimary(): Promise<void> {
    const pid = await this.options.postgres.primaryPid();
    if (pid !== undefined) await this.fence(pid, `the Lease was not renewed for ${fenceAfterMs / 1000}s`);
  }

  private async fence(pid: number, why: string): Promise<void> {
    this.options.log.warn({ pid, why }, 'stopping PostgreSQL: this member can no longer confirm it is the primary');
    // Withdrawn first: a role file still fresh would let the start script bring the primary straight back.
    await rm(this.options.roleFile, { force: true });
    await this.options.postgres.stop(pid);
  }

  /** Atomically, so the start script never reads half a file. */
  private async writeRole(role: 'primary' | 'replica'): Promise<void> {
    const temporary = `${this.options.roleFile}.new`;
    await writeFile(temporary, `${role}\n`);
    await rename(temporary, this.options.roleFile);
  }
}

/** PostgreSQL in `dataDir`, seen from a process sharing its pid namespace and user. */
export function localPostgres(dataDir: string): LocalPostgres {
  const running = async (pid: number) =>
    (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0')[0]?.endsWith('postgres') ?? false;
  return {
    async primaryPid() {
      const pid = Number((await readFile(`${dataDir}/postmaster.pid`, 'utf8').catch(() => '')).split('\n')[0]);
      if (!Number.isInteger(pid) || pid <= 0 || !(await running(pid))) return undefined;
      const standby = await readFile(`${dataDir}/standby.signal`).then(() => true, () => false);
      return standby ? undefined : pid;
    },
    async stop(pid) {
      process.kill(pid, 'SIGQUIT');
      for (let waited = 0; waited < 2000 && (await running(pid)); waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      if (await running(pid)) process.kill(pid, 'SIGKILL');
    },
  };
}
