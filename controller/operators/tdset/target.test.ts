import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { autoscaledPlan, autoscalerProblem, decide, restorePlan, restoreTo, stretchOf } from './target.ts';

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
    const plan = (desired: number, current: number, autoscaler = hpa, applied = {}) =>
      autoscaledPlan({ replicas: desired }, current, autoscaler, stretch, applied);
    assert.deepEqual(plan(5, 3), { minReplicas: 5 });
    assert.deepEqual(plan(5, 7, { ...hpa, minReplicas: 5 }), {});
    assert.deepEqual(plan(50, 3), { minReplicas: 10 });
    assert.deepEqual(plan(0, 4), { scaleTo: 0 });
    assert.deepEqual(plan(0, 0), {});
    assert.deepEqual(plan(3, 0), { minReplicas: 3, scaleTo: 3 });
    // What someone else set within the stretch is theirs: a minReplicas, or replicas out of a 0 window.
    assert.equal(plan(5, 3, { ...hpa, minReplicas: 7 }, { appliedMinReplicas: 5, appliedWindow: stretch }), 'changed-elsewhere');
    assert.equal(plan(0, 2, hpa, { appliedReplicas: 0, appliedMinReplicas: 2, appliedWindow: stretch }), 'changed-elsewhere');
    assert.deepEqual(plan(5, 9, { ...hpa, minReplicas: 5 }, { appliedMinReplicas: 5, appliedReplicas: 5, appliedWindow: stretch }), {});
  });

  it('gets the maxReplicas a stretch asks for, and its own back where the next asks for none', () => {
    const busy = { replicas: 4, maxReplicas: 20 };
    const holds = (maxReplicas: number, original: number) => ({ held: { maxReplicas, original } });
    assert.deepEqual(autoscaledPlan(busy, 3, hpa, stretch, {}), { minReplicas: 4, maxReplicas: 20, ...holds(20, 10) });
    // A bound lower than the replicas asked for lowers the minimum with it, in the same write.
    assert.deepEqual(autoscaledPlan({ replicas: 1, maxReplicas: 1 }, 3, hpa, stretch, {}),
      { minReplicas: 1, maxReplicas: 1, ...holds(1, 10) });
    const held = { originalMaxReplicas: 10, appliedMaxReplicas: 20, appliedMinReplicas: 4 };
    const at20 = { ...hpa, minReplicas: 4, maxReplicas: 20 };
    assert.deepEqual(autoscaledPlan(busy, 3, at20, stretch, { ...held, appliedWindow: stretch }), holds(20, 10));
    // Given back where a stretch gives none, and no longer held.
    const quiet = { replicas: 2 };
    assert.deepEqual(autoscaledPlan(quiet, 3, at20, 'other', held), { minReplicas: 2, maxReplicas: 10 });
    // Set by someone else: theirs within the stretch, and left to them after it; the next bound records theirs.
    const theirs = { ...at20, maxReplicas: 30 };
    assert.equal(autoscaledPlan(busy, 3, theirs, stretch, { ...held, appliedWindow: stretch }), 'changed-elsewhere');
    assert.deepEqual(autoscaledPlan(quiet, 3, theirs, 'other', held), { minReplicas: 2 });
    assert.deepEqual(autoscaledPlan(busy, 3, theirs, 'other', held), { maxReplicas: 20, ...holds(20, 30) });
    // Never asked for: the autoscaler's own, untouched.
    assert.deepEqual(autoscaledPlan(quiet, 3, hpa, stretch, {}), {});
  });

  it('never asks for a minReplicas above the maxReplicas, scaling to 0 included', () => {
    // A night at 0 with a bound of 1, after a day at 12 of 30: the minimum comes down with the bound.
    const day = { ...hpa, minReplicas: 12, maxReplicas: 30 };
    const held = { originalMaxReplicas: 10, appliedMaxReplicas: 30, appliedMinReplicas: 12 };
    assert.deepEqual(autoscaledPlan({ replicas: 0, maxReplicas: 1 }, 12, day, 'night', held),
      { minReplicas: 1, maxReplicas: 1, scaleTo: 0, held: { maxReplicas: 1, original: 10 } });
    // Or the autoscaler's own bound back, below the day's minimum.
    assert.deepEqual(autoscaledPlan({ replicas: 0 }, 12, day, 'night', held), { minReplicas: 10, maxReplicas: 10, scaleTo: 0 });
  });

  it('gets back its bounds when the TDSet goes, and replicas only out of the 0 the TDSet left it at', () => {
    const bounded = { originalReplicas: 2, originalMinReplicas: 1, appliedMinReplicas: 3, appliedReplicas: 3,
      originalMaxReplicas: 10, appliedMaxReplicas: 4 };
    assert.deepEqual(restorePlan(3, bounded, { ...hpa, minReplicas: 3, maxReplicas: 4 }), { minReplicas: 1, maxReplicas: 10 });
    assert.deepEqual(restorePlan(3, bounded, { ...hpa, minReplicas: 3, maxReplicas: 7 }), { minReplicas: 1 });
    // Not below a minimum someone else raised since, which the apiserver would refuse.
    assert.deepEqual(restorePlan(3, { ...bounded, originalMaxReplicas: 2 }, { ...hpa, minReplicas: 3, maxReplicas: 4 }),
      { minReplicas: 1, maxReplicas: 2 });
    assert.deepEqual(restorePlan(3, { ...bounded, originalMaxReplicas: 2 }, { ...hpa, minReplicas: 4, maxReplicas: 4 }), {});
    const applied = { originalReplicas: 2, originalMinReplicas: 1, appliedMinReplicas: 5, appliedReplicas: 5 };
    // The autoscaler's own count (8 under load) is not the TDSet's to undo.
    assert.deepEqual(restorePlan(8, applied, { ...hpa, minReplicas: 5 }), { minReplicas: 1 });
    assert.deepEqual(restorePlan(8, applied, { ...hpa, minReplicas: 3 }), {});
    assert.deepEqual(restorePlan(0, { ...applied, appliedReplicas: 0 }, { ...hpa, minReplicas: 5 }), { minReplicas: 1, replicas: 2 });
    // Within a maxReplicas lowered since.
    assert.deepEqual(restorePlan(4, { ...applied, originalMinReplicas: 6, appliedMinReplicas: 4 },
      { ...hpa, minReplicas: 4, maxReplicas: 5 }), { minReplicas: 5 });
    assert.deepEqual(restorePlan(5, applied, undefined), { replicas: 2 });
  });

  it('is left alone while an autoscaler it was not told of scales it, KEDA\'s above all', () => {
    assert.equal(autoscalerProblem(ref, undefined, []), undefined);
    assert.equal(autoscalerProblem(ref, 'shop', [hpa]), undefined);
    assert.equal(autoscalerProblem(ref, undefined, [{ ...hpa, target: { ...hpa.target, name: 'cart' } }]), undefined);
    assert.equal(autoscalerProblem(ref, undefined, [hpa])?.reason, 'AutoscalerConflict');
    assert.match(autoscalerProblem(ref, undefined, [{ ...hpa, name: 'keda-hpa-shop', owner: 'ScaledObject/shop' }])!.message,
      /^HorizontalPodAutoscaler keda-hpa-shop scales Deployment\/shop for KEDA's ScaledObject\/shop/);
    assert.equal(autoscalerProblem(ref, 'gone', [])?.reason, 'AutoscalerNotFound');
    // Named, but kept by something else that would put its minReplicas back.
    assert.equal(autoscalerProblem(ref, 'shop', [{ ...hpa, owner: 'ScaledObject/shop' }])?.reason, 'KedaScaledObject');
    assert.equal(autoscalerProblem(ref, 'shop', [{ ...hpa, owner: 'Application/shop' }])?.reason, 'AutoscalerControlled');
    assert.equal(autoscalerProblem(ref, 'cart', [{ ...hpa, name: 'cart', target: { ...hpa.target, name: 'cart' } }])?.reason,
      'AutoscalerMismatch');
  });
});
