// The Helm chart in dist/helm/keelson, through a real helm (pinned, built from its Go module): it lints, renders
// dist/ with the default values, renders for every value what KeelsonInstall renders for the prop it stands for,
// and refuses bad values before anything reaches a cluster.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { App, Chart, Yaml } from 'cdk8s';
import { repoRoot } from '../cluster/paths.ts';
import { goTool } from '../test/support/tools.ts';
import { KeelsonInstall, type KeelsonInstallProps } from './install.ts';

const run = promisify(execFile);
const chartDir = join(repoRoot, 'dist/helm/keelson');
let helm: string;
let scratch: string;

before(async () => {
  helm = await goTool('helm');
  scratch = await mkdtemp(join(tmpdir(), 'keelson-helm-'));
});
after(() => rm(scratch, { recursive: true, force: true }));

/** Objects in a stable order, whatever order helm installs them in. */
const sorted = (objects: any[]) => objects.filter(Boolean).sort((a, b) =>
  `${a.kind}/${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.kind}/${b.metadata.namespace}/${b.metadata.name}`));

const isPolicy = (o: any) => o.kind.startsWith('ValidatingAdmissionPolicy');

/** What helm renders with `values`, the kinds' admission policies (the same whatever the values) aside. */
async function template(values: object = {}): Promise<any[]> {
  return (await templateAll(values)).filter((o) => !isPolicy(o));
}

