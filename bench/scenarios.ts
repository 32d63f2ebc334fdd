// The five scenarios, each run for one implementation at a time on a namespace of its own. A controller is a real
// process; the floor is the benchmark writing for itself. Figures go into a Results table keyed by metric.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RestClient } from '../controller/runtime/rest.ts';
import { difference, requestCounts, type RequestCounts } from './apiserver.ts';
import type { Floor } from './floor.ts';
import type { Implementation } from './implementations.ts';
import { usageOf, type MeasuredProcess } from './process.ts';
import { quantile } from './stats.ts';
import { createTDSet, inParallel, setReplicas, Tracker } from './workload.ts';
import { deleteNamespace, ensureNamespace } from './namespaces.ts';
import { waitFor } from '../cluster/wait.ts';

export interface Settings {
  burstSizes: number[];
  /** Bursts larger still, for all but kopf: with burstSizes, how time and CPU per TDSet grow with work. */
  scalingSizes: number[];
  steadySeconds: number;
  latencyPerSecond: number;
  latencySeconds: number;
  pods: number;
  /** The pod counts of the growth part, smallest first: the memory case again at each, on the same growing set. */
  growthPods: number[];
  /** Pods created per second, crash-looping, for how long, and how long each lives before it is deleted. */
  churn: { perSecond: number; seconds: number; lifetimeSeconds: number };
  repetitions: number;
  /**
   * Which parts run: the session (first burst, steady, latency, start-up), the larger bursts, the largest bursts of
   * the scaling part (not for kopf, which would not reconcile 20,000 TDSets in 15 minutes), the memory case, the
   * memory case at growing pod counts, and pod churn under a PodAlert (the last two for controllers but kopf, which
   * does not fill a cache of 10,000 pods in 10 minutes).
   */
  parts: Part[];
}

export const parts = ['session', 'bursts', 'scaling', 'memory', 'growth', 'churn'] as const;
export type Part = (typeof parts)[number];

export const fullSettings: Settings = { burstSizes: [1000, 5000], scalingSizes: [20_000], steadySeconds: 60,
  latencyPerSecond: 20, latencySeconds: 30, pods: 10_000, growthPods: [10_000, 25_000, 50_000],
  churn: { perSecond: 5, seconds: 60, lifetimeSeconds: 4 }, repetitions: 3, parts: [...parts] };
export const quickSettings: Settings = { burstSizes: [100, 300], scalingSizes: [1000], steadySeconds: 10,
  latencyPerSecond: 10, latencySeconds: 10, pods: 1000, growthPods: [1000, 2000],
  churn: { perSecond: 5, seconds: 10, lifetimeSeconds: 4 }, repetitions: 2, parts: [...parts] };

/** metric → implementation → one value per repetition. */
export type Results = Map<string, Map<string, number[]>>;

export function record(results: Results, metric: string, implementation: string, value: number): void {
  const row = results.get(metric) ?? new Map<string, number[]>();
  results.set(metric, row);
  row.set(implementation, [...(row.get(implementation) ?? []), value]);
}

/** Either a controller process under measurement or the floor, which writes from inside the benchmark. */
export interface Contender {
  name: string;
  controller?: Implementation;
  floor?: Floor;
}

export interface Bench {
  admin: RestClient;
  kubeconfig: string;
  /** The simulated nodes pods are bound to. */
  nodes: readonly string[];
  settings: Settings;
  results: Results;
  /** The apiserver's process, whose CPU each burst also reports: the work a contender's requests cost it. */
  apiserverPid?: number;
  /** Where the Keelson process writes its CPU profiles, if anywhere. */
  profileDir?: string;
  /** Scenarios a contender could not finish, for the report. */
  notes: string[];
  log(message: string): void;
}

const mib = (bytes: number) => bytes / (1 << 20);
const concurrency = 32;
const reconcileTimeoutMs = 15 * 60_000;
/** How long a controller may take to fill its pod cache and reconcile once before the memory case gives up on it. */
const cacheFillTimeoutMs = 10 * 60_000;
/** Growth of the peak resident set below this (V8's slow trickle at rest) does not count as still growing. */
const peakGrowthSlackBytes = 1 << 20;

