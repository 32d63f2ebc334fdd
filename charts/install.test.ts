import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { App, Chart, Testing } from 'cdk8s';
import { keelsonFlags, parseControllerFlags } from '../controller/api/flags.ts';
import { allows } from '../controller/api/permissions.ts';
import { catalog, operatorNames } from '../controller/operators/catalog.ts';
import { eventPermissions, leaderElectionPermissions } from '../controller/runtime/permissions.ts';
import { KeelsonCrds } from './crds.ts';
import { controllerName, KeelsonInstall, metricsReaderName, podControllerName, type KeelsonInstallProps } from './install.ts';
import { clusterScopedRoleName, secureMetricsPort } from './operator-install.ts';

type Manifest = { kind: string; metadata: { name: string; namespace?: string }; [key: string]: any };

/** The install with every operator in one Deployment, unless `props` split them: one controller's objects to check. */
function synth(props: Partial<KeelsonInstallProps> = {}): Manifest[] {
  const chart = new Chart(new App(), 'test');
  new KeelsonInstall(chart, 'install', { image: 'example/keelson:test', controllers: { [controllerName]: operatorNames },
    ...props });
  return Testing.synth(chart) as Manifest[];
}

const only = (manifests: Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const one = (manifests: Manifest[], kind: string) => {
  const found = only(manifests, kind);
  assert.equal(found.length, 1, `expected one ${kind}, found ${found.length}`);
  return found[0]!;
};
/** The role or binding of `kind` named `name` (the controller's own, by default). */
const named = (manifests: Manifest[], kind: string, name = controllerName) => {
  const found = manifests.filter((m) => m.kind === kind && m.metadata.name === name);
  assert.equal(found.length, 1, `expected one ${kind} ${name}, found ${found.length}`);
  return found[0]!;
};
/** What no namespace holds: Nodes, Namespaces, and the cluster-scoped kinds' objects. */
const clusterScopedResources = ['nodes', 'namespaces', 'clusterpodalerts', 'clusterpodalerts/status'];

/**
 * Every rule an account is granted cluster-wide: its ClusterRole's, and those of its ClusterRole for cluster-scoped
 * resources, which must hold nothing else.
 */
const clusterRules = (manifests: Manifest[], name = controllerName): any[] => {
  const scoped = manifests.find((m) => m.kind === 'ClusterRole' && m.metadata.name === clusterScopedRoleName(name));
  for (const rule of scoped?.rules ?? []) {
    assert.ok(rule.resources.every((r: string) => clusterScopedResources.includes(r)),
      `${JSON.stringify(rule)} in ${clusterScopedRoleName(name)}`);
  }
  return [...named(manifests, 'ClusterRole', name).rules, ...scoped?.rules ?? []];
};
const container = (manifests: Manifest[]) => one(manifests, 'Deployment').spec.template.spec.containers[0];
const argsOf = (manifests: Manifest[]) => parseControllerFlags(container(manifests).args, {}, operatorNames, keelsonFlags);

describe('KeelsonInstall', () => {
  it('puts namespaced objects in its namespace and leaves cluster-scoped ones without one', () => {
    const manifests = synth({ namespace: 'ops' });
    const clusterScoped = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    for (const m of manifests) {
      if (clusterScoped.has(m.kind)) assert.equal(m.metadata.namespace, undefined, `${m.kind} has a namespace`);
      else assert.equal(m.metadata.namespace, 'ops', `${m.kind} ${m.metadata.name} is not in ops`);
    }
    assert.equal(one(manifests, 'Namespace').metadata.name, 'ops');
    assert.equal(only(synth({ createNamespace: false }), 'Namespace').length, 0);
  });

  it('runs a hardened controller pod with probes, resources and the downward API', () => {
    const manifests = synth();
    const pod = one(manifests, 'Deployment').spec.template.spec;
    const c = container(manifests);
    assert.equal(c.image, 'example/keelson:test');
    assert.equal(pod.serviceAccountName, one(manifests, 'ServiceAccount').metadata.name);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    assert.equal(pod.securityContext.seccompProfile.type, 'RuntimeDefault');
    assert.deepEqual(c.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
      runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
    assert.equal(c.livenessProbe.httpGet.path, '/healthz');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    const healthPort = c.ports.find((p: any) => p.name === 'health').containerPort;
    assert.equal(c.livenessProbe.httpGet.port, 'health');
    assert.equal(argsOf(manifests).healthProbeBindAddress, `:${healthPort}`);
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
    assert.deepEqual(c.env.map((e: any) => [e.name, e.valueFrom.fieldRef.fieldPath]),
      [['POD_NAMESPACE', 'metadata.namespace'], ['POD_NAME', 'metadata.name']]);
    const metrics = one(manifests, 'Service');
    assert.deepEqual([metrics.spec.ports[0].targetPort, metrics.spec.ports[0].port], ['https', secureMetricsPort]);
    assert.equal(`:${metrics.spec.ports[0].port}`, argsOf(manifests).metricsBindAddress);
    assert.equal(argsOf(manifests).metricsSecure, true);
  });

  it('mounts the ServiceAccount token explicitly, where in-cluster clients read it, and not by default', () => {
    const pod = one(synth(), 'Deployment').spec.template.spec;
    assert.equal(pod.automountServiceAccountToken, false);
    const mount = pod.containers[0].volumeMounts.find((m: any) => m.name === 'service-account');
    assert.deepEqual([mount.mountPath, mount.readOnly], ['/var/run/secrets/kubernetes.io/serviceaccount', true]);
    const sources = pod.volumes.find((v: any) => v.name === 'service-account').projected.sources;
    assert.deepEqual(sources.flatMap((s: any) => s.serviceAccountToken?.path ?? (s.configMap ?? s.downwardAPI).items
      .map((i: any) => i.path)), ['token', 'ca.crt', 'namespace']);
  });

  it('admits only the metrics and health ports, unless told to leave network policy to the user', () => {
    const manifests = synth();
    const policy = one(manifests, 'NetworkPolicy');
    assert.deepEqual(policy.spec.podSelector.matchLabels, one(manifests, 'Deployment').spec.selector.matchLabels);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress']);
    assert.deepEqual(policy.spec.ingress[0].ports.map((p: any) => p.port),
      container(manifests).ports.map((p: any) => p.containerPort));
    assert.equal(only(synth({ networkPolicy: false }), 'NetworkPolicy').length, 0);
  });

  it('pins the image to a digest when given one, for the controller and the PostgreSQL agent alike', () => {
    const digest = `sha256:${'ab'.repeat(32)}`;
    const manifests = synth({ imageDigest: digest });
    assert.equal(container(manifests).image, `example/keelson:test@${digest}`);
    assert.equal(argsOf(manifests).postgresAgentImage, `example/keelson:test@${digest}`);
    assert.throws(() => synth({ imageDigest: 'sha256:abc' }), /imageDigest: "sha256:abc" is not sha256: and 64 hex digits/);
  });

  it('passes args the controller parses back into the props it was given', () => {
    const options = argsOf(synth({ operators: ['tdset'], watchNamespace: 'apps', logLevel: 'debug' }));
    assert.deepEqual(options.controllers, ['tdset']);
    assert.equal(options.namespace, 'apps');
    assert.equal(options.logLevel, 'debug');
    assert.equal(options.leaderElect, true);
    assert.deepEqual(argsOf(synth()).controllers, operatorNames);
    assert.equal(argsOf(synth()).namespace, undefined);
  });

  it('elects a leader on a Lease whatever the replica count (a rolling update runs two pods), unless told not to', () => {
    const leaseRules = [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'update'],
        resourceNames: [`${controllerName}-leader`] }];
    const single = synth();
    assert.equal(one(single, 'Deployment').spec.replicas, 1);
    assert.equal(argsOf(single).leaderElect, true);
    assert.deepEqual(one(single, 'Role').rules, leaseRules);
    assert.equal(argsOf(single).leaderElectionId, `${controllerName}-leader`);
    assert.equal(one(single, 'PodDisruptionBudget').spec.maxUnavailable, 1);

    const ha = synth({ replicas: 3 });
    assert.equal(one(ha, 'Deployment').spec.replicas, 3);
    assert.equal(argsOf(ha).leaderElect, true);
    assert.deepEqual(one(ha, 'Role').rules, leaseRules);
    assert.equal(one(ha, 'PodDisruptionBudget').spec.minAvailable, 1);
    // Unready replicas reconcile nothing: they never hold up a drain; and replicas prefer nodes of their own.
    assert.equal(one(ha, 'PodDisruptionBudget').spec.unhealthyPodEvictionPolicy, 'AlwaysAllow');
    const [preferred] = one(ha, 'Deployment').spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution;
    assert.deepEqual([preferred.podAffinityTerm.topologyKey, preferred.podAffinityTerm.labelSelector.matchLabels],
      ['kubernetes.io/hostname', one(ha, 'Deployment').spec.selector.matchLabels]);
    assert.equal(one(single, 'Deployment').spec.template.spec.affinity, undefined);

    const unelected = synth({ leaderElection: false });
    assert.equal(argsOf(unelected).leaderElect, false);
    assert.equal(only(unelected, 'Role').length, 0);
  });

  it('sets the resources and image it is given', () => {
    const c = container(synth({ image: 'registry.local:5000/keelson@sha256:abc',
      resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '1', memory: '1Gi' } } }));
    assert.equal(c.image, 'registry.local:5000/keelson@sha256:abc');
    assert.deepEqual(c.resources, { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '1', memory: '1Gi' } });
  });

  it('places and annotates its pods as told, and leaves the pod spec bare otherwise', () => {
    const placement = { nodeSelector: { 'kubernetes.io/os': 'linux' }, podAnnotations: { 'example.com/team': 'platform' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'operators', effect: 'NoSchedule' }] };
    const pod = one(synth(placement), 'Deployment').spec.template;
    assert.deepEqual(pod.metadata.annotations, placement.podAnnotations);
    assert.deepEqual(pod.spec.nodeSelector, placement.nodeSelector);
    assert.deepEqual(pod.spec.tolerations, placement.tolerations);
    const bare = one(synth(), 'Deployment').spec.template;
    assert.deepEqual([bare.metadata.annotations, bare.spec.nodeSelector, bare.spec.tolerations, bare.spec.affinity],
      [undefined, undefined, undefined, undefined]);
  });

  it('grants with a Role in the watched namespace instead of a ClusterRole', () => {
    const manifests = synth({ watchNamespace: 'apps', leaderElection: false });
    // Only what cannot be namespaced stays cluster-wide: reading Nodes, reviewing scrapers' tokens, and reading /metrics.
    assert.deepEqual(only(manifests, 'ClusterRole').map((r) => r.metadata.name),
      [metricsReaderName, clusterScopedRoleName(controllerName), `${controllerName}-metrics-auth`]);
    assert.equal(named(manifests, 'ClusterRoleBinding', clusterScopedRoleName(controllerName)).subjects[0].name, controllerName);
    assert.equal(one(manifests, 'Role').metadata.namespace, 'apps');
    assert.equal(one(manifests, 'RoleBinding').subjects[0].namespace, 'keelson-system');
  });

  it('leaves ClusterPodAlert, which one controller must own cluster-wide, out of an install watching one namespace', () => {
    const all = synth({ operators: undefined, controllers: undefined });
    const watching = synth({ operators: undefined, controllers: undefined, watchNamespace: 'apps' });
    const controllersOf = (manifests: Manifest[]) => only(manifests, 'Deployment').map((d) =>
      parseControllerFlags(d.spec.template.spec.containers[0].args, {}, operatorNames, keelsonFlags).controllers);
    assert.deepEqual(controllersOf(all)[0], ['tdset', 'podalert', 'clusterpodalert']);
    assert.deepEqual(controllersOf(watching)[0], ['tdset', 'podalert']);
    const everyRule = (manifests: Manifest[]) => JSON.stringify(manifests.filter((m) => /Role$/.test(m.kind)));
    assert.match(everyRule(all), /clusterpodalerts/);
    assert.doesNotMatch(everyRule(watching), /clusterpodalerts|"namespaces"/);
    assert.throws(() => synth({ operators: ['podalert', 'clusterpodalert'], watchNamespace: 'apps' }),
      /operators clusterpodalert reconcile cluster-scoped kinds: they run only in an install that watches every namespace/);
  });

  it('lets TDSets scale the custom resources it names, and grants nothing else for them', () => {
    const widgets = { group: 'example.com', resource: 'widgets', kind: 'Widget' };
    const manifests = synth({ tdsetScaleResources: [widgets] });
    const rules = clusterRules(manifests).filter((r) => r.apiGroups.includes('example.com'));
    assert.deepEqual(rules.map((r) => [r.resources, r.verbs]), [[['widgets'], ['get']], [['widgets/scale'], ['get', 'patch']]]);
    assert.equal(argsOf(manifests).tdsetScaleResources, 'widgets.example.com:Widget');
    assert.equal(argsOf(synth()).tdsetScaleResources, undefined);
    assert.ok(!clusterRules(synth()).some((r) => r.apiGroups.includes('example.com')));
    assert.throws(() => synth({ tdsetScaleResources: [{ ...widgets, group: 'apps' }] }),
      /tdsetScaleResources\[0\]: apps is not a custom resource's group/);
  });

  it('rejects an operator it does not know', () => {
    assert.throws(() => synth({ operators: ['tdset', 'nginx'] }), /unknown operators: nginx \(known: tdset, podbuggertool, podalert, clusterpodalert, postgrescluster, prometheusjmxexporter\)/);
  });
});

