import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { silentLogger } from '../../core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { BUCKETS } from './request-histogram.js';
import type { RequestTotals } from './request-window.js';
import { StatsSampler } from './stats-sampler.js';
import { FROND_VERSION } from './version.js';

async function setup() {
  const clock = new ManualClock();
  const store = new MemoryStore();
  await store.addTag({ tag: 'orders', step: 100, start: 1n });
  await store.addTag({ tag: 'later', step: 100, start: 1n });
  const segment = new SegmentAllocator(store, clock, silentLogger, {
    ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    tagRefreshMs: 1_000,
  });
  await segment.start();
  const totals: { count: number; errors: Record<string, number>; buckets: number[] } = {
    count: 0,
    errors: {},
    buckets: new Array<number>(BUCKETS.length + 1).fill(0),
  };
  const stats = new StatsSampler(clock);
  stats.attach(
    segment,
    undefined,
    (): RequestTotals => ({ ...totals, errors: { ...totals.errors }, buckets: [...totals.buckets] }),
  );
  return { clock, store, segment, stats, totals };
}

describe('StatsSampler (what /v1/stats and the dashboard show)', () => {
  it('says which frond runs, since when, and the store with its kind, whether it answers, and why not', async () => {
    const { clock, store, segment, stats } = await setup();
    try {
      stats.start();
      await clock.advance(5_000);
      const snapshot = stats.snapshot();
      assert.equal(snapshot.version, FROND_VERSION);
      assert.equal(snapshot.nodeVersion, process.versions.node);
      assert.equal(snapshot.startedAt, 1_700_000_000_000);
      assert.equal(snapshot.uptimeSeconds, 5);
      assert.deepEqual(snapshot.store, {
        kind: 'memory',
        description: 'memory:',
        reachable: true,
        error: null,
      });
      // The next tag-list read fails: the store is reported unreachable, and why.
      const listTags = store.listTags;
      store.listTags = async () => {
        throw new Error('connection refused');
      };
      await clock.advance(1_000);
      assert.equal(stats.snapshot().store?.reachable, false);
      assert.deepEqual(stats.snapshot().store?.error, {
        code: 'STORE_UNAVAILABLE',
        message: 'connection refused',
        at: clock.now(),
      });
      // It answers again: reachable, and no reason left over.
      store.listTags = listTags;
      await clock.advance(1_000);
      assert.equal(stats.snapshot().store?.reachable, true);
      assert.equal(stats.snapshot().store?.error, null);
    } finally {
      stats.stop();
      segment.close();
    }
  });

  it('answers no store when segment mode is off', () => {
    const stats = new StatsSampler(new ManualClock());
    stats.attach(undefined, undefined);
    assert.equal(stats.snapshot().store, null);
  });

  it('shows a tag listed but not asked for as not initialized, and a failed load with its message', async () => {
    const { segment, stats, store } = await setup();
    try {
      store.advance = async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
      };
      await assert.rejects(segment.next('orders'));
      const tags = stats.snapshot().tags;
      const later = tags.find((t) => t.tag === 'later');
      assert.equal(later?.initialized, false);
      assert.equal(later?.lastError, undefined, 'not loaded yet is no failure');
      const orders = tags.find((t) => t.tag === 'orders');
      assert.equal(orders?.initialized, false);
      assert.match(orders?.lastError?.message ?? '', /ECONNREFUSED 127\.0\.0\.1:5432/);
    } finally {
      segment.close();
    }
  });

  it('takes requests and errors per second and latency over the last 10 one-second samples', async () => {
    const { clock, segment, stats, totals } = await setup();
    try {
      stats.start();
      assert.deepEqual(stats.snapshot().requests, {
        windowSeconds: 0,
        perSecond: 0,
        errorsPerSecond: 0,
        errorsPerSecondByCode: {},
        latencyMs: null,
      });
      // 20 seconds of 30 requests a second, 3 of them errors, all in (0.5 ms, 1 ms] (bucket 4) ...
      for (let second = 0; second < 20; second++) {
        totals.count += 30;
        totals.errors.TAG_NOT_FOUND = (totals.errors.TAG_NOT_FOUND ?? 0) + 2;
        totals.errors.INVALID_TAG = (totals.errors.INVALID_TAG ?? 0) + 1;
        totals.buckets[4] = (totals.buckets[4] as number) + 30;
        await clock.advance(1_000);
      }
      const steady = stats.snapshot().requests;
      assert.equal(steady.windowSeconds, 10);
      assert.equal(steady.perSecond, 30);
      assert.equal(steady.errorsPerSecond, 3);
      assert.deepEqual(steady.errorsPerSecondByCode, { TAG_NOT_FOUND: 2, INVALID_TAG: 1 });
      assert.ok(Math.abs((steady.latencyMs?.p50 ?? 0) - 0.75) < 1e-9, JSON.stringify(steady));
      // ... then 10 quiet seconds: the window holds none of them, so no latency is made up.
      for (let second = 0; second < 10; second++) await clock.advance(1_000);
      const quiet = stats.snapshot().requests;
      assert.equal(quiet.perSecond, 0);
      assert.equal(quiet.errorsPerSecond, 0);
      assert.deepEqual(quiet.errorsPerSecondByCode, {});
      assert.equal(quiet.latencyMs, null);
    } finally {
      stats.stop();
      segment.close();
    }
  });
});
