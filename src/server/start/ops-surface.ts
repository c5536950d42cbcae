import type { Clock } from '../../core/clock.js';
import type { Gap } from '../../core/id-gaps.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { GapTotals, gapTotalsJson } from '../ops/gap-totals.js';
import { Metrics } from '../ops/metrics.js';
import type { OpsDeps } from '../ops/ops-handlers.js';
import { readiness } from '../ops/readiness.js';
import { StatsSampler } from '../ops/stats-sampler.js';
import type { Cleanups } from './cleanups.js';
import type { SegmentMode } from './segment-mode.js';
import type { OpsConfig } from './serve-config.js';

/** What the people who run the node read: the sampler behind `/v1/stats` and the dashboard, and `/metrics`. */
export interface OpsSurface {
  stats: StatsSampler;
  metrics: Metrics;
}

/**
 * Made before the modes open: the allocator reports its segment loads to `metrics`, and a
 * `--workers` process offers its numbers to the others from the start.
 */
export function openOpsSurface(config: OpsConfig, clock: Clock): OpsSurface {
  // The sampler's pass over every tag yields between slices (setImmediate), so ID requests are answered in between.
  const stats = new StatsSampler(clock, { metricsTags: config.metricsTags }, (next) => setImmediate(next));
  const metrics = new Metrics(stats);
  config.cluster?.provide({
    metrics: () => metrics.registry.getMetricsAsJSON(),
    stats: (query) => stats.snapshot(query),
  });
  return { stats, metrics };
}

/**
 * Once the modes are open: samples them every second until the node closes (the stop goes into
 * `cleanups`), and answers what the operator routes read, readiness included.
 */
export function startOpsSurface(
  ops: OpsSurface,
  config: OpsConfig,
  segment: SegmentMode | undefined,
  snowflake: SnowflakeService | undefined,
  cleanups: Cleanups,
  clock: Clock,
): OpsDeps {
  const { stats, metrics } = ops;
  stats.attach(segment?.allocator, snowflake, () => metrics.requestTotals());
  const gaps = segment && new GapTotals(segment.store, clock);
  if (gaps) metrics.attachGapTotals(gaps);
  stats.attachGaps(() => ({
    ...(gaps && { gaps: gapTotalsJson(gaps.current()) }),
    ...metrics.gapCounts(),
  }));
  stats.start();
  cleanups.push(() => stats.stop());
  return {
    stats,
    metrics,
    readiness: () => readiness(segment?.allocator, snowflake, stats, segment?.opaque, segment?.declaration),
    cluster: config.cluster,
    ...(segment && { recordGaps: (list: readonly Gap[]) => segment.recordGaps(list) }),
  };
}
