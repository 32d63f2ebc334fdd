// From an event on a watched object to the primaries it concerns, the map a Watch takes: the primaries in the
// object's namespace that pick it (controller-runtime writes these as EnqueueRequestsFromMapFunc handlers).
import type { Request } from './controller.ts';
import type { Informer } from './informer.ts';
import type { KubeObject } from './resources.ts';
import { matches, type LabelSelector } from './selectors.ts';

export const requestOf = (object: KubeObject): Request => ({ namespace: object.metadata.namespace, name: object.metadata.name });

/** The primaries in `object`'s namespace for which `concerns` holds. */
export function primariesConcerning<P extends KubeObject>(primaries: Informer<P>, object: KubeObject,
  concerns: (primary: P) => boolean): Request[] {
  return primaries.listNamespace(object.metadata.namespace).filter(concerns).map(requestOf);
}

/** The primaries in `object`'s namespace whose label selector matches its labels. */
export function primariesSelecting<P extends KubeObject>(primaries: Informer<P>, object: KubeObject,
  selectorOf: (primary: P) => LabelSelector): Request[] {
  return primariesConcerning(primaries, object, (primary) => matches(selectorOf(primary), object.metadata.labels));
}
