// What the runtime needs to know of a resource type to reach it: its group, version, plural and kind.
import type { KindDefinition } from '../api/kind.ts';

export interface ResourceType {
  group: string;
  version: string;
  /** Plural, lower case: pods, deployments, tdsets. */
  resource: string;
  kind: string;
  namespaced: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export const core = (resource: string, kind: string, namespaced = true): ResourceType =>
  ({ group: '', version: 'v1', resource, kind, namespaced });

export const types = {
  pods: core('pods', 'Pod'),
  services: core('services', 'Service'),
  configMaps: core('configmaps', 'ConfigMap'),
  secrets: core('secrets', 'Secret'),
  persistentVolumeClaims: core('persistentvolumeclaims', 'PersistentVolumeClaim'),
  namespaces: core('namespaces', 'Namespace', false),
  nodes: core('nodes', 'Node', false),
  serviceAccounts: core('serviceaccounts', 'ServiceAccount'),
  roles: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'roles', kind: 'Role', namespaced: true },
  roleBindings: { group: 'rbac.authorization.k8s.io', version: 'v1', resource: 'rolebindings', kind: 'RoleBinding',
    namespaced: true },
  podDisruptionBudgets: { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', kind: 'PodDisruptionBudget',
    namespaced: true },
  deployments: { group: 'apps', version: 'v1', resource: 'deployments', kind: 'Deployment', namespaced: true },
  events: { group: 'events.k8s.io', version: 'v1', resource: 'events', kind: 'Event', namespaced: true },
  leases: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases', kind: 'Lease', namespaced: true },
  cronJobs: { group: 'batch', version: 'v1', resource: 'cronjobs', kind: 'CronJob', namespaced: true },
  jobs: { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true },
} satisfies Record<string, ResourceType>;

/** The resource type serving a custom kind. */
export function kindType(definition: KindDefinition<unknown, unknown>): ResourceType {
  return { group: definition.api.group, version: definition.api.version, resource: definition.plural,
    kind: definition.kind, namespaced: definition.scope !== 'Cluster' };
}

export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** The REST path of a collection (no name) or an object, optionally of its subresource. */
export function pathOf(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  const scope = type.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  const object = name ? `/${encodeURIComponent(name)}${subresource ? `/${subresource}` : ''}` : '';
  return `${base}${scope}/${type.resource}${object}`;
}

/** namespace/name, or name for cluster-scoped objects: the key caches and queues use. */
export function keyOf(meta: { namespace?: string; name: string }): string {
  return meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

export function parseKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
