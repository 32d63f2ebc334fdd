// An operator's install, for any program run by the runtime (runController): a ServiceAccount, RBAC granting exactly
// what its operators declare, the controller Deployment with the runtime's flags, its metrics Service (HTTPS, for
// scrapers granted `get` on /metrics), a PodDisruptionBudget and a NetworkPolicy. Cluster-scoped objects carry no
// namespace, so put this construct in a Chart without one.
import { restrictedPodSecurity } from '../controller/api/pod-security.ts';
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import { controllerArgs, type LogLevel } from '../controller/api/flags.ts';
import type { Permission } from '../controller/api/permissions.ts';
import { metricsAuthPermissions } from '../controller/runtime/metrics-auth.ts';
import { eventPermissions, leaderElectionPermissions } from '../controller/runtime/permissions.ts';
import { policyRules, type PolicyRule } from './rbac.ts';

export interface ResourceSettings {
  requests: { cpu: string; memory: string };
  limits: { cpu?: string; memory: string };
}

/** An operator as the install sees it: the name --controllers takes, and the API calls it declares. */
export interface InstalledOperator {
  name: string;
  permissions: readonly Permission[];
}

/** How the controller runs, whoever's it is. */
export interface ControllerSettings {
  /** Create the namespace. @default true */
  createNamespace?: boolean;
  /** The controller image. */
  image: string;
  /** Pins the image to a digest (`sha256:...`): the reference becomes image@digest. */
  imageDigest?: string;
  /** @default IfNotPresent */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /** Controller replicas. @default 1 */
  replicas?: number;
  /**
   * Leader election on a Lease. Keep it on whatever the replica count: a rolling update runs the old and the new pod
   * side by side, and without it both would reconcile. @default true
   */
  leaderElection?: boolean;
  /** Watch only this namespace (RBAC becomes a Role there). @default every namespace */
  watchNamespace?: string;
  /** @default requests 100m CPU and 192Mi, limit 512Mi */
  resources?: ResourceSettings;
  /** @default info */
  logLevel?: LogLevel;
  /** A NetworkPolicy admitting only the metrics and health ports. @default true */
  networkPolicy?: boolean;
  /**
   * /metrics over HTTPS on 8443, served only to a bearer token whose user may `get` the non-resource URL /metrics
   * (checked by TokenReview and SubjectAccessReview, as controller-runtime's secure metrics); false serves plain HTTP
   * on 8080 to anyone who reaches it. @default true
   */
  metricsSecure?: boolean;
  /** Where the controller's pods may run, as in a pod spec. */
  nodeSelector?: Record<string, string>;
  tolerations?: k8s.Toleration[];
  affinity?: k8s.Affinity;
  /** Annotations on the controller's pods (a scraper's, a service mesh's). */
  podAnnotations?: Record<string, string>;
  /** Labels on the controller's pods, besides the install's own (which select them). */
  podLabels?: Record<string, string>;
  /** Secrets, by name in the controller's namespace, to pull its image with. */
  imagePullSecrets?: string[];
  priorityClassName?: string;
  /**
   * How the replicas spread over zones or nodes, as in a pod spec; the install's labels are the label selector when
   * none is given. With two or more replicas and no `affinity`, they prefer different nodes regardless.
   */
  topologySpreadConstraints?: k8s.TopologySpreadConstraint[];
  /** Annotations on the ServiceAccount (a cloud's workload identity, say). */
  serviceAccountAnnotations?: Record<string, string>;
}

export interface OperatorInstallProps extends ControllerSettings {
  /** The ServiceAccount's, the roles', the Deployment's and the PodDisruptionBudget's name; the Lease is <name>-leader. */
  name: string;
  /** app.kubernetes.io/name and part-of on every object. */
  app: string;
  /** app.kubernetes.io/component, which tells apart the pods of two installs of one app. @default controller */
  component?: string;
  /** Namespace the controller runs in. */
  namespace: string;
  operators: readonly InstalledOperator[];
  /** Args after the runtime's own (--controllers, --namespace, the ports, --leader-elect, --log-level). */
  extraArgs?: string[];
}

export const metricsPort = 8080;
export const secureMetricsPort = 8443;
export const healthPort = 8081;
/** Where in-cluster clients (client-node's, client-go's) read the ServiceAccount's token, CA and namespace. */
const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/** `image`, pinned to `digest` when one is given. */
export function imageReference(image: string, digest?: string): string {
  if (digest === undefined) return image;
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`imageDigest: "${digest}" is not sha256: and 64 hex digits`);
  return `${image}@${digest}`;
}

export const defaultResources: ResourceSettings = { requests: { cpu: '100m', memory: '192Mi' }, limits: { memory: '512Mi' } };