async function templateAll(values: object = {}): Promise<any[]> {
  const valuesFile = join(scratch, `values-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(valuesFile, JSON.stringify(values));
  const { stdout } = await run(helm, ['template', 'keelson', chartDir, '-f', valuesFile]);
  const rendered = `${valuesFile}.yaml`;
  await writeFile(rendered, stdout);
  return sorted(Yaml.load(rendered));
}

function synthesize(props: Partial<KeelsonInstallProps>): any[] {
  const chart = new Chart(new App(), 'keelson');
  new KeelsonInstall(chart, 'install', props);
  return sorted(chart.toJson());
}

describe('the Helm chart', () => {
  it('passes helm lint --strict', async () => {
    const { stdout } = await run(helm, ['lint', '--strict', chartDir]);
    assert.match(stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  });

  it('renders dist/ with its default values', async () => {
    assert.deepEqual(await template(), sorted(Yaml.load(join(repoRoot, 'dist/0001-keelson.k8s.yaml'))));
  });

  it('renders the kinds\' admission policies as dist/ has them beside the CRDs, unless told they are there already', async () => {
    const policies = sorted(Yaml.load(join(repoRoot, 'dist/0000-keelson-crds.k8s.yaml'))).filter(isPolicy);
    assert.equal(policies.length, 12);
    assert.deepEqual((await templateAll()).filter(isPolicy), policies);
    assert.deepEqual((await templateAll({ admissionPolicies: false })).filter(isPolicy), []);
  });

  const tdsetScaleResources = [{ group: 'example.com', resource: 'widgets', kind: 'Widget' },
    { group: 'argoproj.io', resource: 'rollouts', kind: 'Rollout' }, { group: 'example.com', resource: 'gadgets', kind: 'Gadget' }];
  const digest = `sha256:${'ab'.repeat(32)}`;
  const placement = {
    nodeSelector: { 'kubernetes.io/os': 'linux' },
    tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'operators', effect: 'NoSchedule' }],
    affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [
      { matchExpressions: [{ key: 'kubernetes.io/arch', operator: 'In', values: ['amd64'] }] }] } } },
    podAnnotations: { 'example.com/team': 'platform' },
  };
  const cases: { name: string; values: object; props: Partial<KeelsonInstallProps> }[] = [
    { name: 'one namespace watched, two operators, two replicas, debug logs',
      values: { watchNamespace: 'apps', operators: ['tdset', 'podalert'], replicas: 2, logLevel: 'debug' },
      props: { watchNamespace: 'apps', operators: ['tdset', 'podalert'], replicas: 2, logLevel: 'debug' } },
    // ClusterPodAlert, on by default, is left out of an install watching one namespace.
    { name: 'one namespace watched, every operator', values: { watchNamespace: 'apps' }, props: { watchNamespace: 'apps' } },
    { name: 'an image of your own, pinned, pulled always',
      values: { image: { repository: 'registry.example/keelson', tag: '9.9.9', digest, pullPolicy: 'Always' } },
      props: { image: 'registry.example/keelson:9.9.9', imageDigest: digest, imagePullPolicy: 'Always' } },
    { name: 'another namespace, not created, no NetworkPolicy, webhooks limited',
      values: { namespace: 'ops', createNamespace: false, networkPolicy: false, webhookAllowedDestinations: ['hooks.example', '10.0.0.0/8'] },
      props: { namespace: 'ops', createNamespace: false, networkPolicy: false, webhookAllowedDestinations: ['hooks.example', '10.0.0.0/8'] } },
    { name: 'debug profiles and images limited, no log tails',
      values: { podBuggerToolAllowedProfiles: ['restricted'], podBuggerToolAllowedImages: ['registry.corp/debug/'],
        podAlertLogTails: false },
      props: { podBuggerToolAllowedProfiles: ['restricted'], podBuggerToolAllowedImages: ['registry.corp/debug/'],
        podAlertLogTails: false } },
    { name: 'pull secrets, priority, pod labels, account annotations, spread over zones, two replicas',
      values: { imagePullSecrets: ['regcred'], priorityClassName: 'platform-critical', podLabels: { team: 'platform' },
        serviceAccountAnnotations: { 'iam.example.com/role': 'keelson' }, replicas: 2, topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }] },
      props: { imagePullSecrets: ['regcred'], priorityClassName: 'platform-critical', podLabels: { team: 'platform' },
        serviceAccountAnnotations: { 'iam.example.com/role': 'keelson' }, replicas: 2, topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }] } },
    { name: 'resources and placement',
      values: { resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } }, ...placement },
      props: { resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { cpu: '1', memory: '1Gi' } }, ...placement } },
    // Their rules go in among TDSet's own, argoproj.io's before autoscaling's and example.com's (one rule per verbs) after.
    { name: 'TDSets scale custom resources of two groups', values: { tdsetScaleResources }, props: { tdsetScaleResources } },
    { name: 'one namespace watched, TDSets scale a custom resource',
      values: { watchNamespace: 'apps', operators: ['tdset'], tdsetScaleResources: tdsetScaleResources.slice(0, 1) },
      props: { watchNamespace: 'apps', operators: ['tdset'], tdsetScaleResources: tdsetScaleResources.slice(0, 1) } },
    { name: 'scale resources named, TDSet not run', values: { operators: ['podalert', 'postgrescluster'], tdsetScaleResources },
      props: { operators: ['podalert', 'postgrescluster'], tdsetScaleResources } },
  ];
  for (const { name, values, props } of cases) {
    it(`renders what KeelsonInstall synthesizes: ${name}`, async () => {
      assert.deepEqual(await template(values), synthesize(props));
    });
  }

  it('leaves the release\'s own namespace to helm install --create-namespace', async () => {
    const namespaces = async (...args: string[]) => (await run(helm, ['template', 'keelson', chartDir, ...args])).stdout
      .split('\n---').filter((doc) => /^kind: Namespace$/m.test(doc)).length;
    assert.equal(await namespaces('--namespace', 'keelson-system'), 0);
    assert.equal(await namespaces('--namespace', 'ops', '--set', 'namespace='), 0);
    assert.equal(await namespaces('--namespace', 'ops'), 1);
  });

  it('takes the release\'s namespace when namespace is empty', async () => {
    const { stdout } = await run(helm, ['template', 'keelson', chartDir, '--namespace', 'team-a', '--set', 'namespace=',
      '--set', 'createNamespace=false']);
    assert.match(stdout, /namespace: team-a/);
    assert.doesNotMatch(stdout, /keelson-system/);
  });

  it('refuses values the schema rules out, saying which and why', async () => {
    for (const [set, message] of [
      ['operators={tdset,nginx}', /\/operators\/1.*must be one of 'tdset'/],
      ['image.digest=sha256:abc', /\/image\/digest.*does not match pattern/],
      ['replicas=0', /\/replicas.*minimum/],
      ['logLevel=verbose', /\/logLevel.*must be one of/],
      ['watchNamespaces=apps', /additional properties 'watchNamespaces' not allowed/],
      ['tdsetScaleResources[0].group=example,tdsetScaleResources[0].resource=widgets,tdsetScaleResources[0].kind=Widget',
        /\/tdsetScaleResources\/0\/group.*does not match pattern/],
      ['tdsetScaleResources[0].group=keelson.dev,tdsetScaleResources[0].resource=widgets,tdsetScaleResources[0].kind=Widget',
        /\/tdsetScaleResources\/0\/group.*'not' failed/],
      ['tdsetScaleResources[0].group=example.com,tdsetScaleResources[0].resource=widgets', /missing propert.*'kind'/],
    ] as const) {
      const result = await run(helm, ['template', 'keelson', chartDir, '--set', set]).catch((error) => error);
      assert.ok(result.code > 0, `${set} was accepted`);
      assert.match(result.stderr, message);
    }
  });
});
