// What a cache keeps of each object: the fields its readers declared they use, as dotted paths, and the object's
// identity always. A path through a list applies to every item ('spec.containers.name' keeps each container's name).
import type { KubeObject } from './resources.ts';

/** A field kept whole (true), or the fields kept of it. */
export interface Projection {
  [field: string]: Projection | true;
}

/** What every projection keeps: an object's kind and metadata are its identity, owners, labels and versions. */
const identity = ['apiVersion', 'kind', 'metadata'];

/** The union of `paths` and the identity fields, as a tree. A path under one kept whole adds nothing. */
export function projectionOf(paths: Iterable<string>): Projection {
  const root: Projection = {};
  for (const path of [...identity, ...paths]) {
    const fields = path.split('.');
    if (fields.some((f) => !f)) throw new Error(`field path "${path}": empty field name`);
    let node = root;
    for (const [i, field] of fields.entries()) {
      const child = node[field];
      if (child === true) break;
      if (i === fields.length - 1) node[field] = true;
      else node = (node[field] = child ?? {}) as Projection;
    }
  }
  return root;
}

function projectValue(value: unknown, projection: Projection | true): unknown {
  if (projection === true || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => projectValue(item, projection));
  const kept: Record<string, unknown> = {};
  for (const [field, below] of Object.entries(projection)) {
    const child = (value as Record<string, unknown>)[field];
    if (child !== undefined) kept[field] = projectValue(child, below);
  }
  return kept;
}

/** A copy of `object` with only the fields `projection` keeps. */
export function project<T extends KubeObject>(object: T, projection: Projection): T {
  return projectValue(object, projection) as T;
}
