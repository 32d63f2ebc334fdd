// The Helm chart in dist/helm/keelson: KeelsonInstall's own objects, with each value a Helm user sets put where the
// construct's prop would put it. `helm template` with the default values gives dist/, and charts/helm.test.ts holds
// every value to the prop it stands for.
import { App, Chart, Yaml } from 'cdk8s';
import { keelsonFlags, logLevels, runtimeFlags } from '../controller/api/flags.ts';
import { imageRepository } from '../controller/api/release.ts';
import { catalog } from '../controller/operators/catalog.ts';
import { debugProfiles } from '../controller/operators/podbuggertool/schema.ts';
import { checkScaleResource, scaleResourcePatterns, scaleResourceText, type ScaleResource } from '../controller/operators/tdset/scale-resources.ts';
import { defaultControllers, KeelsonInstall, metricsReaderName, type KeelsonInstallProps } from './install.ts';
import { clusterScopedRoleName, defaultResources, ruleSections } from './operator-install.ts';
import type { PolicyRule } from './rbac.ts';

/**
 * Stand-ins written into the objects before they become YAML, replaced afterwards: a value by a template expression,
 * a whole line (a map key, a list item) by template lines indented where that line stands.
 */
class Placeholders {
  private readonly values = new Map<string, string>();
  private readonly blocks = new Map<string, (indent: number) => string[]>();

  value(expression: string): string {
    const token = `__helm_value_${this.values.size}__`;
    this.values.set(token, expression);
    return token;
  }

  block(lines: (indent: number) => string[]): string {
    const token = `__helm_block_${this.blocks.size}__`;
    this.blocks.set(token, lines);
    return token;
  }

  render(yaml: string): string {
    return yaml.split('\n').flatMap((line) => {
      const whole = /^( *)(?:- )?(__helm_block_\d+__)(?:: null)?$/.exec(line);
      if (whole) {
        const indent = whole[1]!.length;
        return this.blocks.get(whole[2]!)!(indent).map((text) => `${' '.repeat(indent)}${text}`);
      }
      return [line.replace(/__helm_value_\d+__/g, (token) => this.values.get(token)!)];
    }).join('\n');
  }
}

const yamlLines = (value: unknown) => Yaml.stringify(value).trimEnd().split('\n');
/** `key:` and the value's YAML under it, when the value is set. */
const optional = (key: string, value: string) => (indent: number) =>
  [`{{- with ${value} }}`, `${key}:`, `  {{- toYaml . | nindent ${indent + 2} }}`, '{{- end }}'];

function synthesize(props: KeelsonInstallProps): any[] {
  const chart = new Chart(new App(), 'keelson');
  new KeelsonInstall(chart, 'install', props);
  return chart.toJson();
}

/** The Deployment (a key of defaultControllers) an object belongs to, by its component label; none for shared objects. */
function controllerOf(object: any): string | undefined {
  const component = object.metadata.labels?.['app.kubernetes.io/component'];
  return Object.keys(defaultControllers).find((name) => name.replace(/^keelson-/, '') === component);
}

/** A tdsetScaleResources item's fields, inside a range over them. */
const scaleResourceFields: ScaleResource = { group: '{{ .group }}', resource: '{{ .resource }}', kind: '{{ .kind }}' };

/** Whether tdsetScaleResources may name a resource of `group`. */
function scalableGroup(group: string): boolean {
  try {
    checkScaleResource({ group, resource: 'widgets', kind: 'Widget' }, group);
    return true;
  } catch {
    return false;
  }
}

/**
 * TDSet's rules with those of the scale resources in the values, as the helper keelson.withScaleRules sorts them in.
 * It only adds rules: policyRules would merge a scale resource's into TDSet's own of the same group, were there one.
 */
