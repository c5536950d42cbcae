import { GAP_REASONS, type GapReason } from '../../core/id-gaps.js';
import type { GapTotalsJson } from '../ops/gap-totals.js';
import {
  DEFAULT_STATS_TAGS,
  type RatePoint,
  type StatsQuery,
  type StatsSnapshot,
  type TagStats,
} from '../ops/stats-snapshot.js';

/** `/v1/stats` of a `--workers N` node: every process's numbers added up, as one node's. */
export interface ClusterStatsSnapshot extends StatsSnapshot {
  /** How many processes answered (of the node's `--workers`). */
  processes: number;
  snowflake:
    | (NonNullable<StatsSnapshot['snowflake']> & {
        /** Every process's worker ID; `workerId` is the first. */
        workerIds: number[];
      })
    | null;
}

/**
 * Adds up the snapshots of the processes of one node. Counts, IDs left and rates add up; runway is
 * recomputed from them; a tag's next segment is ready only when it is in every process; its step
 * is the largest; its last error the latest. History points are aligned from the newest (each
 * process samples once a second). The clock offset is the smallest, the worst of them. Requests and
 * errors per second add up; a latency quantile is the largest of the processes' (quantiles do not
 * add up, and the worst process is the one to look at); the uptime is the youngest process's (one
 * that was restarted shows); the store is reachable when every process reaches it, and its error
 * is the latest of the processes'.
 */
export function mergeStats(
  snapshots: readonly StatsSnapshot[],
  query: StatsQuery = {},
): ClusterStatsSnapshot {
  const byTag = new Map<string, TagStats>();
  for (const snapshot of snapshots) {
    for (const tag of snapshot.tags) {
      const seen = byTag.get(tag.tag);
      byTag.set(tag.tag, seen === undefined ? { ...tag } : addTag(seen, tag));
    }
  }
  // Each process sent its own busiest; the node's busiest are the busiest of their sums.
  const limit = query.tags !== undefined ? byTag.size : (query.limit ?? DEFAULT_STATS_TAGS);
  const tags = [...byTag.values()]
    .map((tag) => ({ ...tag, runwaySeconds: tag.rate > 0 ? tag.left / tag.rate : null }))
    .sort((a, b) => b.rate - a.rate || b.issued - a.issued)
    .slice(0, limit)
    .sort((a, b) => (a.tag < b.tag ? -1 : 1));
  const length = Math.max(0, ...snapshots.map((snapshot) => snapshot.history.length));
  const history: RatePoint[] = Array.from({ length }, () => ({ at: 0, segment: 0, snowflake: 0 }));
  for (const snapshot of snapshots) {
    const offset = length - snapshot.history.length;
    snapshot.history.forEach((point, i) => {
      const sum = history[offset + i] as RatePoint;
      sum.at = Math.max(sum.at, point.at);
      sum.segment += point.segment;
      sum.snowflake += point.snowflake;
    });
  }
  const stores = snapshots.flatMap((snapshot) => (snapshot.store ? [snapshot.store] : []));
  const latencies = snapshots.flatMap((snapshot) =>
    snapshot.requests.latencyMs ? [snapshot.requests.latencyMs] : [],
  );
  const youngest = snapshots.reduce<StatsSnapshot | undefined>(
    (young, snapshot) => (young === undefined || snapshot.startedAt > young.startedAt ? snapshot : young),
    undefined,
  );
  const flakes = snapshots.flatMap((snapshot) => (snapshot.snowflake ? [snapshot.snowflake] : []));
  const first = flakes[0];
  return {
    at: Math.max(0, ...snapshots.map((snapshot) => snapshot.at)),
    version: youngest?.version ?? '',
    nodeVersion: youngest?.nodeVersion ?? '',
    startedAt: youngest?.startedAt ?? 0,
    uptimeSeconds: youngest?.uptimeSeconds ?? 0,
    store:
      stores[0] === undefined
        ? null
        : {
            ...stores[0],
            reachable: stores.every((store) => store.reachable),
            error: latest(stores.map((store) => store.error)),
          },
    requests: {
      windowSeconds: Math.max(0, ...snapshots.map((snapshot) => snapshot.requests.windowSeconds)),
      perSecond: snapshots.reduce((sum, snapshot) => sum + snapshot.requests.perSecond, 0),
      errorsPerSecond: snapshots.reduce((sum, snapshot) => sum + snapshot.requests.errorsPerSecond, 0),
      errorsPerSecondByCode: addByCode(snapshots.map((snapshot) => snapshot.requests.errorsPerSecondByCode)),
      latencyMs:
        latencies.length === 0
          ? null
          : {
              p50: Math.max(...latencies.map((latency) => latency.p50)),
              p90: Math.max(...latencies.map((latency) => latency.p90)),
              p99: Math.max(...latencies.map((latency) => latency.p99)),
            },
    },
    // Every process holds the same tags (a new one only until its next tag refresh).
    tagCount: Math.max(0, ...snapshots.map((snapshot) => snapshot.tagCount ?? 0)),
    tags,
    history,
    snowflake:
      first === undefined
        ? null
        : {
            workerId: first.workerId,
            workerIds: flakes.map((flake) => flake.workerId),
            issued: flakes.reduce((sum, flake) => sum + flake.issued, 0),
            backwardsEvents: flakes.reduce((sum, flake) => sum + flake.backwardsEvents, 0),
            lastTimestamp: Math.max(...flakes.map((flake) => flake.lastTimestamp)),
            clockOffsetMs: Math.min(...flakes.map((flake) => flake.clockOffsetMs)),
            // One layout for every process of the node; the least time left, as the clock offset.
            layout: {
              ...first.layout,
              timeLeftSeconds: Math.min(...flakes.map((flake) => flake.layout.timeLeftSeconds)),
            },
          },
    ...mergeGapStats(snapshots),
    processes: snapshots.length,
  };
}

