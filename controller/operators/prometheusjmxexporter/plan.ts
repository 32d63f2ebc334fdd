// What to do for one matching pod, decided from the pod alone: the record this operator keeps on the pod says which
// container instance (by container ID) got the agent, on which port and with which config; or that an exporter
// claimed it and is attaching; or why it was refused. The record lives on the pod, so a new pod (a new uid) or a
// restarted container (a new ID) starts afresh.
import { createHash } from 'node:crypto';
import type { Pod } from '../../runtime/core.ts';
import type { KubeObject } from '../../runtime/resources.ts';

export const recordAnnotation = 'keelson.dev/jmx-exporter';
export const scrapeAnnotation = 'prometheus.io/scrape';
export const portAnnotation = 'prometheus.io/port';

export interface InjectionRecord {
  exporter: string;
  container: string;
  containerID: string;
  port: number;
  /** configDigest of the config the container has. */
  config: string;
  /** Claimed, the agent being loaded: written with the pod's resourceVersion, so only one exporter wins it. */
  attaching?: boolean;
  /** Why this container instance cannot get the agent; not tried again until the container changes. */
  refused?: string;
}

/** The fields of a pod a plan reads: all the operator needs the cache to keep of pods. */
export const podFields = ['spec.containers.name', 'status.phase',
  ...['name', 'containerID', 'state'].map((field) => `status.containerStatuses.${field}`)];

export type PodPlan =
  | { action: 'skip'; reason: string }
  | { action: 'inject'; container: string; containerID: string }
  | { action: 'rewrite-config'; record: InjectionRecord }
  | { action: 'restart-needed'; record: InjectionRecord }
  | { action: 'serving'; record: InjectionRecord };

export function configDigest(config: string): string {
  return createHash('sha256').update(config).digest('hex').slice(0, 16);
}

export function recordOf(pod: KubeObject): InjectionRecord | undefined {
  const text = pod.metadata.annotations?.[recordAnnotation];
  if (!text) return undefined;
  try {
    const record = JSON.parse(text) as InjectionRecord;
    return typeof record.exporter === 'string' && typeof record.containerID === 'string' ? record : undefined;
  } catch {
    return undefined;
  }
}

export interface Wanted {
  exporter: string;
  containerName?: string;
  port: number;
  config: string;
}

export function planPod(pod: Pod, wanted: Wanted): PodPlan {
  const containers = pod.spec?.containers ?? [];
  const container = wanted.containerName ?? containers[0]?.name;
  if (!container || !containers.some((c) => c.name === container)) {
    return { action: 'skip', reason: `it has no container named ${wanted.containerName}` };
  }
  const record = recordOf(pod);
  if (record && record.exporter !== wanted.exporter) {
    return { action: 'skip', reason: `PrometheusJmxExporter ${record.exporter} already exports it` };
  }
  const status = pod.status?.containerStatuses?.find((s) => s.name === container);
  if (pod.status?.phase !== 'Running' || !status?.state?.running || !status.containerID) {
    return { action: 'skip', reason: `container ${container} is not running` };
  }
  const sameInstance = record?.containerID === status.containerID && record.container === container;
  if (sameInstance && record.refused) return { action: 'skip', reason: record.refused };
  // A claim of our own left by a controller that stopped mid-attach: inspection finds an agent already loaded.
  if (!record || !sameInstance || record.attaching) return { action: 'inject', container, containerID: status.containerID };
  if (record.port !== wanted.port) return { action: 'restart-needed', record };
  if (record.config !== configDigest(wanted.config)) return { action: 'rewrite-config', record };
  return { action: 'serving', record };
}

/** The annotations that mark a pod for scraping and record the injection. */
export function markAnnotations(record: InjectionRecord): Record<string, string> {
  return { [scrapeAnnotation]: 'true', [portAnnotation]: String(record.port), [recordAnnotation]: JSON.stringify(record) };
}

/** The record alone, for a claim or a refusal: nothing to scrape yet. */
export function recordAnnotations(record: InjectionRecord): Record<string, string | null> {
  return { [scrapeAnnotation]: null, [portAnnotation]: null, [recordAnnotation]: JSON.stringify(record) };
}

/** A merge patch's annotations that take them off again. */
export const unmarkAnnotations: Record<string, null> = { [scrapeAnnotation]: null, [portAnnotation]: null, [recordAnnotation]: null };
