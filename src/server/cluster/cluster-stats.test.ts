import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StatsSnapshot } from '../ops/stats-snapshot.js';
import { mergeStats } from './cluster-stats.js';

function snapshotOf(overrides: Partial<StatsSnapshot>): StatsSnapshot {
  return {
    at: 1_000,
    version: '1.2.3',
    nodeVersion: '20.0.0',
    startedAt: 0,
    uptimeSeconds: 100,
    store: { kind: 'postgres', description: 'postgres://frond@db:5432/ids', reachable: true, error: null },
    requests: {
      windowSeconds: 10,
      perSecond: 10,
      errorsPerSecond: 1,
      errorsPerSecondByCode: { TAG_NOT_FOUND: 1 },
      latencyMs: { p50: 1, p90: 2, p99: 3 },
    },
    tagCount: 0,
    tags: [],
    history: [],
    snowflake: null,
    ...overrides,
  };
}

describe('mergeStats (/v1/stats of a --workers node)', () => {
  it('adds up requests and errors (by code too), takes the worst latency, the youngest uptime, and a store every process reaches', () => {
    const merged = mergeStats([
      snapshotOf({}),
      snapshotOf({
        startedAt: 60_000,
        uptimeSeconds: 40,
        store: {
          kind: 'postgres',
          description: 'postgres://frond@db:5432/ids',
          reachable: false,
          error: { code: 'STORE_UNAVAILABLE', message: 'connect ECONNREFUSED', at: 59_000 },
        },
        requests: {
          windowSeconds: 10,
          perSecond: 5,
          errorsPerSecond: 2,
          errorsPerSecondByCode: { TAG_NOT_FOUND: 0.5, STORE_UNAVAILABLE: 1.5 },
          latencyMs: { p50: 0.5, p90: 4, p99: 9 },
        },
      }),
      snapshotOf({
        requests: {
          windowSeconds: 10,
          perSecond: 0,
          errorsPerSecond: 0,
          errorsPerSecondByCode: {},
          latencyMs: null,
        },
      }),
    ]);
    assert.equal(merged.version, '1.2.3');
    assert.equal(merged.uptimeSeconds, 40, 'the process restarted 40 s ago shows');
    assert.equal(merged.startedAt, 60_000);
    assert.equal(merged.store?.reachable, false, 'one process cannot reach the store');
    assert.equal(merged.store?.kind, 'postgres');
    assert.equal(merged.store?.error?.message, 'connect ECONNREFUSED', "the unreachable process's reason");
    assert.equal(merged.requests.perSecond, 15);
    assert.equal(merged.requests.errorsPerSecond, 3);
    assert.deepEqual(merged.requests.errorsPerSecondByCode, { TAG_NOT_FOUND: 1.5, STORE_UNAVAILABLE: 1.5 });
    assert.deepEqual(merged.requests.latencyMs, { p50: 1, p90: 4, p99: 9 });
  });

  it('answers no store and no latency when no process has them', () => {
    const merged = mergeStats([
      snapshotOf({
        store: null,
        requests: {
          windowSeconds: 0,
          perSecond: 0,
          errorsPerSecond: 0,
          errorsPerSecondByCode: {},
          latencyMs: null,
        },
      }),
    ]);
    assert.equal(merged.store, null);
    assert.equal(merged.requests.latencyMs, null);
  });
});