/**
 * What the processes handed back and gave up add up. The gap totals are the store's (every process
 * reads the same frond_gaps), so a reason's are the highest any process read (the freshest), not
 * a sum, which would count each gap once per process.
 */
function mergeGapStats(
  snapshots: readonly StatsSnapshot[],
): Pick<StatsSnapshot, 'gaps' | 'handedBack' | 'givenUp'> {
  const withGaps = snapshots.flatMap((snapshot) => (snapshot.gaps ? [snapshot.gaps] : []));
  const counted = snapshots.filter((snapshot) => snapshot.handedBack !== undefined);
  if (withGaps.length === 0 && counted.length === 0) return {};
  const sum = (values: readonly (string | undefined)[]) =>
    values.reduce((total, value) => total + BigInt(value ?? '0'), 0n).toString();
  const merged: Pick<StatsSnapshot, 'gaps' | 'handedBack' | 'givenUp'> = {};
  if (withGaps.length > 0) {
    const gaps = {} as GapTotalsJson;
    for (const reason of GAP_REASONS) {
      const highest = withGaps
        .map((totals) => totals[reason] ?? { ranges: 0, ids: '0' })
        .reduce((a, b) => (BigInt(b.ids) > BigInt(a.ids) || b.ranges > a.ranges ? b : a));
      gaps[reason] = { ...highest };
    }
    merged.gaps = gaps;
  }
  if (counted.length > 0) {
    merged.handedBack = sum(counted.map((snapshot) => snapshot.handedBack));
    const givenUp = {} as Record<GapReason, string>;
    for (const reason of GAP_REASONS)
      givenUp[reason] = sum(counted.map((snapshot) => snapshot.givenUp?.[reason]));
    merged.givenUp = givenUp;
  }
  return merged;
}

/** Rates by error code, added up code by code. */
function addByCode(rates: readonly Record<string, number>[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const byCode of rates)
    for (const [code, rate] of Object.entries(byCode)) sum[code] = (sum[code] ?? 0) + rate;
  return sum;
}

/** The latest of some errors (by `at`), or null when there is none. */
function latest<E extends { at: number }>(errors: readonly (E | null | undefined)[]): E | null {
  let found: E | null = null;
  for (const error of errors) if (error && (found === null || error.at > found.at)) found = error;
  return found;
}

function addTag(a: TagStats, b: TagStats): TagStats {
  const latestError = latest([a.lastError, b.lastError]) ?? undefined;
  return {
    ...a,
    initialized: a.initialized || b.initialized,
    nextReady: a.nextReady && b.nextReady,
    loading: a.loading || b.loading,
    step: Math.max(a.step, b.step),
    loads: a.loads + b.loads,
    lastLoadAt: Math.max(a.lastLoadAt, b.lastLoadAt),
    issued: a.issued + b.issued,
    loadFailures: a.loadFailures + b.loadFailures,
    lastLoadMs: Math.max(a.lastLoadMs, b.lastLoadMs),
    lastError: latestError,
    left: a.left + b.left,
    rate: a.rate + b.rate,
  };
}
