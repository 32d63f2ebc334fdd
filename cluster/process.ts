import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { once } from 'node:events';

/** One control-plane component: a child process whose output goes to a log file. */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exitCode: number | null = null;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    readonly logFile: string,
    private readonly env?: NodeJS.ProcessEnv,
  ) {}

  start(): void {
    const log = openSync(this.logFile, 'a');
    this.exitCode = null;
    this.child = spawn(this.command, this.args, { stdio: ['ignore', log, log], ...(this.env ? { env: this.env } : {}) });
    closeSync(log);
    this.child.once('exit', (code) => {
      this.exitCode = code ?? -1;
    });
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Set once the process has exited; undefined while it runs. */
  get exitedWith(): number | undefined {
    return this.exitCode ?? undefined;
  }

  /** SIGTERM, then SIGKILL if it has not exited within the grace period. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.child) await terminate(this.child, graceMs);
  }

  tail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}

/** SIGTERM, then SIGKILL once `graceMs` is over, as the kubelet stops a container. Resolves when `child` has exited:
 * true if it had to be killed, false if it stopped on SIGTERM (or already had). */
export async function terminate(child: ChildProcess, graceMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return false;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  let killed = false;
  const killer = setTimeout(() => {
    killed = true;
    child.kill('SIGKILL');
  }, graceMs);
  await exited;
  clearTimeout(killer);
  return killed;
}
