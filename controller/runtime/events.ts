// Events (events.k8s.io/v1) on the objects a controller reconciles. Repeats of the same event within ten minutes
// update one Event's series instead of creating another. Recording never fails a reconcile: it is best effort.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Client } from './client.ts';
import { types, type KubeObject } from './resources.ts';

export type EventType = 'Normal' | 'Warning';

const seriesWindowMs = 10 * 60_000;

function microTime(date = new Date()): string {
  return date.toISOString().replace(/(\.\d{3})Z$/, '$1000Z');
}

interface Series {
  name: string;
  namespace: string;
  count: number;
  first: number;
}

export class EventRecorder {
  private readonly series = new Map<string, Series>();

  constructor(
    private readonly client: Client,
    private readonly controller: string,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  async record(regarding: KubeObject & { apiVersion: string; kind: string }, type: EventType, reason: string,
    note: string, action = reason): Promise<void> {
    const namespace = regarding.metadata.namespace ?? 'default';
    const key = `${regarding.metadata.uid}\u0000${type}\u0000${reason}\u0000${note}`;
    const now = Date.now();
    const known = this.series.get(key);
    try {
      if (known && now - known.first < seriesWindowMs) {
        known.count++;
        await this.client.patch(types.events, known.namespace, known.name,
          { series: { count: known.count, lastObservedTime: microTime() } }, 'merge');
        return;
      }
      const name = `${regarding.metadata.name}.${now.toString(16)}${randomBytes(2).toString('hex')}`.slice(-253);
      await this.client.create(types.events, {
        metadata: { name, namespace },
        eventTime: microTime(),
        reportingController: `keelson.dev/${this.controller}`,
        reportingInstance: this.instance,
        action,
        reason,
        note: note.slice(0, 1024),
        type,
        regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, name: regarding.metadata.name,
          namespace: regarding.metadata.namespace, uid: regarding.metadata.uid },
      });
      this.series.set(key, { name, namespace, count: 1, first: now });
      if (this.series.size > 4096) this.series.delete(this.series.keys().next().value!);
    } catch (error) {
      this.series.delete(key);
      this.log.warn({ err: (error as Error).message, reason }, 'could not record event');
    }
  }
}
