import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ChurnLedger } from './ledger.ts';

it('times each pod change to the first status that shows it, and waits for what no status showed yet', () => {
  const ledger = new ChurnLedger();
  ledger.podUnhealthy('a', 100);
  ledger.podUnhealthy('b', 120);
  ledger.statusSeen(new Set(['a']), 130);
  assert.equal(ledger.pending, 1, 'b is not listed yet');
  ledger.podUnhealthy('a', 140);
  ledger.statusSeen(new Set(['a', 'b']), 150);
  ledger.podGone('a', 160);
  assert.equal(ledger.pending, 1, 'a is gone but still listed');
  ledger.statusSeen(new Set(['b']), 175);
  ledger.statusSeen(new Set([]), 190);
  assert.equal(ledger.pending, 0);
  assert.deepEqual(ledger.delays(), [30, 30, 15]);
});

it('counts a status seen before the change it shows as no delay, and a pod gone before it was listed not at all', () => {
  const ledger = new ChurnLedger();
  ledger.statusSeen(new Set(['a']), 100);
  ledger.podUnhealthy('a', 105);
  ledger.podGone('never-listed', 110);
  assert.equal(ledger.pending, 0);
  assert.deepEqual(ledger.delays(), [0]);
});
