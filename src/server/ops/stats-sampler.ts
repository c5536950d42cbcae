import type { Clock } from '../../core/clock.js';
import { isCounterName, type SegmentAllocator } from '../../core/segment-allocator.js';
import type { SegmentBuffer } from '../../core/segment-buffer.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import type { RequestTotals } from './request-window.js';
import { StatsHistory } from './stats-history.js';
import {
  DEFAULT_STATS_TAGS,
  layoutStats,
  type StatsQuery,
  type StatsSnapshot,
  tagStats,
} from './stats-snapshot.js';
import { addToOther, DEFAULT_METRICS_TAGS, emptyOther, TagLabels, type TagMetrics } from './tag-labels.js';
import { busier, idleTrack, newTrack, recordIssued, type Track } from './tag-track.js';
import { TopK } from './top-k.js';
import { FROND_VERSION } from './version.js';

/**
 * Tags sampled between two turns of the event loop. One tag costs ~0.1 µs to ~1 µs (two getters
 * and a ring write), so 2,000 keep a slice well under 1 ms and 50,000 tags take 25 slices.
 */
const SAMPLE_SLICE = 2_000;

export interface StatsSamplerOptions {
  /** How many tags get their own label in `/metrics` (`--metrics-tags`). */
  metricsTags: number;
}

/**
 * Samples the allocator and the snowflake node once a second: per-tag rates and runway for metrics
 * and the dashboard, and a short history of IDs per second (`StatsHistory`). Reads counters only;
 * nothing on the path of a request.
 *
 * With many tags (issue 16: 50,000 tags made `/metrics` 15.7 MB and 7.4 s), each second's pass reads
 * two getters per tag in slices of SAMPLE_SLICE with the event loop turned between them, keeps the
 * busiest in a heap (O(n log k)), and adds up the tags outside the `metricsTags` labelled ones
 * (`TagLabels`), so that a scrape or `/v1/stats` reads ~k tags, never all of them.
 */
export class StatsSampler {
  private readonly tracks = new Map<string, Track>();
  private readonly history = new StatsHistory();
  private readonly labels: TagLabels;
  private cancel: (() => void) | undefined;
  private segment: SegmentAllocator | undefined;
  private snowflake: SnowflakeService | undefined;
  private requestTotals: (() => RequestTotals) | undefined;
  private gapStats: (() => Pick<StatsSnapshot, 'gaps' | 'handedBack' | 'givenUp'>) | undefined;
  private readonly startedAt: number;
  private samples = 0;
  /** The busiest tags of the last pass, best first (up to max(metricsTags, DEFAULT_STATS_TAGS)). */
  private busiest: Track[] = [];
  private readonly keep: number;
  private stopped = true;
  /** A pass in slices in progress: the next tick waits for it rather than starting another. */
  private passing = false;

  constructor(
    private readonly clock: Clock,
    options: StatsSamplerOptions = { metricsTags: DEFAULT_METRICS_TAGS },
    /** How the sliced pass yields to the event loop (setImmediate in the server). */
    private readonly yieldTurn: (next: () => void) => void = (next) => next(),
  ) {
    this.keep = Math.max(options.metricsTags, DEFAULT_STATS_TAGS);
    this.labels = new TagLabels(options.metricsTags);
    this.startedAt = clock.now();
  }

  /** Where `snapshot` reads the gap totals and this process's hand-back counts (`ops-surface.ts`). */
  attachGaps(read: () => Pick<StatsSnapshot, 'gaps' | 'handedBack' | 'givenUp'>): void {
    this.gapStats = read;
  }

  /** What to sample; set once both modes have started. `requests`: `Metrics.requestTotals`. */
  attach(
    segment: SegmentAllocator | undefined,
    snowflake: SnowflakeService | undefined,
    requests?: () => RequestTotals,
  ): void {
    this.segment = segment;
    this.snowflake = snowflake;
    this.requestTotals = requests;
  }

  start(): void {
    this.stopped = false;
    this.sample();
    const tick = () => {
      if (this.stopped) return;
      if (!this.passing) this.sampleInSlices();
      this.cancel = this.clock.schedule(tick, 1000);
    };
    this.cancel = this.clock.schedule(tick, 1000);
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
  }

  /** One whole pass at once (at start and in tests). */
  sample(): void {
    const pass = this.pass();
    while (!pass.next().done) {}
  }

  /** One pass, a slice per turn of the event loop. */
  private sampleInSlices(): void {
    const pass = this.pass();
    this.passing = true;
    const step = () => {
      if (this.stopped || pass.next().done) {
        this.passing = false;
        return;
      }
      this.yieldTurn(step);
    };
    step();
  }

