// `node build/bench/freeze.js`: what freezing a cached object costs, once when the informer stores it, beside what
// the informer already pays to parse it from the watch, and what copying it would cost on every read instead
// (controller-runtime's DeepCopy on Get). A pod as a Deployment makes it, scheduled and running.
import { deepFreeze } from '../controller/runtime/freeze.ts';

function pod(i: number): unknown {
  const container = (name: string) => ({ name, image: `registry.example/${name}:1.2.3`, ports: [{ containerPort: 8080,
    protocol: 'TCP' }], env: [{ name: 'MODE', value: 'production' }, { name: 'POD', valueFrom: { fieldRef: {
    fieldPath: 'metadata.name' } } }], resources: { requests: { cpu: '100m', memory: '128Mi' } },
  volumeMounts: [{ name: 'token', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }],
  readinessProbe: { httpGet: { path: '/ready', port: 8080 }, periodSeconds: 10 } });
  const status = (name: string) => ({ name, ready: true, restartCount: 0, image: `registry.example/${name}:1.2.3`,
    imageID: `registry.example/${name}@sha256:${'ab'.repeat(32)}`, containerID: `containerd://${'cd'.repeat(32)}`,
    started: true, state: { running: { startedAt: '2026-11-23T10:00:00Z' } } });
  return {
    metadata: { name: `web-7d9f8c6b5-${i}`, generateName: 'web-7d9f8c6b5-', namespace: 'shop', uid: `uid-${i}`,
      resourceVersion: String(1000 + i), creationTimestamp: '2026-11-23T10:00:00Z',
      labels: { app: 'web', 'pod-template-hash': '7d9f8c6b5' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8c6b5', uid: 'rs', controller: true,
        blockOwnerDeletion: true }] },
    spec: { containers: [container('web'), container('sidecar')], nodeName: 'node-1', serviceAccountName: 'default',
      volumes: [{ name: 'token', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3607 } }] } }],
      tolerations: ['not-ready', 'unreachable'].map((t) => ({ key: `node.kubernetes.io/${t}`, operator: 'Exists',
        effect: 'NoExecute', tolerationSeconds: 300 })) },
    status: { phase: 'Running', podIP: '10.0.0.1', hostIP: '10.250.0.2', startTime: '2026-11-23T10:00:00Z',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) =>
        ({ type, status: 'True', lastTransitionTime: '2026-11-23T10:00:01Z' })),
      containerStatuses: [status('web'), status('sidecar')] },
  };
}

const count = 20_000;
const texts = Array.from({ length: count }, (_, i) => JSON.stringify(pod(i)));
const time = (work: () => void) => {
  const started = process.hrtime.bigint();
  work();
  return Number(process.hrtime.bigint() - started) / 1000 / count;
};
for (let round = 1; round <= 3; round++) {
  let parsed: unknown[] = [];
  const parse = time(() => (parsed = texts.map((text) => JSON.parse(text))));
  const copy = time(() => parsed.forEach((object) => structuredClone(object)));
  const freeze = time(() => parsed.forEach((object) => deepFreeze(object)));
  console.log(`round ${round}: ${count} pods of ${texts[0]!.length} bytes: parse ${parse.toFixed(1)} µs, ` +
    `freeze ${freeze.toFixed(1)} µs once (${((freeze / parse) * 100).toFixed(0)}% of parsing), ` +
    `a copy ${copy.toFixed(1)} µs per read`);
}
