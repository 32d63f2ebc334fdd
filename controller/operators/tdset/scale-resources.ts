// Custom resources with a scale subresource that an install lets TDSets scale. Each is named by the install (its
// props, its Helm values, the controller's --tdset-scale-resources), because each costs a grant: RBAC on
// `<resource>/scale` in its group. Whoever points a TDSet at one must may patch that scale themselves: the TDSet's own
// admission policy asks, for the plural the scaleTargetRef gives (CEL cannot look one up), and the controller scales
// only a ref whose group, resource and kind are all listed.
import type { Permission } from '../../api/permissions.ts';
import type { ResourceType } from '../../runtime/resources.ts';

export interface ScaleResource {
  /** The API group, e.g. example.com. */
  group: string;
  /** The plural resource, e.g. widgets. */
  resource: string;
  /** The kind a scaleTargetRef names, e.g. Widget. */
  kind: string;
}

/** What each field must match (a group has a dot, as a CustomResourceDefinition's must). */
export const scaleResourcePatterns: Record<keyof ScaleResource, RegExp> = {
  group: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/,
  resource: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
  kind: /^[A-Z][A-Za-z0-9]*$/,
};

/** As the flag writes one: `<resource>.<group>:<Kind>` (kubectl's resource.group, then the kind). */
export const scaleResourceText = (r: ScaleResource): string => `${r.resource}.${r.group}:${r.kind}`;

/** Reads scaleResourceText's form, comma-separated; throws naming the entry that is not one. */
export function parseScaleResources(text: string | undefined): ScaleResource[] {
  return (text ?? '').split(',').map((entry) => entry.trim()).filter(Boolean).map((entry) => {
    const [qualified = '', kind = ''] = entry.split(':');
    const dot = qualified.indexOf('.');
    const resource = { group: qualified.slice(dot + 1), resource: qualified.slice(0, dot), kind };
    checkScaleResource(resource, `--tdset-scale-resources: "${entry}"`);
    return resource;
  });
}

/** Throws, saying where (`at`), unless `r` names a custom resource in a group of its own. */
export function checkScaleResource(r: ScaleResource, at: string): void {
  if (r.group === 'apps' || r.group.endsWith('.k8s.io') || r.group === 'keelson.dev') {
    throw new Error(`${at}: ${r.group} is not a custom resource's group`);
  }
  if ((Object.keys(scaleResourcePatterns) as (keyof ScaleResource)[]).some((key) => !scaleResourcePatterns[key].test(r[key]))) {
    throw new Error(`${at} is not <resource>.<group>:<Kind>, e.g. widgets.example.com:Widget`);
  }
}

/** What scaling them asks of RBAC: their scale subresource, and the object itself, to see what controls it. */
export const scaleResourcePermissions = (resources: readonly ScaleResource[]): Permission[] => resources.flatMap((r) => [
  { group: r.group, resource: r.resource, verbs: ['get'], reason: `see whether something controls the ${r.kind} a ` +
    'scaleTargetRef names, before scaling it (the install lists it among tdsetScaleResources)' },
  { group: r.group, resource: `${r.resource}/scale`, verbs: ['get', 'patch'], reason: `scale the ${r.kind} a ` +
    'scaleTargetRef names, through its scale subresource and nothing else' },
]);

export const scaleResourceType = (r: ScaleResource, version: string): ResourceType =>
  ({ group: r.group, version, resource: r.resource, kind: r.kind, namespaced: true });