describe('KeelsonInstall\'s default Deployments', () => {
  const chart = new Chart(new App(), 'test');
  new KeelsonInstall(chart, 'install', { image: 'example/keelson:test' });
  const manifests = Testing.synth(chart) as Manifest[];
  const deployments = only(manifests, 'Deployment');
  const operatorsOf = (d: Manifest) => parseControllerFlags(d.spec.template.spec.containers[0].args, {}, operatorNames,
    keelsonFlags).controllers;

  it('runs the operators that change pods apart from the others, each with its own account, Lease and pods', () => {
    assert.deepEqual(deployments.map((d) => [d.metadata.name, operatorsOf(d)]), [[controllerName, ['tdset', 'podalert', 'clusterpodalert']],
      [podControllerName, ['podbuggertool', 'postgrescluster', 'prometheusjmxexporter']]]);
    assert.deepEqual(deployments.map((d) => d.spec.template.spec.serviceAccountName), [controllerName, podControllerName]);
    assert.deepEqual(deployments.map((d) => parseControllerFlags(d.spec.template.spec.containers[0].args, {}, operatorNames,
      keelsonFlags).leaderElectionId), [`${controllerName}-leader`, `${podControllerName}-leader`]);
    for (const [i, d] of deployments.entries()) {
      const other = deployments[1 - i]!;
      const selects = Object.entries(d.spec.selector.matchLabels as Record<string, string>)
        .every(([k, v]) => other.spec.template.metadata.labels[k] === v);
      assert.ok(!selects, `${d.metadata.name} selects ${other.metadata.name}'s pods`);
    }
    assert.equal(only(manifests, 'Namespace').length, 1);
  });

  it('grants each Deployment\'s account its own operators\' rights and none of the others\'', () => {
    for (const d of deployments) {
      const mine = catalog.filter((e) => operatorsOf(d).includes(e.name));
      const declared = [...mine.flatMap((e) => e.permissions), ...eventPermissions];
      const rules = clusterRules(manifests, d.metadata.name);
      const granted = (group: string, resource: string, verb: string) =>
        rules.some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
      for (const p of declared) for (const verb of p.verbs) assert.ok(granted(p.group, p.resource, verb));
      for (const p of catalog.filter((e) => !mine.includes(e)).flatMap((e) => e.permissions)) {
        for (const verb of p.verbs.filter((v) => !allows(declared, p.group, p.resource, v))) {
          assert.ok(!granted(p.group, p.resource, verb), `${d.metadata.name} may ${verb} ${p.group}/${p.resource}`);
        }
      }
      const binding = named(manifests, 'ClusterRoleBinding', d.metadata.name);
      assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: d.metadata.name, namespace: 'keelson-system' }]);
    }
    const tdsetSide = named(manifests, 'ClusterRole', controllerName).rules as any[];
    assert.ok(!tdsetSide.some((r) => r.resources.some((res: string) => ['pods/exec', 'pods/ephemeralcontainers'].includes(res) ||
      (res === 'pods' && r.verbs.includes('create')))), 'the TDSet and PodAlert account may exec, debug or run pods');
  });

  it('lets scrapers bound to the metrics reader read /metrics, each controller checking them itself', () => {
    assert.deepEqual(named(manifests, 'ClusterRole', metricsReaderName).rules, [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    for (const d of deployments) {
      const auth = named(manifests, 'ClusterRole', `${d.metadata.name}-metrics-auth`);
      assert.deepEqual(auth.rules.map((r: any) => r.resources).flat().sort(), ['subjectaccessreviews', 'tokenreviews']);
      assert.equal(named(manifests, 'ClusterRoleBinding', `${d.metadata.name}-metrics-auth`).subjects[0].name, d.metadata.name);
    }
  });

  it('refuses Deployments that leave an operator out or run one twice', () => {
    const split = (controllers: Record<string, string[]>) => () =>
      new KeelsonInstall(new Chart(new App(), 'bad'), 'install', { image: 'x', controllers });
    assert.throws(split({ a: ['tdset'] }), /operator podbuggertool is in 0 Deployments, not one/);
    assert.throws(split({ a: operatorNames, b: ['tdset'] }), /operator tdset is in 2 Deployments, not one/);
  });
});

