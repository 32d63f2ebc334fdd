import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { once } from 'node:events';

/** One control-plane component: a child process whose output goes to a log file. */
export class ManagedProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<unknown> = Promise.resolve();
  private exitCode: number | null = null;

  constructor(
    readonly name: string,
    private readonly command: string,
    private readonly args: string[],
    readonly logFile: string,
  ) {}

  start(): void {
    const log = openSync(this.logFile, 'a');
    this.exitCode = null;
    this.child = spawn(this.command, this.args, { stdio: ['ignore', log, log] });
    closeSync(log);
    this.exited = once(this.child, 'exit').then(([code]) => {
      this.exitCode = (code as number | null) ?? -1;
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
    const child = this.child;
    if (!child || this.exitCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  tail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }
}
