// A bare watch on one resource in one namespace: the benchmark's own eyes, kept apart from any implementation's
// cache. Every event is timestamped on arrival. When the apiserver ends the stream it is opened again from the
// last resourceVersion seen (or afresh, replaying current state, when that is too old), so nothing is missed.
import { createInterface } from 'node:readline';
import type { Query, RestClient } from '../controller/runtime/rest.ts';
import type { KubeObject } from '../controller/runtime/resources.ts';
import { retrying } from './retrying.ts';

export type WatchHandler<T> = (type: string, object: T, at: number) => void;

export interface Watch {
  stop(): void;
}

export async function watch<T extends KubeObject>(client: RestClient, path: string, onEvent: WatchHandler<T>,
  onReopen: (why: string) => void = () => undefined, filter: Query = {}): Promise<Watch> {
  const abort = new AbortController();
  let resourceVersion: string | undefined;
  const open = async (): Promise<void> => {
    const res = await retrying(() => client.open({ method: 'GET', path, signal: abort.signal,
      query: { ...filter, watch: 1, ...(resourceVersion ? { resourceVersion } : {}) } }));
    const lines = createInterface({ input: res });
    lines.on('line', (line) => {
      const event = JSON.parse(line) as { type: string; object: T & { code?: number } };
      if (event.type === 'ERROR') {
        resourceVersion = event.object.code === 410 ? undefined : resourceVersion;
        return;
      }
      resourceVersion = event.object.metadata.resourceVersion;
      onEvent(event.type, event.object, performance.now());
    });
    // An aborted or reset response reports an error and then closes; either way the watch is opened again.
    res.on('error', () => undefined);
    lines.on('error', () => undefined);
    res.on('close', () => {
      if (abort.signal.aborted) return;
      onReopen(`${path} ended at resourceVersion ${resourceVersion ?? '(none)'}`);
      open().catch((error: Error) => onReopen(`${path} could not be reopened: ${error.message}`));
    });
  };
  await open();
  return { stop: () => abort.abort() };
}