class Run {
  process?: MeasuredProcess;
  private tracker!: Tracker;

  constructor(private readonly bench: Bench, private readonly who: Contender, readonly namespace: string) {}

  /** Starts the controller and waits for a first TDSet reconciled; resolves with the seconds that took. */
  async open(cachePods = false, timeoutMs = reconcileTimeoutMs): Promise<number> {
    await ensureNamespace(this.bench.admin, this.namespace);
    this.tracker = await Tracker.start(this.bench.admin, this.namespace, this.bench.log);
    const started = performance.now();
    this.start(cachePods);
    await this.create(['warmup']);
    return (await this.tracker.untilComplete(timeoutMs) - started) / 1000;
  }

  start(cachePods = false): void {
    this.process = this.who.controller?.start({ kubeconfig: this.bench.kubeconfig, cachePods,
      profileDir: this.bench.profileDir });
  }

  async create(names: readonly string[]): Promise<void> {
    await inParallel(names, concurrency, async (name) => {
      const tdset = await createTDSet(this.bench.admin, this.namespace, name, 1);
      this.tracker.expect(name, 1);
      await this.who.floor?.created(tdset);
    });
  }

  cpuSeconds(): number {
    return this.process?.usage().cpuSeconds ?? 0;
  }

  record(metric: string, value: number): void {
    record(this.bench.results, metric, this.who.name, value);
  }

  /** N TDSets created at once: the time until all are reconciled, and the requests and CPU it took. */
  async burst(size: number): Promise<void> {
    const names = Array.from({ length: size }, (_, i) => `tds-${i}`);
    const apiserverCpu = () => (this.bench.apiserverPid ? usageOf(this.bench.apiserverPid).cpuSeconds : Number.NaN);
    const [before, cpu, apiserverBefore, started] = [await requestCounts(this.bench.admin), this.cpuSeconds(),
      apiserverCpu(), performance.now()];
    await this.create(names);
    const done = await this.tracker.untilComplete(reconcileTimeoutMs);
    // Events are written in the background by both controllers: their writes and CPU belong to the burst.
    await writesSettled(this.bench.admin);
    const apiserverSeconds = apiserverCpu() - apiserverBefore;
    // The benchmark's own creates are not the controller's.
    const requests = difference(await requestCounts(this.bench.admin), before);
    this.record(`burst ${size}: time to all reconciled (s)`, (done - started) / 1000);
    this.record(`burst ${size}: time per TDSet (ms)`, (done - started) / size);
    this.record(`burst ${size}: API writes`, requests.writes - size);
    this.record(`burst ${size}: API reads`, requests.reads);
    // The benchmark's own creates and reads are in it too, the same for every contender.
    if (!Number.isNaN(apiserverSeconds)) this.record(`burst ${size}: apiserver CPU (s)`, apiserverSeconds);
    if (this.process) {
      const seconds = this.cpuSeconds() - cpu;
      this.record(`burst ${size}: CPU (s)`, seconds);
      this.record(`burst ${size}: CPU per TDSet (ms)`, (seconds * 1000) / size);
    }
  }

  /** Nothing changes: writes (should be none) and CPU over the window, then the resident set at idle. */
  async steady(seconds: number): Promise<void> {
    await sleep(5_000);
    const [before, cpu]: [RequestCounts, number] = [await requestCounts(this.bench.admin), this.cpuSeconds()];
    await sleep(seconds * 1000);
    const requests = difference(await requestCounts(this.bench.admin), before);
    this.record(`steady ${seconds} s: API writes`, requests.writes);
    this.record(`steady ${seconds} s: API reads`, requests.reads);
    if (this.process) {
      this.record(`steady ${seconds} s: CPU (s)`, this.cpuSeconds() - cpu);
      const { rssBytes, anonymousBytes, fileBytes } = this.process.usage();
      this.record('idle RSS (MiB)', mib(rssBytes));
      this.record('idle RSS: anonymous (MiB)', mib(anonymousBytes));
      this.record('idle RSS: file-backed (MiB)', mib(fileBytes));
    }
  }

