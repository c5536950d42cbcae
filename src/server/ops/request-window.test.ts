import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUCKETS } from './request-histogram.js';
import { bucketQuantile, type RequestTotals, requestRates } from './request-window.js';

/** Counts per bucket (BUCKETS, then +Inf) from `{ bucket index: count }`. */
function buckets(counts: Record<number, number>): number[] {
  return Array.from({ length: BUCKETS.length + 1 }, (_, i) => counts[i] ?? 0);
}

describe('bucketQuantile', () => {
  it('interpolates inside the bucket as Prometheus histogram_quantile does', () => {
    // 100 observations in (0.5 ms, 1 ms] (index 4): the median is halfway, 0.75 ms.
    assert.equal(bucketQuantile(0.5, buckets({ 4: 100 })), 0.00075);
    // 90 fast (≤ 50 µs, index 0), 10 in (10 ms, 50 ms] (index 8): p50 in the first bucket, from 0.
    const mixed = buckets({ 0: 90, 8: 10 });
    assert.ok(Math.abs((bucketQuantile(0.5, mixed) as number) - 0.00005 * (50 / 90)) < 1e-12);
    // p99: rank 99, the 9th of the 10 slow ones, 9/10 of the way from 10 ms to 50 ms.
    assert.ok(Math.abs((bucketQuantile(0.99, mixed) as number) - (0.01 + 0.04 * 0.9)) < 1e-12);
  });

  it('answers the highest finite bound for the +Inf bucket, and null when nothing was counted', () => {
    assert.equal(bucketQuantile(0.99, buckets({ [BUCKETS.length]: 3 })), 5);
    assert.equal(bucketQuantile(0.5, buckets({})), null);
  });
});

describe('requestRates', () => {
  const at = (
    count: number,
    errors: Record<string, number>,
    counts: Record<number, number>,
  ): RequestTotals => ({
    count,
    errors,
    buckets: buckets(counts),
  });

  it('takes rates and quantiles from what changed between the two readings, not from the totals', () => {
    // Before the window: 1,000 slow requests, which must not weigh on the window's quantiles.
    const first = at(1_000, { TAG_NOT_FOUND: 40, INVALID_TAG: 10 }, { 9: 1_000 });
    const last = at(
      1_200,
      { TAG_NOT_FOUND: 55, INVALID_TAG: 10, STORE_UNAVAILABLE: 5 },
      { 9: 1_000, 1: 200 },
    );
    const rates = requestRates(first, last, 10);
    assert.equal(rates.windowSeconds, 10);
    assert.equal(rates.perSecond, 20);
    assert.equal(rates.errorsPerSecond, 2);
    // By code: only the codes answered in the window.
    assert.deepEqual(rates.errorsPerSecondByCode, { TAG_NOT_FOUND: 1.5, STORE_UNAVAILABLE: 0.5 });
    // All 200 in (50 µs, 100 µs]: p50 75 µs = 0.075 ms, p99 99.5 µs.
    assert.ok(Math.abs((rates.latencyMs?.p50 ?? 0) - 0.075) < 1e-9, JSON.stringify(rates));
    assert.ok(Math.abs((rates.latencyMs?.p99 ?? 0) - 0.0995) < 1e-9, JSON.stringify(rates));
  });

  it('says no latency when nothing was answered in the window, and nothing at all before two readings', () => {
    const same = at(10, { INTERNAL: 1 }, { 3: 10 });
    assert.deepEqual(requestRates(same, same, 10), {
      windowSeconds: 10,
      perSecond: 0,
      errorsPerSecond: 0,
      errorsPerSecondByCode: {},
      latencyMs: null,
    });
    assert.deepEqual(requestRates(same, same, 0), {
      windowSeconds: 0,
      perSecond: 0,
      errorsPerSecond: 0,
      errorsPerSecondByCode: {},
      latencyMs: null,
    });
  });
});
