// The benchmark's workload: TDSets whose schedule keeps them on defaultReplica for the whole run, created and
// changed by the benchmark, and a tracker that sees, through its own watches, when each one has been reconciled.
import type { RestClient } from '../controller/runtime/rest.ts';
import { kindType, pathOf, types, type KubeObject } from '../controller/runtime/resources.ts';
import { TDSet, type TDSetResource } from '../controller/operators/tdset/schema.ts';
import type { Owner } from '../controller/runtime/objects.ts';
import { retrying } from './retrying.ts';
import { watch, type Watch } from './watch.ts';

export const tdsetType = kindType(TDSet);

/** A TDSet as the apiserver returns it: defaulted, so defaultReplica is always there. */
export type TDSetObject = TDSetResource & Owner & { spec: { defaultReplica: number } };

interface DeploymentObject extends KubeObject {
  spec: { replicas: number };
}

/** A TDSet whose one window is twelve hours away, so defaultReplica is in force for any run shorter than that. */
export function tdsetManifest(namespace: string, name: string, replicas: number): object {
  const away = (new Date().getUTCHours() + 12) % 24;
  return {
    apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', metadata: { name, namespace },
    spec: { container: { image: 'registry.example/hello:1', port: 8080 }, timeZone: 'UTC', defaultReplica: replicas,
      schedulingConfig: [{ startTime: away, endTime: (away + 1) % 24, replica: replicas + 100 }] },
  };
}

/** Runs `task` for every item, at most `concurrency` at a time. */
export async function inParallel<T>(items: readonly T[], concurrency: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

export function createTDSet(client: RestClient, namespace: string, name: string, replicas: number): Promise<TDSetObject> {
  return retrying(() => client.json<TDSetObject>({ method: 'POST', path: pathOf(tdsetType, namespace),
    body: tdsetManifest(namespace, name, replicas) }));
}

export function setReplicas(client: RestClient, namespace: string, name: string, replicas: number): Promise<TDSetObject> {
  return retrying(() => client.json<TDSetObject>({ method: 'PATCH', path: pathOf(tdsetType, namespace, name),
    contentType: 'application/merge-patch+json', body: { spec: { defaultReplica: replicas } } }));
}

/** What the benchmark has seen of one namespace: each TDSet's reconciled state and each Deployment's replicas. */
export class Tracker {
  private readonly wanted = new Map<string, number>();
  private readonly deployed = new Map<string, number>();
  private readonly statusDone = new Set<string>();
  private readonly pending = new Set<string>();
  private readonly waiters = new Set<() => void>();
  private readonly watches: Watch[] = [];
  /** When each Deployment was first seen at each replica count: `${name}=${replicas}` to a timestamp. */
  readonly seenAt = new Map<string, number>();

  private constructor(private readonly namespace: string) {}

  static async start(client: RestClient, namespace: string, log: (message: string) => void): Promise<Tracker> {
    const tracker = new Tracker(namespace);
    tracker.watches.push(await watch<DeploymentObject>(client, pathOf(types.deployments, namespace), (type, d, at) => {
      if (type === 'DELETED') return tracker.deployed.delete(d.metadata.name) && undefined;
      tracker.deployed.set(d.metadata.name, d.spec.replicas);
      const key = `${d.metadata.name}=${d.spec.replicas}`;
      if (!tracker.seenAt.has(key)) tracker.seenAt.set(key, at);
      tracker.changed(d.metadata.name);
    }, log));
    tracker.watches.push(await watch<TDSetObject>(client, pathOf(tdsetType, namespace), (type, t) => {
      const done = type !== 'DELETED' && t.status?.observedGeneration === t.metadata.generation &&
        t.status?.desiredReplicas === t.spec.defaultReplica;
      if (done) tracker.statusDone.add(t.metadata.name);
      else tracker.statusDone.delete(t.metadata.name);
      tracker.changed(t.metadata.name);
    }, log));
    return tracker;
  }

  expect(name: string, replicas: number): void {
    this.wanted.set(name, replicas);
    this.pending.add(name);
    this.changed(name);
  }

  /** True when every expected TDSet has its Deployment at the wanted replicas and its status written. */
  get complete(): boolean {
    return this.pending.size === 0;
  }

  /** Resolves with the time at which everything expected was done; rejects after `timeoutMs`. */
  untilComplete(timeoutMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!this.complete) return;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(performance.now());
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        const missing = [...this.pending];
        reject(new Error(`${missing.length} of ${this.wanted.size} TDSets in ${this.namespace} not reconciled after ` +
          `${timeoutMs / 1000}s (first: ${missing.slice(0, 3).join(', ')})`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  private changed(name: string): void {
    const wanted = this.wanted.get(name);
    if (wanted === undefined) return;
    if (this.deployed.get(name) === wanted && this.statusDone.has(name)) this.pending.delete(name);
    else this.pending.add(name);
    for (const waiter of [...this.waiters]) waiter();
  }

  stop(): void {
    for (const w of this.watches) w.stop();
  }
}
