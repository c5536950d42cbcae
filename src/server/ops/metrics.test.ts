import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { Metrics } from './metrics.js';
import { StatsSampler } from './stats-sampler.js';

describe('Metrics.requestTotals (the dashboard requests/s, errors/s and latency)', () => {
  it('counts the ID and admin routes, not the dashboard, /v1/stats, /metrics and the probes, and every error answer by code', () => {
    const metrics = new Metrics(new StatsSampler(new ManualClock()));
    metrics.request('leaf_segment', 200, 0.0003);
    metrics.request('v1_segment', 503, 0.2);
    metrics.request('admin', 201, 0.004);
    for (const route of ['dashboard', 'stats', 'metrics', 'readyz', 'healthz'] as const)
      metrics.request(route, 200, 0.001);
    metrics.error('STORE_UNAVAILABLE');
    metrics.error('TAG_NOT_FOUND');
    metrics.error('TAG_NOT_FOUND');
    const totals = metrics.requestTotals();
    assert.equal(totals.count, 3);
    assert.deepEqual(totals.errors, { STORE_UNAVAILABLE: 1, TAG_NOT_FOUND: 2 });
    // 0.3 ms in (0.25, 0.5] (index 3), 4 ms in (2.5, 5] (index 6), 200 ms in (50, 250] (index 9).
    assert.deepEqual(
      totals.buckets.flatMap((count, i) => (count > 0 ? [[i, count]] : [])),
      [
        [3, 1],
        [6, 1],
        [9, 1],
      ],
    );
  });
});
