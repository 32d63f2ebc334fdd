// Requester authorization: a kind whose objects make the controller act on pods declares the rights their requester
// must hold themselves, so the controller's own rights are never a way around RBAC. The declarations become a
// ValidatingAdmissionPolicy whose CEL asks the apiserver's authorizer about the requesting user, checked on create, on
// every change of spec and on every annotation that asks the controller to act (not on status, finalizer or label
// writes, so the controller and the garbage collector are never held up by a requester's rights).
import type { KindDefinition } from './kind.ts';

/**
 * Where a reference's object lives: the referring object's namespace, or (a cluster-scoped one's) one it names.
 * Here, not beside the references in common.ts: the kinds' declarations reach this file, and must not load that one.
 */
export type ReferenceScope = 'namespaced' | 'cluster';

/** CEL over `object` giving a right's group or resource, where the object names it (a custom resource to scale). */
export interface FromObject {
  cel: string;
}

/** A right that whoever creates or changes the object's spec must hold: in the object's namespace, unless told. */
export interface RequesterRight {
  /**
   * Where: in every namespace (the controller acts for a cluster-scoped object across them), or in the namespace CEL
   * over `object` gives (a reference that names its namespace). @default the object's namespace
   */
  namespace?: 'all' | FromObject;
  /** API group of the resource; '' for the core group. */
  group: string | FromObject;
  /** Plural resource; it need not be served (an admin may grant `use` on a virtual one, as PodSecurityPolicy had). */
  resource: string | FromObject;
  subresource?: string;
  /** The verb, or verbs of which any one will do (`kubectl debug` needs patch, a controller update). */
  verb: string | string[];
  /** CEL over `object`: when the right is needed; always when unset. */
  when?: string;
  /** CEL over `object` giving the resource name checked, for grants limited by resourceNames. */
  name?: string;
  /** What the controller does with the right on the requester's behalf, for the refusal's message. */
  because: string;
}

/**
 * `get` on the Secret or ConfigMap an optional reference at `path` (CEL, e.g. object.spec.webhook.secretRef) names,
 * when it is set: in the object's namespace, or in the one the reference names (a cluster-scoped object's).
 */
export function referenceRight(resource: 'secrets' | 'configmaps', path: string, because: string,
  scope: ReferenceScope = 'namespaced'): RequesterRight {
  const parts = path.split('.');
  const present = parts.slice(2).map((_, i) => `has(${parts.slice(0, i + 3).join('.')})`).join(' && ');
  return { group: '', resource, verb: 'get', name: `${path}.name`, when: present, because,
    ...(scope === 'cluster' ? { namespace: { cel: `${path}.namespace` } } : {}) };
}

const quoted = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
const celOf = (value: string | FromObject) => typeof value === 'string' ? quoted(value) : value.cel;

/**
 * CEL for the right as RBAC spells it: `update on pods/ephemeralcontainers`, `use on debugprofiles.keelson.dev`, or
 * `patch on widgets.example.com/scale` with the resource and group read from the object.
 */
function rightTextExpression(right: RequesterRight): string {
  const group = typeof right.group === 'string' ? (right.group ? quoted(`.${right.group}`) : "''")
    : `(${right.group.cel} == '' ? '' : '.' + ${right.group.cel})`;
  return [quoted(`${[right.verb].flat().join(' or ')} on `), celOf(right.resource), group,
    quoted(right.subresource ? `/${right.subresource}` : '')].join(' + ');
}

/** CEL for the namespace the right is checked in; none for every namespace. */
const namespaceOf = (right: RequesterRight) => right.namespace === 'all' ? undefined
  : right.namespace?.cel ?? 'object.metadata.namespace';

/** The CEL that holds when the requester has `right` (or does not need it). */
export function rightExpression(right: RequesterRight): string {
  const resource = `authorizer.group(${celOf(right.group)}).resource(${celOf(right.resource)})` +
    (right.subresource ? `.subresource(${quoted(right.subresource)})` : '') +
    (namespaceOf(right) ? `.namespace(${namespaceOf(right)})` : '') + (right.name ? `.name(${right.name})` : '');
  const checks = [right.verb].flat().map((verb) => `${resource}.check(${quoted(verb)}).allowed()`);
  const check = checks.length > 1 ? `(${checks.join(' || ')})` : checks[0]!;
  return right.when ? `!(${right.when}) || ${check}` : check;
}

const where = (right: RequesterRight) => namespaceOf(right) ? `' in namespace ' + ${namespaceOf(right)}`
  : "' in every namespace'";

function messageExpression(kind: string, right: RequesterRight): string {
  const named = right.name ? ` + ' named ' + string(${right.name})` : '';
  return `request.userInfo.username + ' may not create or change this ${kind}: it needs ' + ${rightTextExpression(right)}${named}` +
    ` + ${where(right)} + ' (${right.because.replace(/'/g, "\\'")})'`;
}

/** CEL: the annotation is given a value, new or other than before (taking it off asks for nothing). */
function annotationSet(annotation: string): string {
  const value = (of: string) => `(has(${of}.metadata.annotations) && ${quoted(annotation)} in ${of}.metadata.annotations ` +
    `? ${of}.metadata.annotations[${quoted(annotation)}] : '')`;
  return `(${value('object')} != '' && ${value('object')} != ${value('oldObject')})`;
}

export const policyName = (definition: KindDefinition<unknown, unknown>) =>
  `${definition.plural}.${definition.api.group}-requester`;

/** The kind's ValidatingAdmissionPolicy and its binding, or none when the kind declares no requester rights. */
export function requesterPolicy(definition: KindDefinition<unknown, unknown>): Record<string, unknown>[] {
  const rights = definition.requesterRights ?? [];
  if (!rights.length) return [];
  const name = policyName(definition);
  const labels = { 'app.kubernetes.io/part-of': definition.api.category };
  return [{
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: [definition.api.group], apiVersions: [definition.api.version],
        operations: ['CREATE', 'UPDATE'], resources: [definition.plural] }] },
      matchConditions: [{ name: 'spec-or-action-annotation-set', expression: ["request.operation == 'CREATE'",
        'object.spec != oldObject.spec', ...(definition.actionAnnotations ?? []).map(annotationSet)].join(' || ') }],
      validations: rights.map((right) => ({ expression: rightExpression(right),
        messageExpression: messageExpression(definition.kind, right), reason: 'Forbidden' })),
    },
  }, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels },
    spec: { policyName: name, validationActions: ['Deny'] },
  }];
}
