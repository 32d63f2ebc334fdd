import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergePatch, setCondition } from './status.ts';

describe('status helpers', () => {
  it('move lastTransitionTime only when a condition changes status', () => {
    const t1 = new Date('2026-01-01T00:00:00Z');
    const t2 = new Date('2026-01-01T01:00:00Z');
    const ready = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Unavailable', message: '0 of 3' }, t1);
    const still = setCondition(ready, { type: 'Ready', status: 'False', reason: 'Unavailable', message: '1 of 3' }, t2);
    assert.equal(still[0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.equal(still[0]!.message, '1 of 3');
    const flipped = setCondition(still, { type: 'Ready', status: 'True', reason: 'Available', message: '3 of 3' }, t2);
    assert.equal(flipped[0]!.lastTransitionTime, '2026-01-01T01:00:00Z');
    assert.equal(setCondition(flipped, { type: 'Progressing', status: 'True', reason: 'X', message: '' }, t2).length, 2);
  });

  it('write a merge patch that removes what went away and keeps what did not change out of it', () => {
    assert.deepEqual(mergePatch({ a: 1, next: 'x', nested: { keep: 1, drop: 2 }, list: [1, 2] },
      { a: 1, nested: { keep: 1 }, list: [2], added: true }),
    { next: null, nested: { drop: null }, list: [2], added: true });
    assert.deepEqual(mergePatch({}, { a: 1 }), { a: 1 });
  });
});
