import type { Permission } from '../controller/api/permissions.ts';

export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const verbOrder = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];

/**
 * RBAC rules granting exactly the declared permissions: verbs merged per resource, then resources with the same
 * verbs in one group folded into one rule. Sorted, so synthesis is deterministic.
 */
export function policyRules(permissions: readonly Permission[]): PolicyRule[] {
  const verbsByResource = new Map<string, Set<string>>();
  for (const p of permissions) {
    const key = `${p.group}\u0000${p.resource}`;
    const verbs = verbsByResource.get(key) ?? new Set<string>();
    p.verbs.forEach((v) => verbs.add(v));
    verbsByResource.set(key, verbs);
  }
  const rules = new Map<string, PolicyRule>();
  for (const [key, verbSet] of verbsByResource) {
    const [group, resource] = key.split('\u0000') as [string, string];
    const verbs = [...verbSet].sort((a, b) => verbOrder.indexOf(a) - verbOrder.indexOf(b));
    const ruleKey = `${group}\u0000${verbs.join(',')}`;
    const rule = rules.get(ruleKey) ?? { apiGroups: [group], resources: [], verbs };
    rule.resources.push(resource);
    rules.set(ruleKey, rule);
  }
  return [...rules.values()]
    .map((r) => ({ ...r, resources: r.resources.sort() }))
    .sort((a, b) => `${a.apiGroups[0]} ${a.resources[0]}`.localeCompare(`${b.apiGroups[0]} ${b.resources[0]}`));
}
