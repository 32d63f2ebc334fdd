import assert from 'node:assert/strict';
import { it } from 'node:test';
import { record, recordGrowthSlopes, type Results } from './scenarios.ts';

it('gives the peak RSS added per further 10,000 pods, per contender and repetition, from the smallest count to the largest', () => {
  const results: Results = new Map();
  for (const [pods, keelson, go] of [[10_000, [150, 160], [100]], [25_000, [200, 210], [140]], [50_000, [250, 280], [180]]] as const) {
    for (const mib of keelson) record(results, `growth: peak RSS, ${pods} pods cached (MiB)`, 'keelson', mib);
    for (const mib of go) record(results, `growth: peak RSS, ${pods} pods cached (MiB)`, 'controller-runtime', mib);
  }
  recordGrowthSlopes(results, [10_000, 25_000, 50_000]);
  const slopes = results.get('growth: peak RSS added per further 10000 pods (MiB)')!;
  assert.deepEqual(slopes.get('keelson'), [25, 30]);
  assert.deepEqual(slopes.get('controller-runtime'), [20]);
});

it('gives no slope from one pod count, or for a repetition missing its smallest count', () => {
  const results: Results = new Map();
  record(results, 'growth: peak RSS, 50000 pods cached (MiB)', 'keelson', 250);
  recordGrowthSlopes(results, [50_000]);
  recordGrowthSlopes(results, [10_000, 50_000]);
  assert.equal(results.has('growth: peak RSS added per further 10000 pods (MiB)'), false);
});
