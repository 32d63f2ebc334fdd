// Events (events.k8s.io/v1) on the objects a controller reconciles. Repeats of the same event within ten minutes
// update one Event's series instead of creating another. Recording never fails or holds up a reconcile: as with
// client-go's recorder, an Event is queued and written in the background, and a queue that is full drops it.
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

type Regarding = KubeObject & { apiVersion: string; kind: string };

/** What an Event names of its object: a queued Event holds only this, not the object. */
interface Reference {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
}

interface Pending {
  key: string;
  regarding: Reference;
  type: EventType;
  reason: string;
  note: string;
  action: string;
  at: Date;
}

/** Events waiting to be written; past this a new one is dropped (client-go keeps 1,000). */
const maxPending = 4096;
/** Events written at once. Repeats of one event are written one after another, so that they fold into its series. */
const writers = 2;
const dropWarningEveryMs = 10_000;

export class EventRecorder {
  private readonly series = new Map<string, Series>();
  private readonly pending: Pending[] = [];
  private readonly writing = new Set<string>();
  private idle: (() => void)[] = [];
  private dropped = 0;
  private droppedWarnedAt = -Infinity;

  constructor(
    private readonly client: Client,
    private readonly controller: string,
    private readonly instance: string,
    private readonly log: Logger,
  ) {}

  /** Queues an Event on `regarding` and returns at once; it is written in the background. */
  record(regarding: Regarding, type: EventType, reason: string, note: string, action = reason): void {
    if (this.pending.length >= maxPending) {
      this.dropped++;
      if (performance.now() - this.droppedWarnedAt >= dropWarningEveryMs) {
        this.droppedWarnedAt = performance.now();
        this.log.warn({ dropped: this.dropped, reason }, 'events queue full; dropping events');
      }
      return;
    }
    const key = `${regarding.metadata.uid}\u0000${type}\u0000${reason}\u0000${note}`;
    const { apiVersion, kind, metadata: { name, namespace, uid } } = regarding;
    this.pending.push({ key, regarding: { apiVersion, kind, name: name!, namespace, uid }, type, reason,
      note: note.slice(0, 1024), action, at: new Date() });
    this.writeNext();
  }

  /** Resolves once every queued Event is written, or given up, or after `timeoutMs`: for a shutdown. */
  async flush(timeoutMs: number): Promise<void> {
    if (!this.pending.length && !this.writing.size) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => { timer = setTimeout(resolve, timeoutMs); }),
    ]);
    clearTimeout(timer);
    if (this.pending.length || this.writing.size) {
      this.log.warn({ unwritten: this.pending.length + this.writing.size }, 'events not written by the shutdown deadline');
    }
  }

  private writeNext(): void {
    while (this.writing.size < writers) {
      const next = this.pending.findIndex((event) => !this.writing.has(event.key));
      if (next < 0) break;
      const event = this.pending.splice(next, 1)[0]!;
      this.writing.add(event.key);
      // write() catches what the apiserver says; anything else is logged here rather than left unhandled.
      void this.write(event).catch((error: Error) => this.log.error({ err: error.message }, 'could not record event'))
        .finally(() => {
        this.writing.delete(event.key);
        this.writeNext();
      });
    }
    if (!this.pending.length && !this.writing.size) {
      for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private async write({ key, regarding, type, reason, note, action, at }: Pending): Promise<void> {
    const namespace = regarding.namespace ?? 'default';
    const now = at.getTime();
    const known = this.series.get(key);
    try {
      if (known && now - known.first < seriesWindowMs) {
        known.count++;
        await this.client.patch(types.events, known.namespace, known.name,
          { series: { count: known.count, lastObservedTime: microTime(at) } }, 'merge');
        return;
      }
      const name = `${regarding.name}.${now.toString(16)}${randomBytes(2).toString('hex')}`.slice(-253);
      await this.client.create(types.events, {
        metadata: { name, namespace },
        eventTime: microTime(at),
        reportingController: `keelson.dev/${this.controller}`,
        reportingInstance: this.instance,
        action,
        reason,
        note,
        type,
        regarding,
      });
      this.series.set(key, { name, namespace, count: 1, first: now });
      if (this.series.size > 4096) this.series.delete(this.series.keys().next().value!);
    } catch (error) {
      this.series.delete(key);
      this.log.warn({ err: (error as Error).message, reason }, 'could not record event');
    }
  }
}
