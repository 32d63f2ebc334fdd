import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cordonChanged, cordoned } from './drain.ts';

const node = (spec: object) => ({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec });

describe('a node being emptied', () => {
  it('is cordoned by kubectl, or tainted so by the node controller, the cluster autoscaler or Karpenter', () => {
    assert.equal(cordoned(node({ unschedulable: true })), true);
    for (const key of ['node.kubernetes.io/unschedulable', 'ToBeDeletedByClusterAutoscaler', 'karpenter.sh/disrupted']) {
      assert.equal(cordoned(node({ taints: [{ key, effect: 'NoSchedule' }] })), true, key);
    }
  });

  it('is not tainted otherwise, nor softly, nor unknown', () => {
    assert.equal(cordoned(node({})), false);
    assert.equal(cordoned(node({ taints: [{ key: 'dedicated', effect: 'NoSchedule' }] })), false);
    assert.equal(cordoned(node({ taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'PreferNoSchedule' }] })), false);
    assert.equal(cordoned(undefined), false);
  });

  it('matters to the operator only when the cordon changes, not with every status update', () => {
    assert.equal(cordonChanged(node({}), node({ unschedulable: true })), true);
    assert.equal(cordonChanged(node({ unschedulable: true }), node({ unschedulable: true,
      taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] })), false);
    assert.equal(cordonChanged(node({}), node({})), false);
  });
});