function withScaleRules(rules: PolicyRule[]): string[] {
  const shared = rules.flatMap((rule) => rule.apiGroups).filter(scalableGroup);
  if (shared.length) {
    throw new Error(`keelson.withScaleRules would not merge rules of ${shared.join(', ')}, which TDSet has and ` +
      'tdsetScaleResources may name, as policyRules does');
  }
  return ['  {{- include "keelson.withScaleRules" (list .Values.tdsetScaleResources `',
    ...yamlLines(rules).map((line) => `  ${line}`), '  `) | nindent 2 }}'];
}

/** The Helm expression for a Deployment's enabled operators, comma-separated (empty when none is enabled). */
const operatorsIn = (name: string) =>
  `include "keelson.operatorsIn" (list .Values.operators (list ${defaultControllers[name]!.map((o) => `"${o}"`).join(' ')}) ` +
  `.Values.watchNamespace)`;
/** Operators of cluster-scoped kinds: left out while watchNamespace is set. */
const everyNamespace = catalog.filter((entry) => entry.kind.scope === 'Cluster').map((entry) => `"${entry.name}"`);
/** The Helm condition of an operator's being run. */
const running = (operator: string) => everyNamespace.includes(`"${operator}"`)
  ? `(and (has "${operator}" .Values.operators) (not .Values.watchNamespace))` : `(has "${operator}" .Values.operators)`;

