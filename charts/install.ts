// Keelson's install: the catalog's operators in Deployments of their own, each an OperatorInstall with its own
// ServiceAccount and rights, so that a flaw in one operator exposes only its Deployment's rights. By default the
// operators that change pods (add containers, exec into them, run them) run apart from those that do not.
import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-27';
import { controllerArgs, keelsonFlags, type ControllerOptions } from '../controller/api/flags.ts';
import { catalog, type CatalogEntry } from '../controller/operators/catalog.ts';
import { checkScaleResource, scaleResourceText, type ScaleResource } from '../controller/operators/tdset/scale-resources.ts';
import { releaseImage } from '../controller/api/release.ts';
import { imageReference, OperatorInstall, type ControllerSettings } from './operator-install.ts';

export interface KeelsonInstallProps extends Omit<ControllerSettings, 'image'> {
  /** The controller image. @default this release's, ghcr.io/keelson-dev/keelson-controller:<version> */
  image?: string;
  /** Namespace the controllers run in. @default keelson-system */
  namespace?: string;
  /** Operators to run, by catalog name. @default all of them */
  operators?: string[];
  /**
   * The Deployments, by name, and the operators each runs; every operator in one. A Deployment none of whose operators
   * runs is left out. @default defaultControllers
   */
  controllers?: Record<string, string[]>;
  /**
   * PodAlert webhooks go only to these hosts, CIDRs and, with `public`, public addresses.
   * @default public: loopback, private, link-local, NAT64 and in-cluster names are refused
   */
  webhookAllowedDestinations?: string[];
  /** CIDRs PodAlert webhooks never go to either: the cluster's Service and pod ranges when they are public addresses. */
  webhookRefusedDestinations?: string[];
  /** The debug profiles any PodBuggerTool may use. @default general, baseline and restricted */
  podBuggerToolAllowedProfiles?: string[];
  /** PodBuggerTool images must start with one of these prefixes. @default any image */
  podBuggerToolAllowedImages?: string[];
  /** Copy failing containers' log tails into PodAlerts' status and alerts. @default true */
  podAlertLogTails?: boolean;
  /**
   * Custom resources with a scale subresource that TDSets may scale (a scaleTargetRef names apps/v1 Deployments,
   * StatefulSets and ReplicaSets otherwise). Each grants the TDSet controller `get` on it and `get` and `patch` on its
   * scale subresource; TDSet's admission policy asks whoever points a TDSet at one for `patch` on that scale.
   */
  tdsetScaleResources?: ScaleResource[];
}

export const controllerName = 'keelson-controller';
export const podControllerName = 'keelson-pod-controller';
/** Whoever is bound to it may scrape every Keelson controller's /metrics. */
export const metricsReaderName = 'keelson-metrics-reader';

/**
 * TDSet, PodAlert and ClusterPodAlert in one Deployment; PodBuggerTool, PostgresCluster and PrometheusJmxExporter,
 * which change pods, in another.
 */
export const defaultControllers: Record<string, string[]> = {
  [controllerName]: ['tdset', 'podalert', 'clusterpodalert'],
  [podControllerName]: ['podbuggertool', 'postgrescluster', 'prometheusjmxexporter'],
};

/**
 * The operators `operators` names, or all; watching one namespace, all but those of cluster-scoped kinds, which one
 * controller must own across the cluster (asked for by name there, they are an error).
 */
export function enabledOperators(operators?: string[], watchNamespace?: string): CatalogEntry[] {
  const everyNamespace = (entry: CatalogEntry) => entry.kind.scope === 'Cluster';
  if (!operators) return catalog.filter((entry) => !watchNamespace || !everyNamespace(entry));
  const unknown = operators.filter((name) => !catalog.some((entry) => entry.name === name));
  if (unknown.length) {
    throw new Error(`unknown operators: ${unknown.join(', ')} (known: ${catalog.map((e) => e.name).join(', ')})`);
  }
  const enabled = catalog.filter((entry) => operators.includes(entry.name));
  const clusterWide = enabled.filter(everyNamespace);
  if (watchNamespace && clusterWide.length) {
    throw new Error(`operators ${clusterWide.map((e) => e.name).join(', ')} reconcile cluster-scoped kinds: they run ` +
      'only in an install that watches every namespace (no watchNamespace)');
  }
  return enabled;
}

