// Core objects as the apiserver sends them, typed by client-node's generated models: only their types are used, so
// nothing of client-node loads for them. Wire adapts the models to what a cache holds: the JSON's RFC 3339 strings
// where they say Date (client-node's own deserializer converts; we do not use it), and every field optional, since a
// cache's view may keep any subset of them.
import type { V1EphemeralContainer, V1Pod } from '@kubernetes/client-node';
import type { KubeObject } from './resources.ts';

/** `T` as a cache may hold it: timestamps as strings, any field left out. */
export type Wire<T> = T extends Date ? string
  : T extends readonly (infer U)[] ? Wire<U>[]
  : T extends object ? { [K in keyof T]?: Wire<T[K]> }
  : T;

/** A Pod from the apiserver, or from a cache whose view keeps fewer of these fields. */
export type Pod = KubeObject & Wire<Pick<V1Pod, 'spec' | 'status'>>;

export type PodSpec = NonNullable<Pod['spec']>;
export type PodStatus = NonNullable<Pod['status']>;
export type ContainerStatus = NonNullable<PodStatus['containerStatuses']>[number];
export type EphemeralContainer = Wire<V1EphemeralContainer>;

/** Whether the pod's Ready condition is True: its containers pass their readiness probes. */
export const podReady = (pod: Pod): boolean =>
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