/** templates/keelson.yaml: the install's objects, each one switched on or shaped by the values. */
function installTemplate(): string {
  const helm = new Placeholders();
  const base = { image: helm.value('{{ include "keelson.image" . }}'), namespace: helm.value('{{ include "keelson.namespace" . }}') };
  const objects = synthesize(base);
  const watched = synthesize({ ...base, watchNamespace: helm.value('{{ .Values.watchNamespace }}') })
    .filter((o) => ['Role', 'RoleBinding'].includes(o.kind) && o.metadata.name in defaultControllers);
  const highlyAvailable = synthesize({ ...base, replicas: 2 });

  const rules = (name: string, scope: 'namespaced' | 'cluster') => helm.block(() => ['rules:', ...ruleSections(catalog, scope)
    .filter(({ operator }) => !operator || defaultControllers[name]!.includes(operator)).flatMap(({ operator, rules }) => {
      const lines = operator === 'tdset' && scope === 'namespaced' ? withScaleRules(rules)
        : yamlLines(rules).map((line) => `  ${line}`);
      return operator ? [`  {{- if ${running(operator)} }}`, ...lines, '  {{- end }}'] : lines;
    })]);
  const specs = { ...runtimeFlags(), ...keelsonFlags };
  const flag = (key: keyof typeof specs) => `--${specs[key].flag}`;
  const documents: { object: any; when?: string }[] = [];
  for (const object of objects) {
    const controller = controllerOf(object);
    // A Deployment none of whose operators is enabled is left out, with everything of its own.
    const push = (doc: any, when?: string) => documents.push({ object: doc, when: controller
      ? (when ? `and (${operatorsIn(controller)}) (${when})` : operatorsIn(controller)) : when });
    switch (object.kind) {
      case 'Namespace':
        // `helm install --create-namespace` makes the release's namespace itself.
        push(object, 'and .Values.createNamespace (ne (include "keelson.namespace" .) .Release.Namespace)');
        break;
      case 'ServiceAccount':
        object.metadata[helm.block(optional('annotations', '.Values.serviceAccountAnnotations'))] = null;
        push(object);
        break;
      case 'ClusterRole':
      case 'ClusterRoleBinding':
        if (controller && object.metadata.name === clusterScopedRoleName(controller)) {
          // Only with an operator that reads what no namespace holds.
          const readers = catalog.filter((e) => defaultControllers[controller]!.includes(e.name) &&
            e.permissions.some((p) => p.clusterScoped));
          push(object, `or ${readers.map((e) => running(e.name)).join(' ')} false`);
          break;
        }
        if (object.metadata.name !== controller) {
          push(object);
          break;
        }
        push(object, 'not .Values.watchNamespace');
        // Watching one namespace, the same grants are a Role there.
        if (object.kind === 'ClusterRoleBinding') {
          for (const o of watched.filter((w) => w.metadata.name === controller)) push(o, '.Values.watchNamespace');
        }
        break;
      case 'Deployment': {
        object.spec.replicas = helm.value('{{ .Values.replicas }}');
        const pod = object.spec.template;
        pod.metadata[helm.block(optional('annotations', '.Values.podAnnotations'))] = null;
        pod.metadata.labels[helm.block((indent) => ['{{- with .Values.podLabels }}', `{{- toYaml . | nindent ${indent} }}`,
          '{{- end }}'])] = null;
        for (const key of ['nodeSelector', 'tolerations', 'priorityClassName']) {
          pod.spec[helm.block(optional(key, `.Values.${key}`))] = null;
        }
        // Two replicas or more, and no affinity of the user's: prefer different nodes, as the construct does.
        const spread = highlyAvailable.find((o) => o.kind === 'Deployment' && o.metadata.name === object.metadata.name)
          .spec.template.spec.affinity;
        pod.spec[helm.block((indent) => ['{{- if .Values.affinity }}', 'affinity:',
          `  {{- toYaml .Values.affinity | nindent ${indent + 2} }}`, '{{- else if gt (int .Values.replicas) 1 }}',
          ...yamlLines({ affinity: spread }), '{{- end }}'])] = null;
        const selector = Object.entries(object.spec.selector.matchLabels).map(([k, v]) => `"${k}" "${v}"`).join(' ');
        pod.spec[helm.block((indent) => ['{{- with .Values.topologySpreadConstraints }}', 'topologySpreadConstraints:',
          '{{- range . }}', `  - {{- toYaml (merge (deepCopy .) (dict "labelSelector" (dict "matchLabels" (dict ${selector})))) ` +
            `| nindent ${indent + 4} }}`, '{{- end }}', '{{- end }}'])] = null;
        pod.spec[helm.block(() => ['{{- with .Values.imagePullSecrets }}', 'imagePullSecrets:', '{{- range . }}',
          '  - name: {{ . }}', '{{- end }}', '{{- end }}'])] = null;
        const [container] = pod.spec.containers;
        container.imagePullPolicy = helm.value('{{ .Values.image.pullPolicy }}');
        delete container.resources;
        container[helm.block((indent) => ['resources:', `  {{- toYaml .Values.resources | nindent ${indent + 2} }}`])] = null;
        container.args = container.args.flatMap((arg: string) => {
          if (arg.startsWith(`${flag('controllers')}=`)) {
            return [`${flag('controllers')}=${helm.value(`{{ ${operatorsIn(controller!)} }}`)}`,
              helm.block(() => ['{{- with .Values.watchNamespace }}', `- ${flag('namespace')}={{ . }}`, '{{- end }}'])];
          }
          if (arg.startsWith(`${flag('logLevel')}=`)) {
            return [`${flag('logLevel')}=${helm.value('{{ .Values.logLevel }}')}`,
              helm.block(() => [
                ...(['webhookAllowedDestinations', 'webhookRefusedDestinations', 'podBuggerToolAllowedProfiles',
                  'podBuggerToolAllowedImages'] as const)
                  .flatMap((key) => [`{{- with .Values.${key} }}`, `- ${flag(key)}={{ join "," . }}`, '{{- end }}']),
                '{{- with .Values.tdsetScaleResources }}', `- ${flag('tdsetScaleResources')}=` +
                  `{{ range $i, $_ := . }}{{ if $i }},{{ end }}${scaleResourceText(scaleResourceFields)}{{ end }}`, '{{- end }}',
                '{{- if not .Values.podAlertLogTails }}', `- ${flag('podAlertLogTails')}=false`, '{{- end }}'])];
          }
          return [arg];
        });
        push(object);
        break;
      }
      case 'NetworkPolicy':
        push(object, '.Values.networkPolicy');
        break;
      case 'PodDisruptionBudget': {
        const { selector, ...single } = object.spec;
        const { selector: _, ...several } = highlyAvailable.find((o) => o.kind === 'PodDisruptionBudget' &&
          o.metadata.name === object.metadata.name)!.spec;
        object.spec = { selector, [helm.block(() => ['{{- if gt (int .Values.replicas) 1 }}', ...yamlLines(several),
          '{{- else }}', ...yamlLines(single), '{{- end }}'])]: null };
        push(object);
        break;
      }
      default:
        push(object);
    }
  }
  for (const role of [...objects.filter((o) => o.kind === 'ClusterRole'), ...watched.filter((o) => o.kind === 'Role')]) {
    const controller = Object.keys(defaultControllers).find((name) => role.metadata.name === name ||
      role.metadata.name === clusterScopedRoleName(name));
    if (!controller) continue;
    delete role.rules;
    role[rules(controller, role.metadata.name === controller ? 'namespaced' : 'cluster')] = null;
  }
  return documents.map(({ object, when }) => {
    const yaml = `---\n${helm.render(Yaml.stringify(object).trimEnd())}\n`;
    return when ? `{{- if ${when} }}\n${yaml}{{- end }}\n` : yaml;
  }).join('');
}