describe('synthesized RBAC', () => {
  for (const entry of [undefined, ...catalog.map((e) => e.name)]) {
    const label = entry ?? 'every operator';
    it(`grants ${label} exactly what it declares, without wildcards`, () => {
      const operators = entry ? [entry] : undefined;
      const declared = [...catalog.filter((e) => !entry || e.name === entry).flatMap((e) => e.permissions),
        ...eventPermissions];
      const rules = clusterRules(synth(operators ? { operators } : {}));
      const granted = new Set<string>();
      for (const rule of rules) {
        assert.equal(rule.resourceNames, undefined);
        assert.equal(rule.nonResourceURLs, undefined);
        for (const group of rule.apiGroups) for (const resource of rule.resources) for (const verb of rule.verbs) {
          assert.ok(![group, resource, verb].includes('*'), `wildcard in ${JSON.stringify(rule)}`);
          assert.ok(allows(declared, group, resource, verb), `${verb} ${group}/${resource} was never declared`);
          granted.add(`${group}/${resource}/${verb}`);
        }
      }
      for (const p of declared) for (const verb of p.verbs) {
        assert.ok(granted.has(`${p.group}/${p.resource}/${verb}`), `declared ${verb} ${p.group}/${p.resource} not granted`);
      }
    });
  }

  it('keeps leader election out of the cluster-wide role (leases there are PostgresCluster\'s own)', () => {
    const operators = catalog.map((e) => e.name).filter((name) => name !== 'postgrescluster');
    const rules = named(synth({ replicas: 2, operators }), 'ClusterRole').rules as any[];
    for (const p of leaderElectionPermissions) {
      assert.ok(!rules.some((r) => r.apiGroups.includes(p.group) && r.resources.includes(p.resource)));
    }
  });
});