/**
 * The RBAC rules of each operator, then the Events rule every operator shares (the Helm chart switches each on): of
 * namespaced resources, or of cluster-scoped ones (Nodes), which only a ClusterRole can grant.
 */
export function ruleSections(operators: readonly InstalledOperator[], scope: 'namespaced' | 'cluster' = 'namespaced'):
{ operator?: string; rules: PolicyRule[] }[] {
  const inScope = (permissions: readonly Permission[]) =>
    policyRules(permissions.filter((p) => (p.clusterScoped === true) === (scope === 'cluster')));
  return [...operators.map((entry) => ({ operator: entry.name, rules: inScope(entry.permissions) })),
    { rules: inScope(eventPermissions) }].filter((section) => section.rules.length > 0);
}

/** The ClusterRole (and binding) of what a controller reads that no namespace holds. */
export const clusterScopedRoleName = (controllerName: string) => `${controllerName}-cluster-scoped`;

export class OperatorInstall extends Construct {
  readonly namespace: string;
  readonly operators: readonly InstalledOperator[];
  /** Everything the controller may do wherever it watches. */
  readonly permissions: Permission[];

  constructor(scope: Construct, id: string, props: OperatorInstallProps) {
    super(scope, id);
    const { name: controllerName, namespace } = props;
    const replicas = props.replicas ?? 1;
    const leaderElect = props.leaderElection ?? true;
    const image = imageReference(props.image, props.imageDigest);
    this.namespace = namespace;
    this.operators = props.operators;
    this.permissions = [...this.operators.flatMap((entry) => entry.permissions), ...eventPermissions];

    const labels = { 'app.kubernetes.io/name': props.app, 'app.kubernetes.io/component': props.component ?? 'controller',
      'app.kubernetes.io/part-of': props.app };
    const secure = props.metricsSecure ?? true;
    const metrics = secure ? { port: secureMetricsPort, name: 'https' } : { port: metricsPort, name: 'metrics' };
    const meta = (name: string) => ({ name, namespace, labels });

    if (props.createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'namespace', { metadata: { name: namespace, labels: {
        'app.kubernetes.io/part-of': props.app,
        // The controller's pod meets the restricted Pod Security Standard; say so, so it stays that way.
        'pod-security.kubernetes.io/enforce': 'restricted',
      } } });
    }
    new k8s.KubeServiceAccount(this, 'service-account', { metadata: { ...meta(controllerName),
      annotations: props.serviceAccountAnnotations } });
    const subjects = [{ kind: 'ServiceAccount', name: controllerName, namespace }];
    const rules = ruleSections(this.operators).flatMap((section) => section.rules);
    if (props.watchNamespace) {
      const watched = { name: controllerName, namespace: props.watchNamespace, labels };
      new k8s.KubeRole(this, 'role', { metadata: watched, rules });
      new k8s.KubeRoleBinding(this, 'role-binding', { metadata: watched, subjects,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: controllerName } });
    } else {
      new k8s.KubeClusterRole(this, 'cluster-role', { metadata: { name: controllerName, labels }, rules });
      new k8s.KubeClusterRoleBinding(this, 'cluster-role-binding', { metadata: { name: controllerName, labels },
        subjects, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: controllerName } });
    }
    const clusterScoped = ruleSections(this.operators, 'cluster').flatMap((section) => section.rules);
    if (clusterScoped.length) {
      const name = clusterScopedRoleName(controllerName);
      new k8s.KubeClusterRole(this, 'cluster-scoped-role', { metadata: { name, labels }, rules: clusterScoped });
      new k8s.KubeClusterRoleBinding(this, 'cluster-scoped-binding', { metadata: { name, labels }, subjects,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name } });
    }
    if (secure) {
      // TokenReviews and SubjectAccessReviews are cluster-scoped: a ClusterRole even for a controller watching one namespace.
      const name = `${controllerName}-metrics-auth`;
      new k8s.KubeClusterRole(this, 'metrics-auth-role', { metadata: { name, labels }, rules: policyRules(metricsAuthPermissions) });
      new k8s.KubeClusterRoleBinding(this, 'metrics-auth-binding', { metadata: { name, labels }, subjects,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name } });
    }
    if (leaderElect) {
      const name = `${controllerName}-leader-election`;
      // Its own Lease only: create cannot be limited by name, but reading and renewing can, so neither controller of
      // a split install can hold the other's Lease.
      const leases = policyRules(leaderElectionPermissions).flatMap((rule) => [
        ...(rule.verbs.includes('create') ? [{ ...rule, verbs: ['create'] }] : []),
        { ...rule, verbs: rule.verbs.filter((v) => v !== 'create'), resourceNames: [`${controllerName}-leader`] }]);
      new k8s.KubeRole(this, 'leader-election-role', { metadata: meta(name), rules: leases });
      new k8s.KubeRoleBinding(this, 'leader-election-role-binding', { metadata: meta(name), subjects,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name } });
    }

    const resources = props.resources ?? defaultResources;
    const quantities = (values: Record<string, string | undefined>) => Object.fromEntries(
      Object.entries(values).filter(([, v]) => v !== undefined).map(([k, v]) => [k, k8s.Quantity.fromString(v!)]));
    const args = [...controllerArgs({
      controllers: this.operators.map((entry) => entry.name),
      namespace: props.watchNamespace,
      metricsBindAddress: `:${metrics.port}`,
      metricsSecure: secure,
      healthProbeBindAddress: `:${healthPort}`,
      leaderElect,
      leaderElectionId: leaderElect ? `${controllerName}-leader` : undefined,
      logLevel: props.logLevel ?? 'info',
    }), ...props.extraArgs ?? []];
    const probe = (path: string, periodSeconds: number) => ({
      httpGet: { path, port: k8s.IntOrString.fromString('health') }, periodSeconds, timeoutSeconds: 2, failureThreshold: 3,
    });
    new k8s.KubeDeployment(this, 'deployment', {
      metadata: meta(controllerName),
      spec: {
        replicas,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels: { ...props.podLabels, ...labels }, annotations: props.podAnnotations },
          spec: {
            serviceAccountName: controllerName,
            nodeSelector: props.nodeSelector,
            tolerations: props.tolerations,
            // Replicas on one node would all go with it.
            affinity: props.affinity ?? (replicas > 1 ? { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: labels } } },
            ] } } : undefined),
            topologySpreadConstraints: props.topologySpreadConstraints?.map((constraint) =>
              ({ labelSelector: { matchLabels: labels }, ...constraint })),
            priorityClassName: props.priorityClassName,
            imagePullSecrets: props.imagePullSecrets?.map((name) => ({ name })),
            // The token is mounted explicitly below, so the pod spec shows every credential the pod holds.
            automountServiceAccountToken: false,
            securityContext: restrictedPodSecurity,
            terminationGracePeriodSeconds: 30,
            containers: [{
              name: 'controller',
              image,
              imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
              args,
              env: [
                { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              ],
              ports: [
                { name: metrics.name, containerPort: metrics.port, protocol: 'TCP' },
                { name: 'health', containerPort: healthPort, protocol: 'TCP' },
              ],
              livenessProbe: probe('/healthz', 20),
              readinessProbe: probe('/readyz', 10),
              resources: { requests: quantities(resources.requests), limits: quantities(resources.limits) },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
                capabilities: { drop: ['ALL'] } },
              volumeMounts: [{ name: 'tmp', mountPath: '/tmp' },
                { name: 'service-account', mountPath: serviceAccountDir, readOnly: true }],
            }],
            volumes: [{ name: 'tmp', emptyDir: { sizeLimit: k8s.Quantity.fromString('64Mi') } }, {
              // What the ServiceAccount admission plugin would have added: a bound token the kubelet rotates, the
              // cluster's CA and the namespace.
              name: 'service-account',
              projected: { sources: [
                { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
                { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
                { downwardApi: { items: [{ path: 'namespace',
                  fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
              ] },
            }],
          },
        },
      },
    });
    new k8s.KubeService(this, 'metrics-service', {
      metadata: meta(`${controllerName}-metrics`),
      spec: { selector: labels, ports: [{ name: metrics.name, port: metrics.port,
        targetPort: k8s.IntOrString.fromString(metrics.name), protocol: 'TCP' }] },
    });
    if (props.networkPolicy ?? true) {
      // Ingress only: the controller's own calls (the apiserver, PodAlert webhooks, whose destinations
      // --webhook-allowed-destinations limits) go out, and nothing but scrapes and probes comes in.
      const port = (number: number) => ({ port: k8s.IntOrString.fromNumber(number), protocol: 'TCP' });
      new k8s.KubeNetworkPolicy(this, 'network-policy', {
        metadata: meta(controllerName),
        spec: { podSelector: { matchLabels: labels }, policyTypes: ['Ingress'],
          ingress: [{ ports: [port(metrics.port), port(healthPort)] }] },
      });
    }
    new k8s.KubePodDisruptionBudget(this, 'disruption-budget', {
      metadata: meta(controllerName),
      // With one replica, maxUnavailable lets nodes drain; with more, keep one reconciling at all times. A replica that
      // is not ready reconciles nothing, so it may always be evicted: no budget of all-unready pods blocks a drain.
      spec: { selector: { matchLabels: labels }, unhealthyPodEvictionPolicy: 'AlwaysAllow',
        ...(replicas > 1 ? { minAvailable: k8s.IntOrString.fromNumber(1) } : { maxUnavailable: k8s.IntOrString.fromNumber(1) }) },
    });
  }
}
