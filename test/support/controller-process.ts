// A controller running as its own process, as in the Deployment: flags, JSON logs captured line by line, metrics and
// health on loopback ports the process picks itself (port 0) and logs: ports picked here and passed in could be
// taken by another process before the controller listens, as parallel tests showed.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { terminate } from '../../cluster/process.ts';
import { GiveUp, waitFor, type WaitOptions } from '../../cluster/wait.ts';

export interface LogLine {
  level: string;
  msg: string;
  time: string;
  [field: string]: unknown;
}

/** The sum of every sample of `name` whose labels include `labels`, in Prometheus text format. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) total += Number(match[3]);
  }
  return total;
}

export class ControllerProcess {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.logs.push(JSON.parse(line) as LogLine);
      } catch {
        this.stderr.push(line);
      }
    });
    createInterface({ input: child.stderr! }).on('line', (line) => this.stderr.push(line));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Starts `script` with `args` plus loopback metrics and health addresses, on `node` (this process's by default). */
  static async start(script: string, args: string[], env: NodeJS.ProcessEnv = {}, node = process.execPath):
  Promise<ControllerProcess> {
    const child = spawn(node, ['--enable-source-maps', script, ...args,
      '--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0'],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, KUBECONFIG: '', ...env } });
    return new ControllerProcess(child);
  }

  /** The port a server of the process listens on, from its log. */
  port(server: 'metrics' | 'health'): Promise<number> {
    return waitFor(`the controller serving ${server}`, () => {
      if (this.child.exitCode !== null) throw new GiveUp(`controller exited: ${this.describe()}`);
      return this.logs.find((l) => l.msg === 'starting')?.[server] as number | undefined;
    }, { timeoutMs: 30_000 });
  }

  get pid(): number {
    return this.child.pid!;
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** SIGTERM, as the kubelet sends; a controller still running 30 s later is killed and the stop fails with its log. */
  async stop(graceMs = 30_000): Promise<void> {
    if (!(await terminate(this.child, graceMs))) return;
    const tail = this.logs.slice(-15).map((line) => JSON.stringify(line)).join('\n');
    throw new Error(`the controller did not stop within ${graceMs / 1000} s of SIGTERM; its last log lines:\n${tail}`);
  }

  /** Waits for a log line matching `predicate`, among those already seen too. */
  waitForLog(what: string, predicate: (line: LogLine) => boolean, options?: WaitOptions): Promise<LogLine> {
    return waitFor(`${what} (in the controller's log)`, () => {
      if (this.child.exitCode !== null) throw new Error(`controller exited: ${this.stderr.slice(-5).join('\n')}`);
      return this.logs.find(predicate);
    }, options);
  }

  /** The metrics page, once the process serves it (a test may ask before it has started listening). */
  metrics(): Promise<string> {
    return waitFor('the controller serving /metrics', async () => {
      if (this.child.exitCode !== null) throw new GiveUp(`controller exited: ${this.stderr.slice(-5).join('\n')}`);
      return fetch(`http://127.0.0.1:${await this.port('metrics')}/metrics`).then((res) => res.text(), () => undefined);
    }, { timeoutMs: 15_000 });
  }

  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    return metricValue(await this.metrics(), name, labels);
  }

  async readyz(): Promise<number> {
    return (await this.readyzAnswer()).status;
  }

  /** /readyz's status and the reason it gives. */
  async readyzAnswer(): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${await this.port('health')}/readyz`);
    return { status: res.status, body: await res.text() };
  }

  describe(): string {
    return [...this.logs.slice(-20).map((l) => JSON.stringify(l)), ...this.stderr.slice(-10)].join('\n');
  }
}
