import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autoscaledPlan, autoscalerProblem, decide, restoreTo, stretchOf } from './target.ts';

const office = { replicas: 5, window: 'Mon-Fri 07:30-19:00' };
const stretch = stretchOf(office, new Date('2026-06-12T17:00:00Z'));

describe('a workload the TDSet does not own', () => {
  it('is scaled to what the schedule asks, and left as it is when it already has that', () => {
    assert.deepEqual(decide(2, office, stretch, {}, false), { kind: 'scale', from: 2, to: 5 });
    assert.deepEqual(decide(5, office, stretch, {}, false), { kind: 'as-asked' });
    assert.deepEqual(decide(2, office, stretch, {}, true), { kind: 'paused' });
  });

  it('keeps replicas someone else set within a window until the next one, or until the TDSet asks anew', () => {
    const applied = { originalReplicas: 2, appliedReplicas: 5, appliedWindow: stretch };
    assert.deepEqual(decide(8, office, stretch, applied, false), { kind: 'changed-elsewhere' });
    // The next window, or the spec asking for other replicas, is another stretch: the schedule sets them again.
    const evening = { replicas: 2, window: 'default' };
    assert.deepEqual(decide(8, evening, stretchOf(evening, new Date('2026-06-15T05:30:00Z')), applied, false),
      { kind: 'scale', from: 8, to: 2 });
    const more = { ...office, replicas: 6 };
    assert.deepEqual(decide(8, more, stretchOf(more, new Date('2026-06-12T17:00:00Z')), applied, false),
      { kind: 'scale', from: 8, to: 6 });
  });

  it('gets back the replicas it had, unless someone else changed them since the TDSet last did', () => {
    const applied = { originalReplicas: 2, appliedReplicas: 5, appliedWindow: stretch };
    assert.equal(restoreTo(5, applied), 2);
    assert.equal(restoreTo(7, applied), undefined);
    assert.equal(restoreTo(undefined, applied), undefined);
    assert.equal(restoreTo(2, { ...applied, appliedReplicas: 2 }), undefined);
    assert.equal(restoreTo(5, {}), undefined);
    // A first scale cut short before it was recorded: what it set is not known, and the replicas found go back.
    assert.equal(restoreTo(5, { originalReplicas: 2 }), 2);
  });
});

describe('a workload an autoscaler scales too', () => {
  const ref = { apiVersion: 'apps/v1' as const, kind: 'Deployment' as const, name: 'shop' };
  const hpa = { name: 'shop', target: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'shop' }, minReplicas: 2, maxReplicas: 10 };

  it('gets the schedule as the autoscaler\'s minReplicas, within its maxReplicas, and is scaled only to and from 0', () => {
    assert.deepEqual(autoscaledPlan(5, 3, hpa), { minReplicas: 5 });
    assert.deepEqual(autoscaledPlan(5, 7, { ...hpa, minReplicas: 5 }), {});
    assert.deepEqual(autoscaledPlan(50, 3, hpa), { minReplicas: 10 });
    assert.deepEqual(autoscaledPlan(0, 4, hpa), { scaleTo: 0 });
    assert.deepEqual(autoscaledPlan(0, 0, hpa), {});
    assert.deepEqual(autoscaledPlan(3, 0, hpa), { minReplicas: 3, scaleTo: 3 });
  });

  it('is left alone while an autoscaler it was not told of scales it, KEDA\'s above all', () => {
    assert.equal(autoscalerProblem(ref, undefined, []), undefined);
    assert.equal(autoscalerProblem(ref, 'shop', [hpa]), undefined);
    assert.equal(autoscalerProblem(ref, undefined, [{ ...hpa, target: { ...hpa.target, name: 'cart' } }]), undefined);
    assert.equal(autoscalerProblem(ref, undefined, [hpa])?.reason, 'AutoscalerConflict');
    assert.match(autoscalerProblem(ref, undefined, [{ ...hpa, name: 'keda-hpa-shop', owner: 'ScaledObject/shop' }])!.message,
      /^HorizontalPodAutoscaler keda-hpa-shop scales Deployment\/shop for KEDA's ScaledObject\/shop/);
    assert.equal(autoscalerProblem(ref, 'gone', [])?.reason, 'AutoscalerNotFound');
    assert.equal(autoscalerProblem(ref, 'cart', [{ ...hpa, name: 'cart', target: { ...hpa.target, name: 'cart' } }])?.reason,
      'AutoscalerMismatch');
  });
});
