// References to a Secret or ConfigMap, as kinds' specs name them. Apart from common.ts, whose declarations the
// package's users load: these are for the kinds' own schemas.
import type { ReferenceScope } from './admission.ts';
import { dns1123Label, dns1123Subdomain } from './common.ts';
import { object, string, type ObjectNode } from './schema.ts';

type ReferenceOptions = { description: string; required?: boolean };
type RequiredOf<O> = O extends { required: true } ? true : false;

export interface Reference { name: string; namespace?: string }

/**
 * A reference to a Secret or ConfigMap by name, and to one of its keys when `what` the key's value holds is given: in
 * the referring object's namespace, or, for a cluster-scoped object, in the namespace the reference names (typed
 * optional, as code reading either kind's references takes the referring object's namespace when none is named).
 */
export function objectReference<O extends ReferenceOptions>(kind: 'Secret' | 'ConfigMap', holder: string,
  scope: ReferenceScope, options: O, what: string): ObjectNode<Reference & { key: string }, RequiredOf<O>>;
export function objectReference<O extends ReferenceOptions>(kind: 'Secret' | 'ConfigMap', holder: string,
  scope: ReferenceScope, options: O): ObjectNode<Reference, RequiredOf<O>>;
export function objectReference(kind: 'Secret' | 'ConfigMap', holder: string, scope: ReferenceScope,
  options: ReferenceOptions, what?: string): ObjectNode<Reference, boolean> {
  return object({
    name: string({ description: scope === 'cluster' ? `The ${kind}.` : `The ${kind} in the ${holder}'s namespace.`,
      required: true, maxLength: 253, pattern: dns1123Subdomain }),
    ...(what ? { key: string({ description: `The key whose value is ${what}.`, required: true, maxLength: 253,
      pattern: '^[-._a-zA-Z0-9]+$' }) } : {}),
    ...(scope === 'cluster' ? { namespace: string({ description: `The ${kind}'s namespace.`, required: true,
      maxLength: 63, pattern: dns1123Label }) } : {}),
  }, options);
}
