// Label selectors (metav1.LabelSelector): matching labels, and kubectl's text form.

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

export function matches(selector: LabelSelector, labels: Record<string, string> = {}): boolean {
  const exact = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return exact && (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    switch (operator) {
      case 'In': return key in labels && values.includes(labels[key]!);
      case 'NotIn': return !(key in labels) || !values.includes(labels[key]!);
      case 'Exists': return key in labels;
      case 'DoesNotExist': return !(key in labels);
    }
  });
}

/** kubectl's label-selector syntax: app=web,tier in (a,b),!legacy. */
export function selectorString(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    if (operator === 'Exists') parts.push(key);
    else if (operator === 'DoesNotExist') parts.push(`!${key}`);
    else parts.push(`${key} ${operator === 'In' ? 'in' : 'notin'} (${values.join(',')})`);
  }
  return parts.join(',');
}