  /** Spec changes at a fixed rate over the first 100 TDSets: from each change sent to the Deployment updated. */
  async latency(perSecond: number, seconds: number, targets: number): Promise<void> {
    const sent = new Map<string, number>();
    const started = performance.now();
    const changes: Promise<void>[] = [];
    for (let k = 0; k < perSecond * seconds; k++) {
      const wait = started + (k * 1000) / perSecond - performance.now();
      if (wait > 0) await sleep(wait);
      const name = `tds-${k % targets}`;
      const replicas = 2 + Math.floor(k / targets);
      sent.set(`${name}=${replicas}`, performance.now());
      this.tracker.expect(name, replicas);
      changes.push(setReplicas(this.bench.admin, this.namespace, name, replicas)
        .then((tdset) => this.who.floor?.changed(tdset)));
    }
    await Promise.all(changes);
    const latencies = await waitForSeen(this.tracker, sent);
    this.record('latency p50 (ms)', quantile(latencies, 0.5));
    this.record('latency p99 (ms)', quantile(latencies, 0.99));
  }

  /** Process start to caches synced and a new TDSet reconciled, with the earlier TDSets all present. */
  async startup(): Promise<void> {
    await this.stop();
    const started = performance.now();
    const probe = this.create(['startup-probe']);
    this.start();
    await probe;
    this.record('start-up to first reconcile (s)', (await this.tracker.untilComplete(reconcileTimeoutMs) - started) / 1000);
  }

  /** Samples the process until its peak resident set has not grown (by more than the slack) for `quietMs`. */
  async peakMemory(metric: string, quietMs: number): Promise<void> {
    if (!this.process) return;
    let peak = 0;
    let grewAt = performance.now();
    const deadline = grewAt + 180_000;
    while (performance.now() - grewAt < quietMs && performance.now() < deadline) {
      const { peakRssBytes } = this.process.usage();
      if (peakRssBytes > peak + peakGrowthSlackBytes) grewAt = performance.now();
      peak = Math.max(peak, peakRssBytes);
      await sleep(250);
    }
    if (performance.now() >= deadline) this.bench.log(`${this.who.name}: peak RSS still growing after 180 s; recorded as is`);
    this.record(metric, mib(peak));
  }

  async stop(): Promise<void> {
    await this.process?.stop();
  }

  /** Deletes the namespace while the controller still runs, since kopf puts finalizers on what it times. */
  async close(): Promise<void> {
    this.tracker?.stop();
    if (this.process && !this.process.running) this.start();
    await deleteNamespace(this.bench.admin, this.namespace);
    await this.stop();
  }
}

/** Until the apiserver has taken no write for 2 s (at most a minute). */
async function writesSettled(admin: RestClient): Promise<void> {
  let last = (await requestCounts(admin)).writes;
  let stillSince = performance.now();
  const deadline = stillSince + 60_000;
  while (performance.now() - stillSince < 2_000 && performance.now() < deadline) {
    await sleep(250);
    const writes = (await requestCounts(admin)).writes;
    if (writes !== last) [last, stillSince] = [writes, performance.now()];
  }
}

async function waitForSeen(tracker: Tracker, sent: Map<string, number>): Promise<number[]> {
  await waitFor('every change to reach its Deployment', () => [...sent.keys()].every((key) => tracker.seenAt.has(key)),
    { timeoutMs: 120_000, intervalMs: 100 });
  return [...sent].map(([key, at]) => tracker.seenAt.get(key)! - at);
}

async function within(bench: Bench, who: Contender, namespace: string, body: (run: Run) => Promise<void>,
  open: (run: Run) => Promise<unknown> = (run) => run.open()): Promise<void> {
  const run = new Run(bench, who, namespace);
  try {
    await open(run);
    await body(run);
  } catch (error) {
    throw new Error(`${who.name} in ${namespace}: ${(error as Error).message}\n${run.process?.tail() ?? ''}`);
  } finally {
    await run.close();
  }
}

