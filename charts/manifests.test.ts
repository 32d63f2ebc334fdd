import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadAllYaml } from '@kubernetes/client-node';
import { freshNamespace, testCluster } from '../test/support/cluster.ts';
import { repoRoot } from '../cluster/paths.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
let samples: Record<string, any>;

before(async () => {
  ({ name: namespace, cleanup } = await freshNamespace(cluster, 'manifests'));
  const text = await readFile(join(repoRoot, 'dist/samples/keelson-samples.k8s.yaml'), 'utf8');
  samples = Object.fromEntries((loadAllYaml(text) as any[]).filter((o) => o.apiVersion.startsWith('keelson.dev/'))
    .map((o) => [o.kind, o]));
});
after(() => cleanup());

/** The sample of `kind` in the test namespace, with `change` applied to a copy of its spec. */
function variant(kind: string, change: (spec: any) => void, name = 'variant'): string {
  const object = structuredClone(samples[kind]);
  object.metadata = { name, namespace };
  change(object.spec);
  return JSON.stringify(object);
}

async function rejection(manifest: string): Promise<string> {
  const result = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: manifest, allowFailure: true });
  assert.notEqual(result.code, 0, `accepted: ${manifest}`);
  return result.stderr;
}

describe('dist/ on a real apiserver', () => {
  before(async () => {
    // The CRDs only: the install's controller would watch every namespace, other tests' included (the serial
    // install test runs it alone).
    await cluster.kubectl(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'dist/0000-keelson-crds.k8s.yaml')]);
  });

  it('establishes every CRD and answers kubectl get keelson', async () => {
    const crds = ['tdsets', 'podbuggertools', 'podalerts', 'clusterpodalerts', 'postgresclusters', 'prometheusjmxexporters'];
    await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=30s',
      ...crds.map((c) => `crd/${c}.keelson.dev`)]);
    await waitFor('kubectl get keelson to answer', async () =>
      (await cluster.kubectl(['get', 'keelson', '-n', namespace], { allowFailure: true })).code === 0);
  });

  it('explains nested fields', async () => {
    // The apiserver publishes a new CRD's OpenAPI shortly after the CRD is Established.
    const explain = (path: string) => waitFor(`kubectl explain ${path}`, async () => {
      const result = await cluster.kubectl(['explain', path], { allowFailure: true });
      return result.code === 0 ? result.stdout : undefined;
    });
    const start = await explain('tdset.spec.schedulingConfig.startTime');
    assert.match(start, /The hour the window opens, 0-23, in spec\.timeZone/);
    const secret = await explain('podalert.spec.webhook.secretRef');
    assert.match(secret, /Where the webhook URL is kept: never in the spec, logs or status/);
    assert.match(secret, /key\s+<string> -required-/);
    const clusterSecret = await explain('clusterpodalert.spec.webhook.secretRef');
    assert.match(clusterSecret, /namespace\s+<string> -required-\n\s+The Secret's namespace/);
    assert.match(await explain('clusterpodalert'), /creating one takes list on pods, and get on\s+pods\/log, in every namespace/);
  });

  it('accepts every sample and shows it with its printer columns', async () => {
    // The ClusterPodAlert of a name of this test's own, deleted after: others' tests run controllers of the kind.
    const objects = Object.values(samples).map((o) => ({ ...o, metadata: o.kind === 'ClusterPodAlert'
      ? { name: namespace } : { ...o.metadata, namespace } }));
    assert.equal(objects.length, 6);
    try {
      await cluster.kubectl(['apply', '--server-side', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
      });
      const cpa = (await cluster.kubectl(['get', 'cpa', namespace])).stdout;
      assert.match(cpa.split('\n')[0]!, /^NAME\s+UNHEALTHY\s+ALERTS\s+CHECKED\s+READY\s+AGE$/);
    } finally {
      await cluster.kubectl(['delete', 'cpa', namespace, '--ignore-not-found']);
    }
    const tds = (await cluster.kubectl(['get', 'tds', '-n', namespace])).stdout;
    assert.match(tds.split('\n')[0]!, /^NAME\s+TARGET\s+REPLICAS\s+WINDOW\s+NEXT\s+READY\s+AGE$/);
    const pgc = (await cluster.kubectl(['get', 'pgc', '-n', namespace])).stdout;
    assert.match(pgc, /orders-db\s+3\s/);
  });

  const malformed: [kind: string, what: string, change: (spec: any) => void, message: RegExp][] = [
    ['TDSet', 'a port of the wrong type', (s) => { s.container.port = 'eighty'; },
      /spec\.container\.port: Invalid value: "string": spec\.container\.port in body must be of type integer/],
    ['TDSet', 'an hour past 23', (s) => { s.schedulingConfig[0].startTime = 24; },
      /spec\.schedulingConfig\[0\]\.startTime: Invalid value: 24: .*less than or equal to 23/],
    ['TDSet', 'negative replicas', (s) => { s.schedulingConfig[1].replica = -1; },
      /spec\.schedulingConfig\[1\]\.replica: Invalid value: -1: .*greater than or equal to 0/],
    ['TDSet', 'a window of zero length', (s) => { s.schedulingConfig[0].endTime = s.schedulingConfig[0].startTime; },
      /spec\.schedulingConfig\[0\]\.endTime: Invalid value: .*startTime and endTime must differ/],
    ['TDSet', 'no image', (s) => { delete s.container.image; }, /spec\.container\.image: Required value/],
    ['TDSet', 'a negative defaultReplica', (s) => { s.defaultReplica = -1; },
      /spec\.defaultReplica: Invalid value: -1: .*greater than or equal to 0/],
    ['TDSet', 'a container and a scaleTargetRef', (s) => { s.scaleTargetRef = { apiVersion: 'apps/v1', kind: 'Deployment',
      name: 'web' }; delete s.service; }, /give exactly one of spec.container, spec.template and spec.scaleTargetRef/],
    ['PodBuggerTool', 'a label without a value', (s) => { s.label = 'app'; },
      /spec\.label: Invalid value: "app": spec\.label in body should match/],
    ['PodBuggerTool', 'both label and selector', (s) => { s.selector = { matchLabels: { app: 'x' } }; },
      /spec: Invalid value: .*exactly one of spec\.label and spec\.selector must be set/],
    ['PodBuggerTool', 'neither label nor selector', (s) => { delete s.label; },
      /spec: Invalid value: .*exactly one of spec\.label and spec\.selector must be set/],
    ['PodBuggerTool', 'an In requirement without values', (s) => {
      delete s.label; s.selector = { matchExpressions: [{ key: 'app', operator: 'In' }] };
    }, /spec\.selector\.matchExpressions\[0\]\.values: Invalid value: .*In and NotIn need at least one value/],
    ['PodBuggerTool', 'an empty selector', (s) => { delete s.label; s.selector = {}; },
      /spec\.selector: Invalid value: .*a selector needs at least one of matchLabels or matchExpressions/],
    ['PodBuggerTool', 'no image', (s) => { delete s.image; }, /spec\.image: Required value/],
    ['PodBuggerTool', 'an unknown profile', (s) => { s.profile = 'root'; },
      /spec\.profile: Unsupported value: "root": supported values: "general", "baseline"/],
    ['PodAlert', 'no checkRunningPods', (s) => { s.alerts = {}; }, /spec\.alerts\.checkRunningPods: Required value/],
    ['PodAlert', 'more than 200 log lines', (s) => { s.logLines = 500; },
      /spec\.logLines: Invalid value: 500: .*less than or equal to 200/],
    ['PodAlert', 'a grace period of the wrong type', (s) => { s.gracePeriodSeconds = 'soon'; },
      /spec\.gracePeriodSeconds: Invalid value: "string": .*must be of type integer/],
    ['PodAlert', 'a secretRef without a key', (s) => { s.webhook = { secretRef: { name: 'hook' } }; },
      /spec\.webhook\.secretRef\.key: Required value/],
    ['PodAlert', 'both url and urls for Alertmanager', (s) => { s.alertmanager = { url: 'http://am:9093', urls: ['http://am-0:9093'] }; },
      /spec\.alertmanager: Invalid value: .*set url, or urls for every replica of an Alertmanager cluster, not both/],
    ['PodAlert', 'an Alertmanager replica twice', (s) => { s.alertmanager = { urls: ['http://am-0:9093', 'http://am-0:9093'] }; },
      /spec\.alertmanager\.urls\[1\]: Duplicate value: "http:\/\/am-0:9093"/],
    ['PostgresCluster', 'ten members', (s) => { s.size = 10; }, /spec\.size: Invalid value: 10: .*less than or equal to 9/],
    ['PostgresCluster', 'a version that is not a number', (s) => { s.version = 'latest'; },
      /spec\.version: Invalid value: "latest": spec\.version in body should match/],
    ['PostgresCluster', 'a malformed backup schedule', (s) => { s.backup.schedule = 'nightly'; },
      /spec\.backup\.schedule: Invalid value: "nightly"/],
    ['PostgresCluster', 'no size', (s) => { delete s.size; }, /spec\.size: Required value/],
    ['PrometheusJmxExporter', 'an empty selector', (s) => { s.labelSelector = {}; },
      /spec\.labelSelector: Invalid value: .*should have at least 1 properties/],
    ['PrometheusJmxExporter', 'a port out of range', (s) => { s.port = 70000; },
      /spec\.port: Invalid value: 70000: .*less than or equal to 65535/],
    ['PrometheusJmxExporter', 'no config key', (s) => { delete s.config.configMapKey; },
      /spec\.config\.configMapKey: Required value/],
  ];
  for (const [kind, what, change, message] of malformed) {
    it(`rejects a ${kind} with ${what}, naming the field`, async () => {
      assert.match(await rejection(variant(kind, change)), message);
    });
  }

  it('rejects a PostgresCluster major-version downgrade on update', async () => {
    await cluster.kubectl(['create', '-f', '-'], { input: variant('PostgresCluster', () => {}, 'downgrade') });
    const result = await cluster.kubectl(['patch', 'pgc', 'downgrade', '-n', namespace, '--type=merge',
      '-p', '{"spec":{"version":"14"}}'], { allowFailure: true });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /spec\.version: Invalid value: .*the PostgreSQL major version cannot go down/);
    await cluster.kubectl(['patch', 'pgc', 'downgrade', '-n', namespace, '--type=merge', '-p', '{"spec":{"version":"15.2"}}']);
  });
});