  private *pass(): Generator<void, void, void> {
    const sample = ++this.samples;
    const top = new TopK<Track>(this.keep, busier);
    const other = emptyOther();
    let segmentTotal = 0;
    let seen = 0;
    for (const buffer of this.segment?.buffersView() ?? []) {
      let track = this.tracks.get(buffer.tag);
      if (track === undefined || track.buffer !== buffer) {
        const old = track;
        track = newTrack(buffer);
        this.labels.adopt(track, old, this.segment?.size ?? 0);
        this.tracks.set(buffer.tag, track);
      }
      const issued = buffer.issued;
      segmentTotal += issued;
      recordIssued(track, issued, sample);
      addToOther(other, track, issued);
      top.offer(track);
      if (++seen % SAMPLE_SLICE === 0) yield;
    }
    if (this.tracks.size > seen) {
      for (const [tag, track] of this.tracks) {
        if (track.seen === sample) continue;
        this.tracks.delete(tag);
        this.labels.drop(track);
      }
    }
    this.busiest = top.sorted();
    this.labels.endPass(sample, this.busiest, this.tracks, other);

    const snowflakeTotal = this.snowflake?.issued ?? 0;
    this.history.record(this.clock.now(), segmentTotal, snowflakeTotal, this.requestTotals?.());
  }

  /** The labelled tags, read now, and the rest added up at the last pass: what `/metrics` shows. */
  tagMetrics(): TagMetrics {
    return this.labels.tagMetrics(this.segment?.size ?? 0);
  }

  /** Whether any tag has IDs buffered: stops at the first, so it walks every tag only while none has. */
  anyBuffered(): boolean {
    for (const buffer of this.segment?.buffersView() ?? []) if (buffer.left > 0) return true;
    return false;
  }

  snapshot(query: StatsQuery = {}): StatsSnapshot {
    const now = this.clock.now();
    const segment = this.segment;
    let chosen: SegmentBuffer[] = [];
    if (segment !== undefined) {
      if (query.tags !== undefined) {
        chosen = query.tags.flatMap((tag) => {
          const buffer = segment.buffer(tag);
          return buffer === undefined ? [] : [buffer];
        });
      } else {
        chosen = this.busiestBuffers(query.limit ?? DEFAULT_STATS_TAGS);
      }
    }
    // A formatted tag's counters (tag U+001F period) are rows, not tags: the tag table leaves them out.
    const tags = chosen
      .filter((buffer) => !isCounterName(buffer.tag))
      .map((buffer) => {
        const state = buffer.state();
        return tagStats(state, this.tracks.get(state.tag)?.rate ?? 0);
      })
      .sort((a, b) => (a.tag < b.tag ? -1 : 1));
    const snowflake = this.snowflake;
    return {
      at: now,
      version: FROND_VERSION,
      nodeVersion: process.versions.node,
      startedAt: this.startedAt,
      uptimeSeconds: Math.max(0, (now - this.startedAt) / 1000),
      store: segment
        ? {
            kind: segment.store.description.split(':')[0] ?? '',
            description: segment.store.description,
            reachable: segment.storeReachable,
            error: segment.storeFailure ?? null,
          }
        : null,
      requests: this.history.requests(),
      tagCount: segment?.size ?? 0,
      tags,
      ...this.gapStats?.(),
      history: this.history.rates(),
      snowflake: snowflake
        ? {
            workerId: snowflake.workerId,
            issued: snowflake.issued,
            backwardsEvents: snowflake.backwardsEvents,
            lastTimestamp: snowflake.lastTimestamp,
            // Positive: the clock is ahead of the last timestamp used, as it should be.
            clockOffsetMs: now - snowflake.lastTimestamp,
            layout: layoutStats(snowflake.layout, now),
          }
        : null,
    };
  }

  /** The `limit` busiest: from the last pass when it kept that many, else one O(n log k) walk. */
  private busiestBuffers(limit: number): SegmentBuffer[] {
    const segment = this.segment;
    if (segment === undefined) return [];
    // Tags the sampler has not seen yet (a tag served for the first time this second) count as idle.
    if (limit <= this.keep && this.tracks.size === segment.size)
      return this.busiest.slice(0, limit).map((track) => track.buffer);
    const top = new TopK<Track>(limit, busier);
    for (const buffer of segment.buffersView()) {
      const track = this.tracks.get(buffer.tag);
      top.offer(track?.buffer === buffer ? track : idleTrack(buffer));
    }
    return top.sorted().map((track) => track.buffer);
  }
}
