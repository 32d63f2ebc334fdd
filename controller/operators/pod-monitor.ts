// The PodMonitor an operator's resource asks for with spec.podMonitor, for users of the Prometheus Operator: its pods
// get scraped without scrape config written by hand. Made by server-side apply and owned by the resource; removed
// when no longer asked for; never one of someone else's.
import { labelMap } from '../api/common.ts';
import { object, string } from '../api/schema.ts';
import type { Client } from '../runtime/client.ts';
import type { EventRecorder } from '../runtime/events.ts';
import { applyIfChanged, controllerReference, isControlledBy, type Owner } from '../runtime/objects.ts';
import { ApiError } from '../runtime/rest.ts';
import type { KubeObject, ResourceType } from '../runtime/resources.ts';
import type { Condition } from '../runtime/status.ts';

export const podMonitorType: ResourceType = { group: 'monitoring.coreos.com', version: 'v1', resource: 'podmonitors',
  kind: 'PodMonitor', namespaced: true };

/** spec.podMonitor: `description` says which pods it selects. */
export const podMonitorSpec = (description: string) => object({
  labels: labelMap({ description: 'Labels on the PodMonitor, for the Prometheus whose podMonitorSelector picks ' +
    'it (for example release: prometheus).' }),
  interval: string({ description: 'How often Prometheus scrapes the pods, e.g. 30s; default the Prometheus\'s own.',
    maxLength: 32, pattern: '^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$', minLength: 2 }),
}, { description: 'Make a monitoring.coreos.com/v1 PodMonitor of the same name for the Prometheus Operator (its ' +
  `CRDs must be installed), ${description}.` });

export interface PodMonitorOptions {
  labels?: Record<string, string>;
  interval?: string;
}

/** The PodMonitor of `owner` scraping `endpoint` (a podMetricsEndpoint without its interval) of the pods selected. */
export function podMonitorOf(owner: Owner, options: PodMonitorOptions, selector: Record<string, string>,
  endpoint: Record<string, unknown>): KubeObject {
  return {
    apiVersion: `${podMonitorType.group}/${podMonitorType.version}`, kind: podMonitorType.kind,
    metadata: { name: owner.metadata.name, namespace: owner.metadata.namespace,
      labels: { ...options.labels, 'app.kubernetes.io/managed-by': 'keelson' }, ownerReferences: [controllerReference(owner)] },
    spec: { selector: { matchLabels: selector },
      podMetricsEndpoints: [{ ...endpoint, ...(options.interval ? { interval: options.interval } : {}) }] },
  };
}

/** The label Prometheus's pod discovery gives a pod's label or annotation (`kind`) named `name`. */
export const discoveryLabel = (kind: 'label' | 'annotation', name: string) =>
  `__meta_kubernetes_pod_${kind}_${name.replace(/[^a-zA-Z0-9_]/g, '_')}`;

type Pending = Omit<Condition, 'lastTransitionTime'>;

/**
 * Applies `wanted`, or deletes `made` (the one status names) when nothing is; says how that went as a PodMonitor
 * condition (an Event when it turns to a failure), and whether to look again (installing the Prometheus Operator's
 * CRDs tells no controller anything).
 */
export async function syncPodMonitor({ client, events }: { client: Client; events: EventRecorder }, owner: Owner,
  wanted: KubeObject | undefined, made: string | undefined): Promise<{ name?: string; condition?: Pending; retry?: boolean }> {
  if (!wanted) {
    if (made) await client.delete(podMonitorType, owner.metadata.namespace, made);
    return {};
  }
  const outcome = await applyPodMonitor(client, owner, wanted);
  const { status, reason, message } = outcome.condition;
  const previous = (owner.status as { conditions?: Condition[] } | undefined)?.conditions
    ?.find((c) => c.type === 'PodMonitor');
  if (status === 'False' && previous?.reason !== reason) events.record(owner, 'Warning', reason, message);
  return outcome;
}

async function applyPodMonitor(client: Client, owner: Owner, wanted: KubeObject):
  Promise<{ name?: string; condition: Pending; retry?: boolean }> {
  const { namespace, name, generation } = owner.metadata;
  const outcome = (status: 'True' | 'False', reason: string, message: string) =>
    ({ type: 'PodMonitor', status, reason, message, observedGeneration: generation });
  try {
    const current = await client.get<KubeObject>(podMonitorType, namespace, name);
    if (current && !isControlledBy(current, owner)) {
      return { condition: outcome('False', 'NotOwned', `PodMonitor ${name} exists and is not this ` +
        `${owner.kind}'s; it is left alone`) };
    }
    await applyIfChanged(client, podMonitorType, wanted, current);
    return { name, condition: outcome('True', 'Applied', `PodMonitor ${name} selects the pods serving metrics`) };
  } catch (error) {
    // The apiserver knows no such resource: the Prometheus Operator's CRDs are not installed.
    if (error instanceof ApiError && error.notFound) {
      return { retry: true, condition: outcome('False', 'PodMonitorNotServed', 'this cluster does not serve ' +
        'monitoring.coreos.com/v1 PodMonitor: install the Prometheus Operator\'s CRDs, or remove spec.podMonitor') };
    }
    // Monitoring is not worth the owner's reconcile: any other refusal is said, and the rest goes on.
    if (!(error instanceof ApiError)) throw error;
    return { retry: true, condition: outcome('False', 'ApplyFailed', `PodMonitor ${name}: ${error.message}`) };
  }
}