const helpers = `{{/* The namespace the controller runs in: the value, or the release's. */}}
{{- define "keelson.namespace" -}}
{{ .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/*
Of the enabled operators (the list's first item), those its second item names, comma-separated, in its order; with a
watched namespace (the third), not those of cluster-scoped kinds.
*/}}
{{- define "keelson.operatorsIn" -}}
{{- $enabled := index . 0 -}}
{{- if index . 2 }}{{ $enabled = without $enabled ${everyNamespace.join(' ')} }}{{ end -}}
{{- $found := list -}}
{{- range index . 1 }}{{ if has . $enabled }}{{ $found = append $found . }}{{ end }}{{ end -}}
{{- join "," $found -}}
{{- end }}

{{/*
The RBAC rules in the second item (YAML) and, for the scale resources in the first, get on each and get and patch on
its scale subresource: a group's resources in one rule per verbs, every rule sorted by group and first resource, as
charts/rbac.ts writes them (a dict's keys come sorted byte by byte, which orders such names as localeCompare does).
*/}}
{{- define "keelson.withScaleRules" -}}
{{- $rules := dict -}}
{{- range fromYamlArray (index . 1) }}{{ $_ := set $rules (printf "%s %s" (first .apiGroups) (first .resources)) . }}{{ end -}}
{{- $byGroup := dict -}}
{{- range index . 0 }}{{ $_ := set $byGroup .group (append (get $byGroup .group | default list) .resource) }}{{ end -}}
{{- range $group, $resources := $byGroup }}
{{- $names := $resources | uniq | sortAlpha -}}
{{- $scales := list -}}
{{- range $names }}{{ $scales = append $scales (printf "%s/scale" .) }}{{ end -}}
{{- $scales = sortAlpha $scales -}}
{{- $_ := set $rules (printf "%s %s" $group (first $names)) (dict "apiGroups" (list $group) "resources" $names "verbs" (list "get")) -}}
{{- $_ = set $rules (printf "%s %s" $group (first $scales)) (dict "apiGroups" (list $group) "resources" $scales "verbs" (list "get" "patch")) -}}
{{- end -}}
{{- $sorted := list -}}
{{- range $rules }}{{ $sorted = append $sorted . }}{{ end -}}
{{- toYaml $sorted -}}
{{- end }}

{{/* repository:tag, pinned to the digest when one is set; the tag defaults to the chart's appVersion. */}}
{{- define "keelson.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{ with .Values.image.digest }}@{{ . }}{{ end }}
{{- end }}
`;

const notes = `Keelson {{ .Chart.AppVersion }} runs in namespace {{ include "keelson.namespace" . }}{{ with .Values.watchNamespace }}, watching {{ . }} only{{ end }}.
Operators: {{ join ", " .Values.operators }}.

  kubectl -n {{ include "keelson.namespace" . }} rollout status deployment -l app.kubernetes.io/name=keelson
  kubectl get ${catalog.map((entry) => entry.kind.plural).join(',')} -A

/metrics is HTTPS on 8443, for scrapers bound to the ClusterRole ${metricsReaderName} (dist/monitoring has a ServiceMonitor).
The CRDs come from the chart's crds/ folder: helm installs them once and never upgrades or deletes them.
Apply crds/ yourself (kubectl apply --server-side -f) when a new chart version changes them.
`;