/** Every Pod cached: the time to a first reconcile, then the peak resident set. A controller that cannot fill its
 * cache in time is noted in the report, and the run goes on to the next contender. */
async function memory(bench: Bench, who: Contender, rep: number, pods = bench.settings.pods, prefix = ''):
Promise<void> {
  let opened = false;
  try {
    await within(bench, who, `bench-${who.name}-${rep}-m${prefix ? pods : ''}`,
      (run) => run.peakMemory(`${prefix}peak RSS, ${pods} pods cached (MiB)`, 10_000),
      async (run) => {
        run.record(`${prefix}start-up to first reconcile, ${pods} pods cached (s)`, await run.open(true, cacheFillTimeoutMs));
        opened = true;
      });
  } catch (error) {
    if (opened) throw error;
    note(bench, `${who.name}, repetition ${rep}: no first reconcile with ${pods} pods to cache, so no memory ` +
      `figures (${(error as Error).message.split('\n')[0]})`);
  }
}

/** A figure the report lacks, and why: logged, and said once under the results. */
function note(bench: Bench, why: string): void {
  if (bench.notes.includes(why)) return;
  bench.log(why);
  bench.notes.push(why);
}

/** One repetition of every scenario for one contender. */
export async function repetition(bench: Bench, who: Contender, rep: number): Promise<void> {
  const { settings } = bench;
  const [first, ...larger] = settings.burstSizes;
  if (settings.parts.includes('session')) {
    bench.log(`${who.name} #${rep}: burst ${first}, steady, latency, start-up`);
    await within(bench, who, `bench-${who.name}-${rep}-a`, async (run) => {
      await run.burst(first!);
      await run.steady(settings.steadySeconds);
      await run.latency(settings.latencyPerSecond, settings.latencySeconds, Math.min(first!, 100));
      await run.startup();
    });
  }
  for (const size of settings.parts.includes('bursts') ? larger : []) {
    bench.log(`${who.name} #${rep}: burst ${size}`);
    await within(bench, who, `bench-${who.name}-${rep}-b${size}`, (run) => run.burst(size));
  }
  for (const size of settings.parts.includes('scaling') ? settings.scalingSizes : []) {
    if (who.name === 'kopf') {
      note(bench, `kopf has no burst of ${size}: it does not run the scaling part, sized for what kopf could not reconcile in 15 minutes`);
      continue;
    }
    bench.log(`${who.name} #${rep}: burst ${size}`);
    // A burst this large that fails is noted, as the memory case's are, and the run goes on.
    await within(bench, who, `bench-${who.name}-${rep}-b${size}`, (run) => run.burst(size).catch((error: Error) =>
      note(bench, `${who.name}, repetition ${rep}: no burst of ${size} (${error.message.split('\n')[0]})`)));
  }
  if (who.controller && settings.parts.includes('memory')) {
    bench.log(`${who.name} #${rep}: memory with ${settings.pods} pods cached`);
    await memory(bench, who, rep);
  }
}

export const growthPrefix = 'growth: ';

/** The memory case at one pod count of the growth part. */
export async function growth(bench: Bench, who: Contender, rep: number, pods: number): Promise<void> {
  if (!who.controller || who.name === 'kopf') return;
  bench.log(`${who.name} #${rep}: growth, ${pods} pods cached`);
  await memory(bench, who, rep, pods, growthPrefix);
}

/** Per contender and repetition, the peak resident set added per further 10,000 pods, smallest count to largest. */
export function recordGrowthSlopes(results: Results, counts: readonly number[]): void {
  const [first, last] = [counts[0]!, counts.at(-1)!];
  if (last === first) return;
  const peaks = (pods: number) => results.get(`${growthPrefix}peak RSS, ${pods} pods cached (MiB)`);
  for (const [name, highs] of peaks(last) ?? []) {
    const lows = peaks(first)?.get(name) ?? [];
    highs.forEach((high, i) => {
      if (lows[i] !== undefined) {
        record(results, `${growthPrefix}peak RSS added per further 10000 pods (MiB)`, name,
          ((high - lows[i]) * 10_000) / (last - first));
      }
    });
  }
}
