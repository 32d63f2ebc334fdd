// What a field manager owns, read from metadata.managedFields (fieldsV1), set against what it now wants to apply. A
// field it owns but no longer sets is one the next apply removes, so it is a reason to apply even when every field it
// does set is already in place.
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from './resources.ts';

/** fieldsV1: "f:name" a field, "k:{...}" a list item by its keys, "v:..." a set member, "i:N" an index, "." itself. */
export interface FieldSet {
  [key: string]: FieldSet;
}

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  subresource?: string;
  fieldsV1?: FieldSet;
}

/** The fields `manager` owns through server-side apply of the object itself (not a subresource). */
export function appliedFields(object: KubeObject, manager: string): FieldSet | undefined {
  const entries = (object.metadata.managedFields ?? []) as ManagedFieldsEntry[];
  return entries.find((e) => e.manager === manager && e.operation === 'Apply' && !e.subresource)?.fieldsV1;
}

/** Whether `owned` names a field, list item or set member that `desired` does not have. */
export function ownsMoreThan(owned: FieldSet, desired: unknown): boolean {
  return Object.entries(owned).some(([key, children]) => {
    if (key === '.') return false;
    const value = member(desired, key);
    return value === undefined || value === null || ownsMoreThan(children, value);
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function member(value: unknown, key: string): unknown {
  const [kind, rest] = [key.slice(0, 2), key.slice(2)];
  if (kind === 'f:') return isRecord(value) ? value[rest] : undefined;
  if (!Array.isArray(value)) return undefined;
  if (kind === 'i:') return value[Number(rest)];
  const wanted: unknown = JSON.parse(rest);
  if (kind === 'v:') return value.find((item) => isDeepStrictEqual(item, wanted));
  // A key the apiserver defaulted (a port's protocol) may be missing from what we send: absent matches.
  return value.find((item) => isRecord(item) && isRecord(wanted) &&
    Object.entries(wanted).every(([k, v]) => item[k] === undefined || isDeepStrictEqual(item[k], v)));
}
