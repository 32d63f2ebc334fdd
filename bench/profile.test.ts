import assert from 'node:assert/strict';
import { it } from 'node:test';
import { selfTimes, type CpuProfile } from './profile.ts';

const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 });

it('sums self time by package and by function, leaving idle time out', () => {
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame('(idle)', '') },
      { id: 2, callFrame: frame('parse', 'file:///app/node_modules/@scope/lib/index.js') },
      { id: 3, callFrame: frame('reconcile', 'file:///app/build/controller/operators/x.js') },
      { id: 4, callFrame: frame('(garbage collector)', '') },
      { id: 5, callFrame: frame('writeGeneric', 'node:net') },
      { id: 6, callFrame: frame('writev', '') },
    ],
    samples: [1, 2, 3, 3, 4, 5, 2, 6],
    timeDeltas: [5000, 1000, 2000, 2000, 500, 500, 1000, 1000],
  };
  const times = selfTimes([profile, profile]);
  assert.equal(times.totalMs, 16);
  assert.deepEqual(Object.fromEntries(times.byPackage),
    { '@scope/lib': 4, keelson: 8, '(garbage collector)': 1, 'node:net': 1, native: 2 });
  assert.equal(times.byFunction.get('reconcile controller/operators/x.js:10'), 8);
});
