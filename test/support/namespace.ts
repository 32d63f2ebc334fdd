// kubectl in a test's own namespace: the wrappers every operator test wrote for itself. The namespace is read at each
// call, since a test makes it in its before hook.
import type { KubectlResult, LocalCluster } from '../../cluster/cluster.ts';

export interface InNamespace {
  /** kubectl -n namespace ...args (the flag first, so that `exec ... -- command` keeps its command). */
  kubectl(...args: string[]): Promise<KubectlResult>;
  /** `kubectl get ... -o json`, parsed; throws when kubectl fails. */
  json(...args: string[]): Promise<any>;
  /** `kubectl get ... -o json`, parsed; undefined when kubectl fails (typically: not found). */
  get(...args: string[]): Promise<any>;
  /** kubectl apply of one object, into the namespace unless its metadata names another. */
  apply(object: object): Promise<KubectlResult>;
  /** The Events regarding objects named `name` (through events.k8s.io), oldest first. */
  events(name: string): Promise<any[]>;
}

/** When an Event happened: events.k8s.io's eventTime, or, for one recorded through core/v1, its first timestamp. */
const timeOf = (event: any): string => event.eventTime ?? event.deprecatedFirstTimestamp ?? event.metadata.creationTimestamp;

/**
 * When an Event last happened, in ms since the epoch: a recorder counts a repeat within its window in the first
 * Event's series, whose eventTime stays the first occurrence's.
 */
export const lastSeen = (event: any): number => Date.parse(event.series?.lastObservedTime ?? timeOf(event));

/** How many times an Event happened: a recorder counts repeats in its series. */
export const timesSeen = (event: any): number => event.series?.count ?? 1;

export function inNamespace(cluster: LocalCluster, namespace: () => string): InNamespace {
  const kubectl = (...args: string[]) => cluster.kubectl(['-n', namespace(), ...args]);
  const get = (...args: string[]) => cluster.getJson(namespace(), ...args);
  return {
    kubectl,
    get,
    json: async (...args) => JSON.parse((await kubectl('get', ...args, '-o', 'json')).stdout),
    apply: (object: { metadata?: { namespace?: string } }) => cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(
      { ...object, metadata: { namespace: namespace(), ...object.metadata } }) }),
    events: async (name) => ((await get('events.events.k8s.io', '--field-selector', `regarding.name=${name}`))?.items ?? [])
      .sort((a: any, b: any) => timeOf(a).localeCompare(timeOf(b))),
  };
}

export interface Rule { apiGroups: string[]; resources: string[]; verbs: string[]; resourceNames?: string[] }

/**
 * Binds `user` in `namespace` to exactly `rules` (replacing what they had), for requests made `--as` them; with no
 * namespace, cluster-wide (a ClusterRole and its binding, named for the user).
 */
export async function grant(cluster: LocalCluster, namespace: string | undefined, user: string, rules: Rule[]): Promise<void> {
  const [role, binding] = namespace ? ['Role', 'RoleBinding'] : ['ClusterRole', 'ClusterRoleBinding'];
  const metadata = { name: user, ...(namespace ? { namespace } : {}) };
  await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], { input: JSON.stringify({
    apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: role, metadata, rules },
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: binding, metadata,
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: role, name: user } },
    ] }) });
}
