import assert from 'node:assert/strict';
import { it } from 'node:test';
import { project, projectionOf } from './projection.ts';

const pod = {
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'web-0', namespace: 'shop', labels: { app: 'web' }, resourceVersion: '7' },
  spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'app:1', env: [{ name: 'A', value: 'b' }] },
    { name: 'sidecar', image: 'proxy:2' }] },
  status: { phase: 'Running', podIP: '10.0.0.7',
    containerStatuses: [{ name: 'app', imageID: 'sha256:aa', restartCount: 3, state: { running: { startedAt: 't' } } }] },
};

it('keeps the declared fields, through lists item by item, and the identity always', () => {
  const kept = project(pod, projectionOf(['spec.containers.name', 'status.phase', 'status.containerStatuses.state']));
  assert.deepEqual(kept, {
    apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata,
    spec: { containers: [{ name: 'app' }, { name: 'sidecar' }] },
    status: { phase: 'Running', containerStatuses: [{ state: { running: { startedAt: 't' } } }] },
  });
  assert.equal(pod.spec.containers[0]!.image, 'app:1', 'the object read from the API is left as it was');
});

it('unites paths: a field kept whole stays whole whichever order the readers declared it in', () => {
  for (const paths of [['spec', 'spec.containers.name'], ['spec.containers.name', 'spec']]) {
    assert.deepEqual(project(pod, projectionOf(paths)).spec, pod.spec);
  }
});

it('adds no field the object lacks, and refuses a path with an empty field', () => {
  assert.deepEqual(project(pod, projectionOf(['status.reason', 'spec.volumes.name'])),
    { apiVersion: 'v1', kind: 'Pod', metadata: pod.metadata, spec: {}, status: {} });
  assert.throws(() => projectionOf(['status..phase']), /empty field name/);
});
