import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentOptions, parseInspection } from './container.ts';
import type { Pod } from '../../runtime/core.ts';
import { configDigest, markAnnotations, planPod, type InjectionRecord } from './plan.ts';

const config = 'rules:\n- pattern: ".*"\n';
const wanted = { exporter: 'orders', port: 9404, config };

function pod(containerID: string | undefined, record?: Partial<InjectionRecord>, phase = 'Running'): Pod {
  const base: InjectionRecord = { exporter: 'orders', container: 'app', containerID: 'containerd://a', port: 9404,
    config: configDigest(config) };
  return {
    metadata: { name: 'orders-1', namespace: 'shop',
      annotations: record ? markAnnotations({ ...base, ...record }) : {} },
    spec: { containers: [{ name: 'app' }, { name: 'sidecar' }] },
    status: { phase, containerStatuses: [{ name: 'app', ...(containerID ? { containerID } : {}), state: { running: {} } },
      { name: 'sidecar', containerID: 'containerd://s', state: { running: {} } }] },
  };
}

describe('what to do for a matching pod', () => {
  it('injects a running container it has no record of, the first container by default', () => {
    assert.deepEqual(planPod(pod('containerd://a'), wanted), { action: 'inject', container: 'app', containerID: 'containerd://a' });
    assert.deepEqual(planPod(pod('containerd://a'), { ...wanted, containerName: 'sidecar' }),
      { action: 'inject', container: 'sidecar', containerID: 'containerd://s' });
  });

  it('injects again once the container has a new ID, and never twice into the same one', () => {
    assert.equal(planPod(pod('containerd://b', {}), wanted).action, 'inject');
    assert.equal(planPod(pod('containerd://a', {}), wanted).action, 'serving');
  });

  it('rewrites a changed config, and reports a changed port as needing a restart', () => {
    assert.equal(planPod(pod('containerd://a', {}), { ...wanted, config: 'rules: []\n' }).action, 'rewrite-config');
    assert.equal(planPod(pod('containerd://a', {}), { ...wanted, port: 9405 }).action, 'restart-needed');
  });

  it('skips containers that are missing or not running, and pods another exporter has', () => {
    assert.deepEqual(planPod(pod('containerd://a'), { ...wanted, containerName: 'jvm' }),
      { action: 'skip', reason: 'it has no container named jvm' });
    assert.deepEqual(planPod(pod(undefined), wanted), { action: 'skip', reason: 'container app is not running' });
    assert.equal(planPod(pod('containerd://a', undefined, 'Pending'), wanted).action, 'skip');
    assert.deepEqual(planPod(pod('containerd://a', { exporter: 'billing' }), wanted),
      { action: 'skip', reason: 'PrometheusJmxExporter billing already exports it' });
  });
});

describe('claims and refusals recorded on the pod', () => {
  it('does not try a refused container again until it has a new ID', () => {
    assert.deepEqual(planPod(pod('containerd://a', { refused: 'no JVM runs in container app' }), wanted),
      { action: 'skip', reason: 'no JVM runs in container app' });
    assert.equal(planPod(pod('containerd://b', { refused: 'no JVM runs in container app' }), wanted).action, 'inject');
  });

  it('finishes its own interrupted claim, and leaves another exporter\'s alone', () => {
    assert.equal(planPod(pod('containerd://a', { attaching: true }), wanted).action, 'inject');
    assert.equal(planPod(pod('containerd://a', { attaching: true, exporter: 'billing' }), wanted).action, 'skip');
  });
});

describe('reading what the container said', () => {
  it('lists JVMs with the port an earlier load left, and a taken port', () => {
    assert.deepEqual(parseInspection('jvm 7 1234 -\njvm 42 99 9404\nport-in-use\n'), {
      jvms: [{ pid: 7, startTime: '1234' }, { pid: 42, startTime: '99', loadedPort: 9404 }], portInUse: true });
    assert.deepEqual(parseInspection(''), { jvms: [], portInUse: false });
  });

  it('passes the bind address to the agent only when one is set', () => {
    assert.equal(agentOptions(9404, '/tmp/c.yaml'), '9404:/tmp/c.yaml');
    assert.equal(agentOptions(9404, '/tmp/c.yaml', '127.0.0.1'), '127.0.0.1:9404:/tmp/c.yaml');
  });
});
