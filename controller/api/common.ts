// Field shapes that several kinds share, written as Kubernetes' own types are, so they read the same.
import { array, enumeration, integer, map, object, string, type Node, type Rule } from './schema.ts';

const labelKey = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';
const labelValue = '^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$';
export const dns1123Label = '^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$';
export const dns1123Subdomain = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const labelMap = <const O extends { description: string; required?: boolean; minProperties?: number }>(options: O) =>
  map(string({ description: 'A label value.', maxLength: 63, pattern: labelValue }),
    { ...options, maxProperties: 64,
      rules: [{ rule: `self.all(k, k.matches('${labelKey.replaceAll('\\', '\\\\')}') && k.size() <= 316)`,
        message: 'every key must be a valid label key (an optional DNS prefix and "/", then a name of at most 63 characters)' }] });

const selectorRules: Rule[] = [
  { rule: 'has(self.matchLabels) && size(self.matchLabels) > 0 || has(self.matchExpressions) && size(self.matchExpressions) > 0',
    message: 'a selector needs at least one of matchLabels or matchExpressions' },
];

/** metav1.LabelSelector, of pods unless `of` names what it selects. */
export const labelSelector = <O extends { required?: boolean; of?: string }>(description: string, options?: O) => object({
  matchLabels: labelMap({ description: `Labels ${options?.of ?? 'a pod'} must carry, each with exactly this value.` }),
  matchExpressions: array(object({
    key: string({ description: 'The label key the requirement applies to.', required: true, maxLength: 316,
      pattern: labelKey }),
    operator: enumeration(['In', 'NotIn', 'Exists', 'DoesNotExist'], {
      description: 'How the key relates to the values: In, NotIn, Exists or DoesNotExist.', required: true }),
    values: array(string({ description: 'A label value.', maxLength: 63, pattern: labelValue }),
      { description: 'The values for In and NotIn (at least one); empty for Exists and DoesNotExist.', maxItems: 64 }),
  }, {
    description: 'A requirement on one label key.',
    rules: [
      { rule: "self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : !has(self.values) || size(self.values) == 0",
        message: 'In and NotIn need at least one value; Exists and DoesNotExist take none', fieldPath: '.values' },
    ],
  }), { description: 'Requirements on labels; all must hold.', maxItems: 32 }),
}, { description, rules: selectorRules, required: options?.required } as { description: string; rules: Rule[] } & O);

/** metav1.Condition. */
export const conditions = array(object({
  type: string({ description: 'The condition type, e.g. Ready.', required: true, maxLength: 316 }),
  status: enumeration(['True', 'False', 'Unknown'], { description: 'True, False or Unknown.', required: true }),
  observedGeneration: integer({ description: 'The .metadata.generation the condition was set for.', minimum: 0 }),
  lastTransitionTime: string({ description: 'When the status last changed.', format: 'date-time', required: true }),
  reason: string({ description: 'A CamelCase word saying why the condition is what it is.', required: true,
    maxLength: 1024, pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$' }),
  message: string({ description: 'A human-readable explanation.', required: true, maxLength: 32768 }),
}, { description: 'One aspect of the object\'s state.' }), {
  description: 'The latest observations of the object\'s state (Ready, and others per kind).',
  maxItems: 16, listType: 'map', listMapKeys: ['type'],
});

export const observedGeneration = integer({
  description: 'The .metadata.generation this status describes; behind the generation while a change is pending.',
  minimum: 0,
});

/** A kind's status: its own fields plus the conditions and observedGeneration every kind reports. */
export const statusOf = <F extends Record<string, Node<unknown, boolean>>>(fields: F) =>
  object({ conditions, observedGeneration, ...fields }, { description: 'What the operator last observed and did.' });
