// A PostgreSQL client writing continuously from a pod, as an application would: one INSERT per row, each counted as
// acknowledged only when psql reported success within its own timeout. What the test then reads back shows whether
// an acknowledged row was lost, and the gaps between acknowledgements show how long writes stopped.
import { spawn, type ChildProcess } from 'node:child_process';
import type { LocalCluster } from '../../cluster/cluster.ts';
import { waitFor } from '../../cluster/wait.ts';

export interface WriteReport {
  acknowledged: number[];
  /** The longest time between two acknowledged writes, in ms. */
  longestGapMs: number;
}

export class ContinuousWriter {
  private readonly acks: { id: number; at: number }[] = [];
  private readonly failures: { at: number; error: string }[] = [];
  private ended?: string;
  private buffered = '';

  private constructor(private readonly child: ChildProcess, private readonly stopLoop: () => Promise<unknown>) {
    child.stdout!.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString();
      const lines = this.buffered.split('\n');
      this.buffered = lines.pop()!;
      for (const line of lines) {
        const match = /^ok (\d+)$/.exec(line.trim());
        if (match) this.acks.push({ id: Number(match[1]), at: Date.now() });
        const failed = /^fail \d+ (\d+) ?(.*)$/.exec(line.trim());
        if (failed) {
          const [, status, error] = failed;
          this.failures.push({ at: Date.now(), error: error || (status === '124' ? 'no answer within 5 s' : `psql exited ${status}`) });
        }
      }
    });
    child.once('exit', (code, signal) => { this.ended = `kubectl exec ended (${signal ?? code})`; });
  }

  /** Starts inserting ids 1, 2, ... into `table` through `host` from the pod `pod`, whose environment logs in. */
  static start(cluster: LocalCluster, namespace: string, pod: string, host: string, table: string): ContinuousWriter {
    const stopFile = `/tmp/stop-writing-${table}`;
    const loop = `rm -f ${stopFile}; i=0; while [ ! -e ${stopFile} ]; do i=$((i+1));
      if out=$(timeout 5 psql -X -h ${host} -Atqc "INSERT INTO ${table} (id) VALUES ($i)" 2>&1);
      then echo "ok $i"; else echo "fail $i $? $(echo "$out" | head -n 1)"; fi; sleep 0.1; done`;
    return new ContinuousWriter(spawn(cluster.kubectlPath, [`--kubeconfig=${cluster.state.kubeconfig}`, '-n', namespace,
      'exec', pod, '--', 'sh', '-c', loop], { stdio: ['ignore', 'pipe', 'ignore'] }),
    () => cluster.kubectl(['-n', namespace, 'exec', pod, '--', 'touch', stopFile]));
  }

  /** Acknowledgements since `since` (ms since the epoch). */
  acknowledgedSince(since: number): number {
    return this.acks.filter((a) => a.at >= since).length;
  }

  /**
   * Waits for `count` writes acknowledged since `since` (ms since the epoch); one that times out says how the writes
   * since failed, so a failure tells a stall from a refusal.
   */
  async acknowledged(what: string, since: number, timeoutMs: number, count = 10): Promise<void> {
    await waitFor(what, async () => this.acknowledgedSince(since) >= count, { timeoutMs }).catch((error: Error) => {
      const failed = this.failures.filter((f) => f.at >= since);
      const errors = [...new Set(failed.map((f) => f.error).reverse())].slice(0, 3);
      throw new Error(`${error.message}: ${this.acknowledgedSince(since)} acknowledged and ${failed.length} failed since` +
        `${errors.length ? `, latest errors: ${errors.join(' | ')}` : ''}${this.ended ? `; ${this.ended}` : ''}`);
    });
  }

  async stop(): Promise<WriteReport> {
    // Killing kubectl would leave the loop running in the pod: it is told to stop, and its last answer awaited.
    const exited = this.ended ? Promise.resolve() : new Promise((resolve) => this.child.once('exit', resolve));
    await this.stopLoop();
    const killer = setTimeout(() => this.child.kill('SIGTERM'), 15_000);
    await exited;
    clearTimeout(killer);
    const gaps = this.acks.slice(1).map((a, i) => a.at - this.acks[i]!.at);
    return { acknowledged: this.acks.map((a) => a.id), longestGapMs: Math.max(0, ...gaps) };
  }
}