describe('KeelsonCrds', () => {
  it('defines every kind of the API by default, or the kinds of the operators given, cluster-scoped', () => {
    const crdsOf = (operators?: string[]) => {
      const chart = new Chart(new App(), 'crds');
      new KeelsonCrds(chart, 'crds', operators ? { operators } : {});
      return Testing.synth(chart) as Manifest[];
    };
    const only = (kind: string, manifests: Manifest[]) => manifests.filter((m) => m.kind === kind);
    assert.deepEqual(crdsOf(['tdset']).map((c) => `${c.kind} ${c.metadata.name}`), ['CustomResourceDefinition tdsets.keelson.dev',
      'ValidatingAdmissionPolicy tdsets.keelson.dev-requester', 'ValidatingAdmissionPolicyBinding tdsets.keelson.dev-requester']);
    const crds = only('CustomResourceDefinition', crdsOf());
    assert.deepEqual(crds.map((c) => c.metadata.name), ['tdsets.keelson.dev', 'podbuggertools.keelson.dev',
      'podalerts.keelson.dev', 'clusterpodalerts.keelson.dev', 'postgresclusters.keelson.dev',
      'prometheusjmxexporters.keelson.dev']);
    assert.deepEqual(crds.map((c) => c.spec.scope), ['Namespaced', 'Namespaced', 'Namespaced', 'Cluster', 'Namespaced',
      'Namespaced']);
    for (const crd of crds) {
      assert.equal(crd.metadata.namespace, undefined);
      // `kubectl delete keelson --all -n shop` must not reach cluster-scoped objects.
      assert.deepEqual(crd.spec.names.categories, [crd.spec.scope === 'Cluster' ? 'keelson-cluster' : 'keelson']);
      assert.deepEqual(crd.spec.versions[0].subresources, { status: {} });
    }
  });
});