function values(version: string): string {
  const operators = catalog.map((entry) => entry.name);
  return `# Keelson's Helm chart, written by charts/helm.ts from the same constructs as dist/: edit those, not this.
image:
  repository: ${imageRepository}
  # Defaults to the chart's appVersion (${version}).
  tag: ""
  # Pins the image, sha256: and 64 hex digits; the reference becomes repository:tag@digest.
  digest: ""
  pullPolicy: IfNotPresent

# Where the controller runs; empty for the release's namespace.
namespace: keelson-system
# Create that namespace, labelled for the restricted Pod Security Standard, unless it is the release's own (which
# "helm install --create-namespace" makes). Set false when it exists.
createNamespace: true

# Two or more run one leader at a time (a coordination.k8s.io Lease) and keep one up through node drains.
replicas: 1

# The operators to run; RBAC grants what these need and nothing more.
operators:
${yamlLines(operators).map((line) => `  ${line}`).join('\n')}

# Watch only this namespace (RBAC becomes a Role there); empty for every namespace. ClusterPodAlert, a
# cluster-scoped kind, runs only when every namespace is watched: it is left out while this is set.
watchNamespace: ""

resources:
${yamlLines(defaultResources).map((line) => `  ${line}`).join('\n')}

# ${logLevels.join(', ')}
logLevel: info

# PodAlert webhooks go only to these hosts, CIDRs and, with "public", public addresses; empty for public only
# (loopback, private, link-local, NAT64 and in-cluster names are refused). E.g. [public, alertmanager.monitoring.svc]
webhookAllowedDestinations: []
# CIDRs PodAlert webhooks never go to either: the cluster's Service and pod ranges when they are public addresses.
webhookRefusedDestinations: []

# The debug profiles any PodBuggerTool may use; empty for general, baseline and restricted. netadmin and sysadmin
# also need, at admission, a requester granted use on debugprofiles.keelson.dev by name.
podBuggerToolAllowedProfiles: []
# PodBuggerTool images must start with one of these prefixes (registry.corp/debug/); empty for any image.
podBuggerToolAllowedImages: []
# Copy failing containers' log tails into PodAlerts' status and alerts.
podAlertLogTails: true

# Custom resources with a scale subresource that TDSets may scale, e.g. {group: example.com, resource: widgets,
# kind: Widget} (a scaleTargetRef names apps/v1 Deployments, StatefulSets and ReplicaSets otherwise). Each grants the
# TDSet controller get on it and get and patch on its scale subresource; TDSet's admission policy refuses a TDSet aimed
# at one unless its requester may patch that scale themselves.
tdsetScaleResources: []

# Each kind's ValidatingAdmissionPolicy: whoever creates an object, or changes its spec, must hold the rights the
# controller uses for them. Set false only where they are applied already, with the CRDs, from dist/.
admissionPolicies: true

# A NetworkPolicy admitting only the metrics (8443, HTTPS) and health (8081) ports.
networkPolicy: true

nodeSelector: {}
tolerations: []
# Empty: with two replicas or more, they prefer different nodes.
affinity: {}
# Each constraint's labelSelector defaults to the controller's pods.
topologySpreadConstraints: []
priorityClassName: ""
podAnnotations: {}
podLabels: {}
# Secrets in the controller's namespace, by name, to pull the image with.
imagePullSecrets: []
# On both controllers' ServiceAccounts (a cloud's workload identity, say).
serviceAccountAnnotations: {}
`;
}

