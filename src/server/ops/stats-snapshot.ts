import type { GapReason } from '../../core/id-gaps.js';
import type { Range, SegmentBufferState, SegmentSlot } from '../../core/segment-buffer.js';
import type { SnowflakeLayout } from '../../core/snowflake-layout.js';
import type { GapTotalsJson } from './gap-totals.js';
import type { RequestRates } from './request-window.js';

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
  /** Why not, while unreachable: the last call's error code, message and time (ms since the epoch). */
  error: { code: string; message: string; at: number } | null;
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
  /** How many tags the node holds; `tags` lists at most the asked number of them (`StatsQuery`). */
  tagCount: number;
  tags: TagStats[];
  history: RatePoint[];
  /**
   * The store's frond_gaps summed by reason (the whole table, read at most every 10 s; zeros before
   * the first read). Absent when segment mode is off.
   */
  gaps?: GapTotalsJson;
  /** IDs this process handed back to the table (at its stop: a running node shows `"0"`), as a string. */
  handedBack?: string;
  /** IDs this process recorded as gaps since it started, by reason (crash: reported at this start). */
  givenUp?: Record<GapReason, string>;
  snowflake: {
    workerId: number;
    issued: number;
    backwardsEvents: number;
    lastTimestamp: number;
    clockOffsetMs: number;
    layout: LayoutStats;
  } | null;
}

/** The snowflake layout as `/v1/stats` shows it, and how long its time bits have left. */
export interface LayoutStats {
  /** `41+10+12`: bits of time, worker ID and sequence. */
  bits: string;
  timeBits: number;
  workerBits: number;
  sequenceBits: number;
  timeUnitMs: number;
  epoch: number;
  maxWorkerId: number;
  /** ms since 1970 when the time bits run out. */
  endsAt: number;
  /** Seconds until then, by the node's clock. */
  timeLeftSeconds: number;
}

export function layoutStats(layout: SnowflakeLayout, now: number): LayoutStats {
  const { bits, timeBits, workerBits, sequenceBits, timeUnitMs, epoch, maxWorkerId, endsAt } = layout;
  return {
    bits,
    timeBits,
    workerBits,
    sequenceBits,
    timeUnitMs,
    epoch,
    maxWorkerId,
    endsAt,
    timeLeftSeconds: layout.timeLeftMs(now) / 1000,
  };
}

/** Which tags `/v1/stats` lists: the `limit` busiest, or the named ones. */
export interface StatsQuery {
  limit?: number;
  tags?: readonly string[];
}

/** `/v1/stats` lists the 200 busiest tags unless asked otherwise: 200 rows are ~100 KB of JSON, 50,000 were 15 MB. */
export const DEFAULT_STATS_TAGS = 200;
/** The most a `?limit=` may ask for. */
export const MAX_STATS_TAGS = 1_000;

/** Rates are averaged over 10 s: short enough to follow a burst, long enough not to flicker. */
export const RATE_WINDOW_S = 10;

/** A tag's row of `/v1/stats`: its buffer's `state`, and `rate` IDs a second as the sampler measured it. */
export function tagStats(state: SegmentBufferState, rate: number): TagStats {
  const { current, next, slots: _slots, ...rest } = state;
  const currentLeft = current.max > current.value ? Number(current.max - current.value) : 0;
  const left = currentLeft + (next ? next.step : 0);
  return {
    ...rest,
    current: currentJson(current),
    next: next && rangeJson(next),
    used: current.step > 0 ? 1 - currentLeft / current.step : 0,
    left,
    rate,
    runwaySeconds: rate > 0 ? left / rate : null,
  };
}

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
