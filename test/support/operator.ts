// The real controller (build/controller/main.js; the image runs it bundled, as install.serial.test shows) as the
// install runs it: a KeelsonInstall synthesized for one test namespace provides the ServiceAccount, the RBAC (applied
// as synthesized, or with a rule left out) and the Deployment's args; the process authenticates with that
// ServiceAccount's token.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { App, Chart, Testing } from 'cdk8s';
import { controllerName, KeelsonInstall, metricsReaderName, type KeelsonInstallProps } from '../../charts/install.ts';
import { operatorNames } from '../../controller/operators/catalog.ts';
import { clusterScopedRoleName } from '../../charts/operator-install.ts';
import type { LocalCluster } from '../../cluster/cluster.ts';
import { ControllerProcess } from './controller-process.ts';
import { freshNamespace, testNamespaceLabel } from './cluster.ts';
import { repoRoot } from '../../cluster/paths.ts';

type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: any };

export interface InstalledOperator {
  manifests: Manifest[];
  /** The rules of the synthesized Role, then of its ClusterRole for cluster-scoped resources, in order. */
  rules: object[];
  args: string[];
}

/**
 * The install of `operators`, in one Deployment whatever they are, with the controller in `namespace`, watching only
 * that namespace, or every namespace as the default install does (RBAC then a ClusterRole). Metrics are plain HTTP on
 * loopback, which tests read; secure metrics have tests of their own.
 */
export function synthesizeInstall(namespace: string, operators: string[],
  { allNamespaces = false, props = {} }: { allNamespaces?: boolean; props?: Partial<KeelsonInstallProps> } = {}): InstalledOperator {
  const chart = new Chart(new App(), 'install');
  // One process per test: nothing to elect. The image is the one the build names, which member agents run from.
  // Tests' webhook receivers listen on loopback, which the default refuses (a later flag in extraArgs wins).
  new KeelsonInstall(chart, 'install', { namespace, createNamespace: false,
    watchNamespace: allNamespaces ? undefined : namespace, operators, leaderElection: false, metricsSecure: false,
    controllers: { [controllerName]: operatorNames }, webhookAllowedDestinations: ['127.0.0.1'], ...props });
  const manifests = Testing.synth(chart) as Manifest[];
  const deployment = manifests.find((m) => m.kind === 'Deployment')!;
  const args = (deployment.spec.template.spec.containers[0].args as string[])
    .filter((a) => !a.startsWith('--metrics-bind-address') && !a.startsWith('--health-probe-bind-address'));
  return { manifests, rules: manifests.filter(isControllerRole).flatMap((m) => m.rules ?? []), args };
}

const rbacKinds = ['ServiceAccount', 'Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'];
const isControllerRole = (m: Manifest) => (m.kind === 'Role' || m.kind === 'ClusterRole') &&
  [controllerName, clusterScopedRoleName(controllerName)].includes(m.metadata.name);

/**
 * The install's RBAC less the rule at `omitRule` (counted as InstalledOperator's rules are), its cluster-wide roles
 * and bindings named for the namespace: tests of other namespaces apply their own at the same time, and runs one
 * after another must not be granted a moment by the last one's rules, still cached.
 */
function rbacOf(install: InstalledOperator, namespace: string, omitRule?: number): Manifest[] {
  let index = 0;
  const clusterWide = (kind: string) => kind === 'ClusterRole' || kind === 'ClusterRoleBinding';
  const ours = (name: string) => `${name}-${namespace}`;
  return install.manifests.filter((m) => rbacKinds.includes(m.kind) && m.metadata.name !== metricsReaderName).map((m) => {
    const kept = isControllerRole(m) ? { ...m, rules: (m.rules ?? []).filter(() => index++ !== omitRule) } : m;
    if (!clusterWide(m.kind)) return kept;
    return { ...kept, metadata: { ...kept.metadata, name: ours(kept.metadata.name),
      labels: { ...(kept.metadata as { labels?: object }).labels, [testNamespaceLabel]: namespace } },
      ...kept.roleRef ? { roleRef: { ...kept.roleRef, name: ours(kept.roleRef.name) } } : {} };
  });
}

/**
 * Applies the install's ServiceAccount and RBAC (less the rule at `omitRule`, if given) and starts the controller
 * as that ServiceAccount with the Deployment's args, serving metrics and health on loopback.
 */
export async function startOperator(cluster: LocalCluster, namespace: string, operators: string[], scratch: string,
  { omitRule, allNamespaces, extraArgs = [], props }: { omitRule?: number; allNamespaces?: boolean; extraArgs?: string[];
    props?: Partial<KeelsonInstallProps> } = {}): Promise<ControllerProcess> {
  const install = synthesizeInstall(namespace, operators, { allNamespaces, props });
  const rbac = rbacOf(install, namespace, omitRule);
  await cluster.kubectl(['apply', '--server-side', '-f', '-'],
    { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: rbac }) });
  const account = install.manifests.find((m) => m.kind === 'ServiceAccount')!.metadata.name;
  const kubeconfig = await cluster.serviceAccountKubeconfig(namespace, account, join(scratch, `${namespace}.kubeconfig`));
  return ControllerProcess.start(join(repoRoot, 'build/controller/main.js'), [...install.args, ...extraArgs, `--kubeconfig=${kubeconfig}`],
    { POD_NAMESPACE: namespace, POD_NAME: `${account}-test` });
}

/** Applies the CRDs as `dist/` has them and waits until they are served. */
export async function installCrds(cluster: LocalCluster): Promise<void> {
  await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'dist/0000-keelson-crds.k8s.yaml')]);
  await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=keelson']);
}

/**
 * A test file's operator: run as its install's ServiceAccount over a fresh namespace of its own (prepared first, as
 * `prepare` says), from the file's `before` to its `after`.
 */
export function operatorInFreshNamespace(cluster: LocalCluster, prefix: string, operators: string[],
  { prepare, props }: { prepare?: (namespace: string) => Promise<void>; props?: Partial<KeelsonInstallProps> } = {}):
{ namespace: string; controller: ControllerProcess } {
  const run = {} as { namespace: string; controller: ControllerProcess };
  let scratch: string | undefined;
  let cleanup = async () => {};
  before(async () => {
    const fresh = await freshNamespace(cluster, prefix);
    [run.namespace, cleanup] = [fresh.name, fresh.cleanup];
    await prepare?.(fresh.name);
    scratch = await mkdtemp(join(tmpdir(), `keelson-${prefix}-`));
    await installCrds(cluster);
    run.controller = await startOperator(cluster, fresh.name, operators, scratch, { props });
  });
  after(async () => {
    // While the controller runs, which takes their finalizers off: nothing is left to hold the namespace.
    if (run.controller) {
      await cluster.kubectl(['delete', '-n', run.namespace, 'keelson', '--all', '--timeout=60s'], { allowFailure: true });
    }
    await run.controller?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
    await cleanup();
  });
  return run;
}
