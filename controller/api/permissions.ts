// The API calls code makes, declared beside it. RBAC is synthesized from these declarations, and the client layer
// refuses any call not declared, so the manifests and the code cannot drift apart.

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface Permission {
  /** API group; '' for the core group. */
  group: string;
  /** Plural resource, with /subresource where one is meant (pods/log, tdsets/status). */
  resource: string;
  verbs: Verb[];
  /** Why the call is made: shown beside the rule so each grant can be traced to its user. */
  reason: string;
  /**
   * The resource is cluster-scoped (Nodes): granted by a ClusterRole of its own, also to a controller that watches one
   * namespace, where the rest is a Role there.
   */
  clusterScoped?: true;
}

/** Whether `declared` grants `verb` on `group`/`resource`. */
export function allows(declared: readonly Permission[], group: string, resource: string, verb: Verb): boolean {
  return declared.some((p) => p.group === group && p.resource === resource && p.verbs.includes(verb));
}

/**
 * What an operator needs of its own kind: reading it through the cache and writing its status; and, when it owns
 * objects, updating its finalizers subresource, which the apiserver asks for when they carry blockOwnerDeletion.
 */
export function ownKind(plural: string, { ownsObjects, group = 'keelson.dev' }: { ownsObjects: boolean; group?: string }):
Permission[] {
  return [
    { group, resource: plural, verbs: ['list', 'watch'], reason: `reconcile ${plural}` },
    { group, resource: `${plural}/status`, verbs: ['patch'], reason: `report ${plural} status` },
    ...(ownsObjects ? [{ group, resource: `${plural}/finalizers`, verbs: ['update'] as Verb[],
      reason: `set blockOwnerDeletion on objects owned by ${plural}` }] : []),
  ];
}
