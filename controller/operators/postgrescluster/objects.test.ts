import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memberPod } from './objects.ts';

const cluster = { apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster',
  metadata: { name: 'db', namespace: 'shop', uid: 'u-1' }, spec: {} } as any;
const spec = { size: 3, version: '17.2', paused: false, antiAffinity: true, nodeSelector: { disk: 'ssd' },
  storage: { size: '1Gi', keepOnScaleDown: true } } as any;

describe('member pods', () => {
  const pod = memberPod(cluster, spec, 'db-0001', { role: 'replica' }) as any;
  const container = pod.spec.containers[0];

  it('run postgres:<version> hardened, as the postgres user, spread across nodes where asked', () => {
    assert.equal(container.image, 'postgres:17.2');
    assert.deepEqual(container.securityContext.capabilities, { drop: ['ALL'] });
    assert.equal(container.securityContext.allowPrivilegeEscalation, false);
    assert.equal(pod.spec.securityContext.runAsUser, 999);
    assert.deepEqual(pod.spec.nodeSelector, { disk: 'ssd' });
    assert.equal(pod.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey,
      'kubernetes.io/hostname');
    assert.equal(pod.metadata.ownerReferences[0].uid, 'u-1');
  });

  it('get passwords only by reference to the cluster\'s Secret, and their role from their labels', () => {
    const passwords = container.env.filter((e: any) => /PASSWORD/.test(e.name));
    assert.equal(passwords.length, 2);
    for (const e of passwords) {
      assert.equal(e.value, undefined);
      assert.equal(e.valueFrom.secretKeyRef.name, 'db-credentials');
    }
    assert.equal(pod.metadata.labels['keelson.dev/role'], 'replica');
    assert.ok(container.env.some((e: any) => e.name === 'ROLE_FILE'));
    assert.ok(pod.spec.volumes.some((v: any) => v.downwardAPI?.items[0].fieldRef.fieldPath === 'metadata.labels'));
  });
});