function valuesSchema(): object {
  const object = { type: 'object' };
  const strings = { type: 'object', additionalProperties: { type: 'string' } };
  const quantities = { type: 'object', additionalProperties: { type: ['string', 'number'] } };
  return {
    $schema: 'https://json-schema.org/draft-07/schema#',
    type: 'object',
    additionalProperties: false,
    properties: {
      global: object,
      image: { type: 'object', additionalProperties: false, properties: {
        repository: { type: 'string', minLength: 1 },
        tag: { type: 'string' },
        digest: { type: 'string', pattern: '^(sha256:[0-9a-f]{64})?$' },
        pullPolicy: { enum: ['Always', 'IfNotPresent', 'Never'] },
      } },
      namespace: { type: 'string' },
      createNamespace: { type: 'boolean' },
      replicas: { type: 'integer', minimum: 1 },
      operators: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: catalog.map((entry) => entry.name) } },
      watchNamespace: { type: 'string' },
      resources: { type: 'object', additionalProperties: false, properties: { requests: quantities, limits: quantities } },
      logLevel: { enum: [...logLevels] },
      webhookAllowedDestinations: { type: 'array', items: { type: 'string', minLength: 1 } },
      webhookRefusedDestinations: { type: 'array', items: { type: 'string', minLength: 1 } },
      podBuggerToolAllowedProfiles: { type: 'array', uniqueItems: true, items: { enum: [...debugProfiles] } },
      podBuggerToolAllowedImages: { type: 'array', items: { type: 'string', minLength: 1 } },
      podAlertLogTails: { type: 'boolean' },
      // checkScaleResource's patterns and refusals.
      tdsetScaleResources: { type: 'array', items: { type: 'object', additionalProperties: false,
        required: ['group', 'resource', 'kind'], properties: {
          group: { type: 'string', pattern: scaleResourcePatterns.group.source,
            not: { anyOf: [{ const: 'keelson.dev' }, { pattern: '\\.k8s\\.io$' }] } },
          resource: { type: 'string', pattern: scaleResourcePatterns.resource.source },
          kind: { type: 'string', pattern: scaleResourcePatterns.kind.source },
        } } },
      admissionPolicies: { type: 'boolean' },
      networkPolicy: { type: 'boolean' },
      nodeSelector: strings,
      tolerations: { type: 'array', items: object },
      affinity: object,
      topologySpreadConstraints: { type: 'array', items: { type: 'object', required: ['maxSkew', 'topologyKey', 'whenUnsatisfiable'] } },
      priorityClassName: { type: 'string' },
      podAnnotations: strings,
      podLabels: strings,
      imagePullSecrets: { type: 'array', items: { type: 'string', minLength: 1 } },
      serviceAccountAnnotations: strings,
    },
  };
}

/**
 * The chart's files by path, relative to its folder. `crds` is the CRDs' YAML as dist/ has it: the CRDs go to crds/
 * (installed once, as Helm does), their admission policies to templates/, so that upgrades carry them.
 */
export function helmChart(version: string, crds: string): Map<string, string> {
  const documents = crds.split(/^---\n/m).filter((text) => text.trim());
  const isCrd = (text: string) => /^kind: CustomResourceDefinition$/m.test(text);
  const policies = documents.filter((text) => !isCrd(text))
    .map((text) => `{{- if .Values.admissionPolicies }}\n---\n${text}{{- end }}\n`).join('');
  const chart = `apiVersion: v2
name: keelson
description: Kubernetes operators in TypeScript - TDSet, PodBuggerTool, PodAlert, PostgresCluster, PrometheusJmxExporter
type: application
version: ${version}
appVersion: "${version}"
# ValidatingAdmissionPolicy, which guards every kind, is GA from 1.30.
kubeVersion: ">= 1.30.0-0"
`;
  return new Map([
    ['Chart.yaml', chart],
    ['values.yaml', values(version)],
    ['values.schema.json', `${JSON.stringify(valuesSchema(), null, 2)}\n`],
    ['crds/keelson-crds.yaml', documents.filter(isCrd).join('---\n')],
    ['templates/admission.yaml', policies],
    ['templates/_helpers.tpl', helpers],
    ['templates/keelson.yaml', installTemplate()],
    ['templates/NOTES.txt', notes],
  ]);
}
