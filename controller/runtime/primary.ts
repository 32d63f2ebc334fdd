// The primary object of a reconcile, as an operator needs it: live (not being deleted), with apiVersion and kind
// (items of a list carry neither, and owner references and Events need both), its spec defaulted, and what the
// schema finds wrong with it.
import { apiVersionOfKind, type KindDefinition, type Resource } from '../api/kind.ts';
import { validate, withDefaults } from '../api/validate.ts';
import type { Request } from './controller.ts';
import type { Informer } from './informer.ts';
import type { Owner } from './objects.ts';
import { keyOf } from './resources.ts';

export interface Primary<Spec, Status> {
  object: Resource<Spec, Status> & Owner;
  spec: Spec;
  /** Each as "path message", e.g. "spec.port must be at most 65535". */
  problems: string[];
}

export function readPrimary<Spec, Status>(informer: Informer<Resource<Spec, Status>>, request: Request,
  definition: KindDefinition<Spec, Status>): Primary<Spec, Status> | undefined {
  const cached = informer.get(keyOf(request));
  if (!cached || cached.metadata.deletionTimestamp) return undefined;
  const spec = withDefaults(definition.spec.openApi, cached.spec);
  return {
    object: { ...cached, apiVersion: apiVersionOfKind(definition), kind: definition.kind } as Resource<Spec, Status> & Owner,
    spec,
    problems: validate(definition.spec.openApi, spec, 'spec').map((e) => `${e.path} ${e.message}`),
  };
}
