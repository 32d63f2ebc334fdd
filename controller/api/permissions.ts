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
}

/** Whether `declared` grants `verb` on `group`/`resource`. */
export function allows(declared: readonly Permission[], group: string, resource: string, verb: Verb): boolean {
  return declared.some((p) => p.group === group && p.resource === resource && p.verbs.includes(verb));
}

/**
 * The permissions that the controller's own kind needs: reading it, writing its status, and (because owned objects
 * carry blockOwnerDeletion) updating its finalizers subresource.
 */
export function ownKind(plural: string, { finalizer = false }: { finalizer?: boolean } = {}): Permission[] {
  const declared: Permission[] = [
    { group: 'keelson.dev', resource: plural, verbs: ['get', 'list', 'watch'], reason: `reconcile ${plural}` },
    { group: 'keelson.dev', resource: `${plural}/status`, verbs: ['get', 'update', 'patch'],
      reason: `report ${plural} status` },
    { group: 'keelson.dev', resource: `${plural}/finalizers`, verbs: ['update'],
      reason: `set blockOwnerDeletion on objects owned by ${plural}` },
  ];
  if (finalizer) {
    declared.push({ group: 'keelson.dev', resource: plural, verbs: ['update', 'patch'],
      reason: `add and remove the cleanup finalizer on ${plural}` });
  }
  return declared;
}
