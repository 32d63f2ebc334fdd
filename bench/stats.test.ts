import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countRequests } from './apiserver.ts';
import { chart, markdown } from './report.ts';
import type { Results } from './scenarios.ts';
import { quantile, summarize } from './stats.ts';

describe('benchmark figures', () => {
  it('takes quantiles by linear interpolation, whatever the order', () => {
    assert.equal(quantile([3, 1, 2], 0.5), 2);
    assert.equal(quantile([1, 2, 3, 4], 0.5), 2.5);
    assert.equal(quantile(Array.from({ length: 101 }, (_, i) => 100 - i), 0.99), 99);
    assert.ok(Number.isNaN(quantile([], 0.5)));
    assert.deepEqual(summarize([5, 1, 3]), { median: 3, min: 1, max: 5, runs: 3 });
  });

  it('counts the apiserver\'s requests for the workload resources only, writes apart from reads', () => {
    const text = [
      '# TYPE apiserver_request_total counter',
      'apiserver_request_total{code="201",component="apiserver",group="apps",resource="deployments",scope="resource",subresource="",verb="POST",version="v1"} 7',
      'apiserver_request_total{code="200",component="apiserver",group="keelson.dev",resource="tdsets",scope="resource",subresource="status",verb="APPLY",version="v1alpha1"} 3',
      'apiserver_request_total{code="200",component="apiserver",group="keelson.dev",resource="tdsets",scope="cluster",subresource="",verb="LIST",version="v1alpha1"} 2',
      'apiserver_request_total{code="200",component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 40',
      'apiserver_request_duration_seconds_count{resource="deployments",verb="POST"} 7',
    ].join('\n');
    assert.deepEqual(countRequests(text), { reads: 2, writes: 10 });
  });

  it('reports medians with their spread and Keelson\'s ratios to each peer', () => {
    const results: Results = new Map([['burst 10: time to all reconciled (s)', new Map([
      ['keelson', [2, 1, 3]], ['controller-runtime', [4, 4, 5]], ['kopf', [8]], ['floor', [1]]])]]);
    const text = markdown(results, { command: 'npm run bench', versions: ['v'], machine: 'm', date: '2026-11-21', notes: [] });
    assert.match(text, /\| burst 10: time to all reconciled \(s\) \| 2\.00 \(1\.00–3\.00\) \| 4\.00 \(4\.00–5\.00\) \| 8\.00 \| 1\.00 \| 0\.50× \| 0\.25× \| 2\.00× \|/);
    const svg = chart(results);
    assert.equal((svg.match(/<rect x=/g) ?? []).length, 4);
    assert.match(svg, /<text[^>]*>burst 10: time to all reconciled \(s\)<\/text>/);
  });
});