/** Each Deployment's enabled operators, in the catalog's order; throws unless every operator is in exactly one. */
export function controllersOf(enabled: readonly CatalogEntry[], controllers = defaultControllers): [string, CatalogEntry[]][] {
  for (const entry of catalog) {
    const homes = Object.keys(controllers).filter((name) => controllers[name]!.includes(entry.name));
    if (homes.length !== 1) throw new Error(`controllers: operator ${entry.name} is in ${homes.length} Deployments, not one`);
  }
  enabledOperators(Object.values(controllers).flat());
  return Object.entries(controllers).map(([name, operators]): [string, CatalogEntry[]] =>
    [name, enabled.filter((entry) => operators.includes(entry.name))]).filter(([, operators]) => operators.length);
}

export class KeelsonInstall extends Construct {
  readonly namespace: string;
  readonly operators: CatalogEntry[];
  /** One per Deployment. */
  readonly installs: OperatorInstall[];

  constructor(scope: Construct, id: string, props: KeelsonInstallProps) {
    super(scope, id);
    const { operators, controllers, webhookAllowedDestinations, webhookRefusedDestinations, podBuggerToolAllowedProfiles,
      podBuggerToolAllowedImages, podAlertLogTails, tdsetScaleResources = [], createNamespace, image = releaseImage,
      ...settings } = props;
    this.namespace = props.namespace ?? 'keelson-system';
    this.operators = enabledOperators(operators, props.watchNamespace);
    if (createNamespace ?? true) {
      new k8s.KubeNamespace(this, 'namespace', { metadata: { name: this.namespace, labels: {
        'app.kubernetes.io/part-of': 'keelson',
        // The controllers' pods meet the restricted Pod Security Standard; say so, so it stays that way.
        'pod-security.kubernetes.io/enforce': 'restricted',
      } } });
    }
    new k8s.KubeClusterRole(this, 'metrics-reader', { metadata: { name: metricsReaderName,
      labels: { 'app.kubernetes.io/name': 'keelson', 'app.kubernetes.io/part-of': 'keelson' } },
    rules: [{ nonResourceUrLs: ['/metrics'], verbs: ['get'] }] });
    tdsetScaleResources.forEach((r, i) => checkScaleResource(r, `tdsetScaleResources[${i}]`));
    const options: Partial<ControllerOptions> = { webhookAllowedDestinations: webhookAllowedDestinations?.join(','),
      webhookRefusedDestinations: webhookRefusedDestinations?.join(','),
      podBuggerToolAllowedProfiles: podBuggerToolAllowedProfiles?.join(','),
      podBuggerToolAllowedImages: podBuggerToolAllowedImages?.join(','),
      podAlertLogTails: podAlertLogTails === false ? 'false' : undefined,
      tdsetScaleResources: tdsetScaleResources.length ? tdsetScaleResources.map(scaleResourceText).join(',') : undefined,
      // PostgreSQL members run their agent from the operator's own image.
      postgresAgentImage: imageReference(image, props.imageDigest) };
    const extraArgs = controllerArgs(options, keelsonFlags);
    // What an operator's flags add to what it declares, granted with the rest.
    const configured = (entry: CatalogEntry): CatalogEntry =>
      ({ ...entry, permissions: [...entry.permissions, ...entry.configuredPermissions?.(options) ?? []] });
    this.installs = controllersOf(this.operators, controllers).map(([name, enabled]) =>
      new OperatorInstall(this, name, { ...settings, image, name, app: 'keelson', component: name.replace(/^keelson-/, ''),
        namespace: this.namespace, createNamespace: false, operators: enabled.map(configured), extraArgs }));
  }
}
