// Owned objects: controller owner references, and server-side apply that sends nothing when the cached object
// already has every field we set and we own no field we stopped setting.
import { isDeepStrictEqual } from 'node:util';
import type { Client } from './client.ts';
import { ApiError } from './rest.ts';
import { appliedFields, ownsMoreThan } from './managed-fields.ts';
import type { KubeObject, OwnerReference, ResourceType } from './resources.ts';

export type Owner = KubeObject & { apiVersion: string; kind: string; metadata: { uid: string } };

export function controllerReference(owner: Owner): OwnerReference {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid,
    controller: true, blockOwnerDeletion: true };
}

/** The owner reference that makes `owner` the controller of `object`, if it is. */
export function isControlledBy(object: KubeObject | undefined, owner: Owner): boolean {
  return object?.metadata.ownerReferences?.some((r) => r.controller && r.uid === owner.metadata.uid) ?? false;
}

/** The owner reference marked controller, if any. */
export function controllerOf(object: KubeObject): OwnerReference | undefined {
  return object.metadata.ownerReferences?.find((r) => r.controller);
}

/**
 * The owner references `object` should carry for `owner` to control it (or not), the others kept; undefined when it
 * carries them already.
 */
export function ownerReferencesFor(object: KubeObject, owner: Owner, controlled: boolean): OwnerReference[] | undefined {
  const references = object.metadata.ownerReferences ?? [];
  const others = references.filter((r) => r.uid !== owner.metadata.uid);
  const wanted = controlled ? [...others, controllerReference(owner)] : others;
  return isDeepStrictEqual(references, wanted) ? undefined : wanted;
}

export type Ensured<T> = { object: T; changed: boolean; notOwned?: undefined } | { notOwned: T };

/**
 * Makes `desired` exist without taking another's object over: created when absent, applied (if changed) when `ours`
 * says the object there is ours, and otherwise left as it is and returned as notOwned. `current` is the cache's
 * copy, if any; a create that finds the name taken reads the object there live.
 */
export async function ensureOwned<T extends KubeObject>(client: Client, type: ResourceType, desired: T,
  current: T | undefined, ours: (object: T) => boolean): Promise<Ensured<T>> {
  let found = current;
  if (!found) {
    try {
      return { object: await client.create(type, desired), changed: true };
    } catch (error) {
      if (!(error instanceof ApiError && error.conflict)) throw error;
      found = await client.get<T>(type, desired.metadata.namespace, desired.metadata.name);
      if (!found) throw error;
    }
  }
  if (!ours(found)) return { notOwned: found };
  return applyIfChanged(client, type, desired, found);
}

/** Whether `actual` already holds every field of `desired` (lists element by element, maps key by key). */
export function contains(actual: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return Array.isArray(actual) && actual.length === desired.length && desired.every((d, i) => contains(actual[i], d));
  }
  if (desired !== null && typeof desired === 'object') {
    if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
    return Object.entries(desired).every(([k, v]) => v === undefined || contains((actual as Record<string, unknown>)[k], v));
  }
  return isDeepStrictEqual(actual, desired);
}

/**
 * Server-side applies `desired` unless `current` already contains it and holds no field this client's manager applied
 * before but `desired` leaves out; returns what is now in the cluster.
 */
export async function applyIfChanged<T extends KubeObject>(client: Client, type: ResourceType, desired: T,
  current: T | undefined): Promise<{ object: T; changed: boolean }> {
  const { apiVersion: _v, kind: _k, ...fields } = desired;
  const owned = current && appliedFields(current, client.fieldManager);
  const dropped = owned !== undefined && ownsMoreThan(owned, fields);
  if (current && !dropped && contains(current, fields)) return { object: current, changed: false };
  return { object: await client.apply(type, desired), changed: true };
}
