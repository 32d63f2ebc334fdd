import assert from 'node:assert/strict';
import { it } from 'node:test';
import { jittered } from './jitter.ts';

it('stretches a wait by up to a fifth, never shortens it, and seldom the same way twice', () => {
  const waits = Array.from({ length: 1000 }, () => jittered(1000));
  assert.ok(waits.every((w) => w >= 1000 && w <= 1200));
  assert.ok(new Set(waits).size > 990, 'replicas that failed together would retry together');
});
