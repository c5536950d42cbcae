import type { Clock } from '../core/clock.js';
import type { SegmentAllocator } from '../core/segment-allocator.js';
import type { Range, SegmentBufferState, SegmentSlot } from '../core/segment-buffer.js';
import type { SnowflakeService } from '../core/snowflake-service.js';
import { type RequestRates, type RequestTotals, requestRates } from './request-window.js';
import { FROND_VERSION } from './version.js';

/** One second of history: IDs handed out in it, by mode. */
export interface RatePoint {
  at: number;
  segment: number;
  snowflake: number;
}

/** An ID in JSON: a number while it is exact (|id| ≤ 2^53 − 1), else its decimal string. */
export type JsonId = number | string;

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export function jsonId(id: bigint): JsonId {
  return id <= SAFE && id >= -SAFE ? Number(id) : id.toString();
}

/** A tag's buffer as `/v1/stats` shows it: the core's state, with IDs as `JsonId`s. */
export interface TagStats extends Omit<SegmentBufferState, 'current' | 'next' | 'slots'> {
  current: { start: JsonId; value: JsonId; max: JsonId; step: number };
  next: { start: JsonId; max: JsonId; step: number } | undefined;
  /** The fraction of the current segment handed out, 0 to 1. */
  used: number;
  /** IDs left in both buffers. */
  left: number;
  /** IDs per second over the last `RATE_WINDOW_S` seconds. */
  rate: number;
  /** Seconds the buffered IDs last at that rate; null when nothing is being taken. */
  runwaySeconds: number | null;
}

/** The segment store as the dashboard shows it. */
export interface StoreStats {
  /** The backend: `sqlite`, `postgres` or `mysql` (the scheme of `--store`). */
  kind: string;
  /** The store without its password (`postgres://frond@db:5432/ids`). */
  description: string;
  /** Whether the last call to the store (a tag-list read or a segment load) worked. */
  reachable: boolean;
}

export interface StatsSnapshot {
  at: number;
  /** frond's version and Node.js's. */
  version: string;
  nodeVersion: string;
  /** When this process started (ms since the epoch) and how long ago, in seconds. */
  startedAt: number;
  uptimeSeconds: number;
  /** Null when segment mode is off. */
  store: StoreStats | null;
  /** Requests, error answers and latency over the last `RATE_WINDOW_S` seconds. */
  requests: RequestRates;
  tags: TagStats[];
  history: RatePoint[];
  snowflake: {
    workerId: number;
    issued: number;
    backwardsEvents: number;
    lastTimestamp: number;
    clockOffsetMs: number;
  } | null;
}

/** Rates are averaged over 10 s: short enough to follow a burst, long enough not to flicker. */
const RATE_WINDOW_S = 10;
/** Five minutes of one-second points for the dashboard chart. */
const HISTORY_POINTS = 300;

/**
 * Samples the allocator and the snowflake node once a second: per-tag rates and runway for metrics
 * and the dashboard, and a short history of IDs per second. Reads counters only; nothing on the
 * path of a request.
 */
export class StatsSampler {
  private readonly issuedByTag = new Map<string, number[]>();
  private readonly history: RatePoint[] = [];
  private lastSegmentTotal = 0;
  private lastSnowflakeTotal = 0;
  private cancel: (() => void) | undefined;
  private segment: SegmentAllocator | undefined;
  private snowflake: SnowflakeService | undefined;
  private requestTotals: (() => RequestTotals) | undefined;
  /** The request totals of the last `RATE_WINDOW_S` + 1 samples, oldest first. */
  private readonly requestWindow: RequestTotals[] = [];
  private readonly startedAt: number;

  constructor(private readonly clock: Clock) {
    this.startedAt = clock.now();
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
    this.sample();
    const tick = () => {
      this.sample();
      this.cancel = this.clock.schedule(tick, 1000);
    };
    this.cancel = this.clock.schedule(tick, 1000);
  }

  stop(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  sample(): void {
    let segmentTotal = 0;
    const seen = new Set<string>();
    for (const state of this.segment?.states() ?? []) {
      seen.add(state.tag);
      segmentTotal += state.issued;
      const window = this.issuedByTag.get(state.tag) ?? [];
      window.push(state.issued);
      if (window.length > RATE_WINDOW_S + 1) window.shift();
      this.issuedByTag.set(state.tag, window);
    }
    for (const tag of this.issuedByTag.keys()) if (!seen.has(tag)) this.issuedByTag.delete(tag);
    const snowflakeTotal = this.snowflake?.issued ?? 0;
    this.history.push({
      at: this.clock.now(),
      // A dropped tag takes its count with it; never show a negative rate.
      segment: Math.max(0, segmentTotal - this.lastSegmentTotal),
      snowflake: Math.max(0, snowflakeTotal - this.lastSnowflakeTotal),
    });
    if (this.history.length > HISTORY_POINTS) this.history.shift();
    if (this.requestTotals) {
      this.requestWindow.push(this.requestTotals());
      if (this.requestWindow.length > RATE_WINDOW_S + 1) this.requestWindow.shift();
    }
    this.lastSegmentTotal = segmentTotal;
    this.lastSnowflakeTotal = snowflakeTotal;
  }

  snapshot(): StatsSnapshot {
    const now = this.clock.now();
    const tags = (this.segment?.states() ?? [])
      .map((state): TagStats => {
        const { current, next, slots: _slots, ...rest } = state;
        const currentLeft = current.max > current.value ? Number(current.max - current.value) : 0;
        const left = currentLeft + (next ? next.step : 0);
        const rate = this.rateOf(state.tag);
        return {
          ...rest,
          current: currentJson(current),
          next: next && rangeJson(next),
          used: current.step > 0 ? 1 - currentLeft / current.step : 0,
          left,
          rate,
          runwaySeconds: rate > 0 ? left / rate : null,
        };
      })
      .sort((a, b) => (a.tag < b.tag ? -1 : 1));
    const snowflake = this.snowflake;
    const segment = this.segment;
    const first = this.requestWindow[0];
    const last = this.requestWindow.at(-1);
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
          }
        : null,
      // One sample a second, so the window's seconds are its samples less one.
      requests: requestRates(first ?? EMPTY_TOTALS, last ?? EMPTY_TOTALS, this.requestWindow.length - 1),
      tags,
      history: [...this.history],
      snowflake: snowflake
        ? {
            workerId: snowflake.workerId,
            issued: snowflake.issued,
            backwardsEvents: snowflake.backwardsEvents,
            lastTimestamp: snowflake.lastTimestamp,
            // Positive: the clock is ahead of the last timestamp used, as it should be.
            clockOffsetMs: now - snowflake.lastTimestamp,
          }
        : null,
    };
  }

  private rateOf(tag: string): number {
    const window = this.issuedByTag.get(tag);
    if (window === undefined || window.length < 2) return 0;
    return ((window.at(-1) as number) - (window[0] as number)) / (window.length - 1);
  }
}

const EMPTY_TOTALS: RequestTotals = { count: 0, errors: 0, buckets: [] };

function currentJson(slot: SegmentSlot): TagStats['current'] {
  return {
    start: jsonId(slot.max - BigInt(slot.step)),
    value: jsonId(slot.value),
    max: jsonId(slot.max),
    step: slot.step,
  };
}

function rangeJson(range: Range): NonNullable<TagStats['next']> {
  return { start: jsonId(range.start), max: jsonId(range.max), step: range.step };
}
