// A controller under measurement: a child process whose CPU time and memory are read from /proc, as `ps` would.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { terminate } from '../cluster/process.ts';

const ticksPerSecond = 100;

export interface Usage {
  /** User plus system CPU seconds so far. */
  cpuSeconds: number;
  rssBytes: number;
  /** Of the resident set: the process's own memory (heaps, stacks), and pages of files it mapped (its binary). */
  anonymousBytes: number;
  fileBytes: number;
  /** The peak resident set size (VmHWM) so far. */
  peakRssBytes: number;
}

/** The local cluster's kube-apiserver, found by the certificate directory only it was given. */
export function apiserverPid(clusterDir: string): number | undefined {
  const certDir = `--cert-dir=${join(clusterDir, 'apiserver')}`;
  for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args[0]?.endsWith('kube-apiserver') && args.includes(certDir)) return Number(entry);
    } catch {
      // Gone since the directory was read.
    }
  }
  return undefined;
}

export function usageOf(pid: number): Usage {
  // Fields after the command name, which is in parentheses and may hold spaces.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;
  return {
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / ticksPerSecond,
    rssBytes: kib('VmRSS'),
    anonymousBytes: kib('RssAnon'),
    fileBytes: kib('RssFile'),
    peakRssBytes: kib('VmHWM'),
  };
}

export class MeasuredProcess {
  private readonly output: string[] = [];
  readonly startedAt = performance.now();

  constructor(readonly name: string, private readonly child: ChildProcess) {
    const keep = (chunk: Buffer) => {
      this.output.push(chunk.toString());
      if (this.output.length > 200) this.output.splice(0, 100);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  static start(name: string, command: string, args: string[], env: NodeJS.ProcessEnv): MeasuredProcess {
    return new MeasuredProcess(name, spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } }));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  usage(): Usage {
    if (!this.running) throw new Error(`${this.name} exited: ${this.tail()}`);
    return usageOf(this.child.pid!);
  }

  tail(): string {
    return this.output.join('').split('\n').slice(-20).join('\n');
  }

  async stop(): Promise<void> {
    await terminate(this.child, 30_000);
  }
}
