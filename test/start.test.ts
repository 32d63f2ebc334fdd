// npm start's main job, after synth: apply the CRDs and run the operator against $KUBECONFIG until Ctrl-C.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { freshNamespace, testCluster } from './support/cluster.ts';
import { ControllerProcess } from './support/controller-process.ts';
import { repoRoot } from '../cluster/paths.ts';
import { waitFor } from '../cluster/wait.ts';

const cluster = testCluster();
let namespace: string;
let cleanup: () => Promise<void>;
before(async () => ({ name: namespace, cleanup } = await freshNamespace(cluster, 'start')));
after(() => cleanup());

it('runs the operator against $KUBECONFIG and stops cleanly on Ctrl-C', async () => {
  const started = await ControllerProcess.start(join(repoRoot, 'build/controller/start.js'), [`--namespace=${namespace}`],
    { KUBECONFIG: cluster.state.kubeconfig });
  try {
    await started.waitForLog('caches to sync', (l) => l.msg === 'caches synced; starting controllers');
    assert.match(started.stderr.join("\n"), /applied the CRDs of TDSet, PodBuggerTool, PodAlert, ClusterPodAlert, PostgresCluster/);
    const hour = new Date().getUTCHours();
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet',
      metadata: { name: 'started', namespace }, spec: { container: { image: 'registry.example/a:1', port: 80 },
        schedulingConfig: [{ startTime: hour, endTime: (hour + 2) % 24, replica: 2 }] } }) });
    await waitFor('the Deployment', async () => {
      const result = await cluster.kubectl(['get', 'deployment', 'started', '-n', namespace, '-o', 'jsonpath={.spec.replicas}'],
        { allowFailure: true });
      return result.stdout === '2';
    });
  } finally {
    started.signal('SIGINT');
  }
  assert.equal((await started.exited).code, 0);
});
