// Status through the /status subresource, with metav1.Condition conditions and observedGeneration; nothing is
// written when nothing changed, and a stale object fails with 409 (retried through the queue) instead of overwriting.
import { isDeepStrictEqual } from 'node:util';
import type { Client } from './client.ts';
import type { KubeObject, ResourceType } from './resources.ts';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

/** Time as metav1.Time serializes it: RFC 3339 to the second. */
export function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The conditions with `next` set; lastTransitionTime moves only when the status does. */
export function setCondition(conditions: readonly Condition[] | undefined,
  next: Omit<Condition, 'lastTransitionTime'>, now = new Date()): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === next.type);
  const previous = index >= 0 ? list[index] : undefined;
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : timestamp(now);
  const condition = { ...next, lastTransitionTime };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The JSON merge patch (RFC 7386) turning `from` into `to`: fields that went away become null. */
export function mergePatch(from: unknown, to: unknown): unknown {
  if (!isMap(from) || !isMap(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(from)) if (!(key in to) || to[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(to)) {
    if (value !== undefined && !isDeepStrictEqual(from[key], value)) patch[key] = mergePatch(from[key], value);
  }
  return patch;
}

/** Writes `status` unless it equals the object's; resolves with the object as it now is, and whether it wrote. */
export async function writeStatus<T extends KubeObject & { status?: unknown }>(client: Client, type: ResourceType,
  object: T, status: unknown): Promise<{ written: boolean; object: T }> {
  const current = object.status ?? {};
  if (isDeepStrictEqual(current, JSON.parse(JSON.stringify(status)))) return { written: false, object };
  const updated = await client.patch<T>(type, object.metadata.namespace, object.metadata.name,
    { metadata: { resourceVersion: object.metadata.resourceVersion }, status: mergePatch(current, status) }, 'merge', 'status');
  return { written: true, object: updated };
}

/**
 * Writes the object's status with `fields` over it, each of `conditions` set and the `dropped` types gone, unless
 * nothing changed; the common end of a reconcile.
 */
export async function writeStatusWithConditions<T extends KubeObject & { status?: { conditions?: unknown } }>(
  client: Client, type: ResourceType, object: T, fields: object, conditions: Omit<Condition, 'lastTransitionTime'>[],
  dropped: readonly string[] = [],
): Promise<void> {
  let list = (object.status?.conditions as Condition[] | undefined)?.filter((c) => !dropped.includes(c.type));
  for (const condition of conditions) list = setCondition(list, condition);
  await writeStatus(client, type, object, { ...object.status, ...fields, conditions: list });
}
