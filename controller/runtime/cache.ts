// Shared informers: one list-watch per resource type and scope, however many controllers read it.
import type { Logger } from 'pino';
import type { Client } from './client.ts';
import { Informer, defaultInformerOptions, type CacheView, type InformerOptions } from './informer.ts';
import type { Metrics } from './metrics.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export class Cache {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private started = false;

  constructor(
    private readonly client: Client,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly options: InformerOptions = defaultInformerOptions,
  ) {}

  /**
   * The shared informer for `type` in `namespace` (all namespaces when undefined), of the objects `view` selects,
   * keeping at least the fields it names. `caller` must have declared list and watch on the type: reading through
   * the cache is reading from the API.
   */
  informer<T extends KubeObject>(type: ResourceType, namespace: string | undefined, caller: Client,
    view: CacheView = {}): Informer<T> {
    caller.check(type, 'list');
    caller.check(type, 'watch');
    const key = `${type.group}/${type.resource}@${namespace ?? '*'}?${view.labelSelector ?? ''}`;
    let informer = this.informers.get(key);
    if (!informer) {
      informer = new Informer(this.client, type, namespace, this.metrics, this.log, this.options, view.labelSelector);
      this.informers.set(key, informer);
    }
    informer.read(view.keep);
    if (this.started) informer.start();
    return informer as unknown as Informer<T>;
  }

  start(): void {
    this.started = true;
    for (const informer of this.informers.values()) informer.start();
  }

  /** Each informer not synced yet, by name, with its last error. */
  notSynced(): string[] {
    return [...this.informers.values()].flatMap((informer) => informer.notSyncedBecause ?? []);
  }

  async waitForSync(): Promise<void> {
    await Promise.all([...this.informers.values()].map((informer) => informer.waitForSync()));
  }

  async stop(): Promise<void> {
    await Promise.all([...this.informers.values()].map((informer) => informer.stop()));
  }
}
