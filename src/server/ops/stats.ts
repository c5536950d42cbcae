import type { Clock } from '../../core/clock.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { Range, SegmentBuffer, SegmentBufferState, SegmentSlot } from '../../core/segment-buffer.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { type RequestRates, type RequestTotals, requestRates } from './request-window.js';
import { TopK } from './top-k.js';
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
  /** How many tags the node holds; `tags` lists at most the asked number of them (`StatsQuery`). */
  tagCount: number;
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

/** Which tags `/v1/stats` lists: the `limit` busiest, or the named ones. */
export interface StatsQuery {
  limit?: number;
  tags?: readonly string[];
}

/** `--metrics-tags`: 100 tags × ~10 series each keep a scrape near 100 KB. */
export const DEFAULT_METRICS_TAGS = 100;

/** `/v1/stats` lists the 200 busiest tags unless asked otherwise: 200 rows are ~100 KB of JSON, 50,000 were 15 MB. */
export const DEFAULT_STATS_TAGS = 200;
/** The most a `?limit=` may ask for. */
export const MAX_STATS_TAGS = 1_000;

/** Rates are averaged over 10 s: short enough to follow a burst, long enough not to flicker. */
const RATE_WINDOW_S = 10;
/** Five minutes of one-second points for the dashboard chart. */
const HISTORY_POINTS = 300;
/**
 * Tags sampled between two turns of the event loop. One tag costs ~0.1 µs to ~1 µs (two getters
 * and a ring write), so 2,000 keep a slice well under 1 ms and 50,000 tags take 25 slices.
 */
const SAMPLE_SLICE = 2_000;
/** Every this many samples (1 s each) the labelled set of `/metrics` is chosen again from the busiest. */
const RELABEL_SAMPLES = 60;

/** What the sampler keeps of one tag: its buffer, a ring of the last 11 issued counts, and its label base. */
interface Track {
  tag: string;
  buffer: SegmentBuffer;
  ring: Float64Array;
  /** Next slot of `ring` to write, and how many are filled. */
  head: number;
  filled: number;
  rate: number;
  /** The sample that last saw the tag: a tag not seen by a full pass is gone from the node. */
  seen: number;
  /** Set while the tag has its own `tag` label in `/metrics`: its counts when it got it. */
  label: { issued: number; loads: number; loadFailures: number } | undefined;
}

/** The series `/metrics` has per tag label. */
interface TagSeries {
  issued: number;
  loads: number;
  loadFailures: number;
  left: number;
  rate: number;
  /** The smallest runway (the tag that runs out first); null when none is being taken. */
  runwaySeconds: number | null;
  step: number;
  /** For `(other)`, 1 only when every one of its tags has its next segment. */
  nextReady: boolean;
}

/** The tags without a label of their own, added up for `tag="(other)"`. */
export interface OtherTags extends TagSeries {
  tags: number;
}

/** One labelled tag as `/metrics` reads it: counters from when it got its label. */
export interface LabelledTag extends TagSeries {
  tag: string;
}

/** What `/metrics` shows of the tags: the labelled ones, the rest added up, how many there are. */
export interface TagMetrics {
  tagCount: number;
  labelled: LabelledTag[];
  other: OtherTags | undefined;
}

export interface StatsSamplerOptions {
  /** How many tags get their own label in `/metrics` (`--metrics-tags`). */
  metricsTags: number;
}

const emptyOther = (): OtherTags => ({
  tags: 0,
  issued: 0,
  loads: 0,
  loadFailures: 0,
  left: 0,
  rate: 0,
  runwaySeconds: null,
  step: 0,
  nextReady: true,
});

/** Busier first: a higher rate, then (on a tie, e.g. all idle) one that already has a label, then more issued. */
function busier(a: Track, b: Track): boolean {
  if (a.rate !== b.rate) return a.rate > b.rate;
  const la = a.label !== undefined;
  if (la !== (b.label !== undefined)) return la;
  return a.buffer.issued > b.buffer.issued;
}

/**
 * Samples the allocator and the snowflake node once a second: per-tag rates and runway for metrics
 * and the dashboard, and a short history of IDs per second. Reads counters only; nothing on the
 * path of a request.
 *
 * With many tags (issue 16: 50,000 tags made `/metrics` 15.7 MB and 7.4 s), each second's pass reads
 * two getters per tag in slices of SAMPLE_SLICE with the event loop turned between them, keeps the
 * busiest in a heap (O(n log k)), and adds up the tags outside the `metricsTags` labelled ones, so
 * that a scrape or `/v1/stats` reads ~k tags, never all of them.
 *
 * A labelled tag's counters count from when it got its label, and `(other)` keeps everything before
 * (and everything of a tag that loses its label): so every series only goes up, and the sum over
 * `tag` is the node's total. While the node holds at most `metricsTags` tags, a tag gets its label
 * when first seen, with its whole count (nothing of it was in `(other)`): every tag is labelled with
 * its full counts, as before. With more, the free labels go to the busiest tags taking IDs, each
 * second, and every RELABEL_SAMPLES seconds the idlest labelled tags give theirs up to busier ones,
 * so labels do not flap.
 */
export class StatsSampler {
  private readonly tracks = new Map<string, Track>();
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
  private samples = 0;
  /** The tracks with a label, so that a scrape reads them without walking every tag. */
  private readonly members = new Set<Track>();
  private other: OtherTags = emptyOther();
  /** The busiest tags of the last pass, best first (up to max(metricsTags, DEFAULT_STATS_TAGS)). */
  private busiest: Track[] = [];
  private readonly keep: number;
  private stopped = true;
  /** A pass in slices in progress: the next tick waits for it rather than starting another. */
  private passing = false;

  constructor(
    private readonly clock: Clock,
    private readonly options: StatsSamplerOptions = { metricsTags: DEFAULT_METRICS_TAGS },
    /** How the sliced pass yields to the event loop (setImmediate in the server). */
    private readonly yieldTurn: (next: () => void) => void = (next) => next(),
  ) {
    this.keep = Math.max(options.metricsTags, DEFAULT_STATS_TAGS);
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
    const room = this.options.metricsTags;
    const top = new TopK<Track>(this.keep, busier);
    const other = emptyOther();
    let segmentTotal = 0;
    let seen = 0;
    for (const buffer of this.segment?.buffersView() ?? []) {
      let track = this.tracks.get(buffer.tag);
      if (track === undefined || track.buffer !== buffer) {
        track = {
          tag: buffer.tag,
          buffer,
          ring: new Float64Array(RATE_WINDOW_S + 1),
          head: 0,
          filled: 0,
          rate: 0,
          seen: 0,
          label: track?.label && { issued: 0, loads: 0, loadFailures: 0 },
        };
        const old = this.tracks.get(buffer.tag);
        if (old !== undefined && this.members.delete(old)) this.members.add(track);
        this.tracks.set(buffer.tag, track);
        // New to the sampler, so none of its IDs were counted in (other): it may take its whole
        // count. Only while every tag fits: with more, the free labels are kept for the busiest.
        if (track.label === undefined && this.members.size < room && (this.segment?.size ?? 0) <= room) {
          track.label = { issued: 0, loads: 0, loadFailures: 0 };
          this.members.add(track);
        }
      }
      const issued = buffer.issued;
      segmentTotal += issued;
      const ring = track.ring;
      ring[track.head] = issued;
      track.head = (track.head + 1) % ring.length;
      if (track.filled < ring.length) track.filled++;
      // The oldest value of the window is at head once the ring is full, else at 0.
      const oldest = ring[track.filled === ring.length ? track.head : 0] as number;
      track.rate = track.filled < 2 ? 0 : (issued - oldest) / (track.filled - 1);
      track.seen = sample;
      if (track.label === undefined) addOther(other, track, issued);
      else {
        other.issued += track.label.issued;
        other.loads += track.label.loads;
        other.loadFailures += track.label.loadFailures;
      }
      top.offer(track);
      if (++seen % SAMPLE_SLICE === 0) yield;
    }
    if (this.tracks.size > seen) {
      for (const [tag, track] of this.tracks) {
        if (track.seen === sample) continue;
        this.tracks.delete(tag);
        this.members.delete(track);
      }
    }
    this.busiest = top.sorted();
    this.relabel(sample, other);
    other.tags = this.tracks.size - this.members.size;
    this.other = other;

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

  /** Gives free labels to the busiest taking IDs, and every RELABEL_SAMPLES takes them from tags no longer among the busiest. */
  private relabel(sample: number, other: OtherTags): void {
    const room = this.options.metricsTags;
    const wanted = this.busiest.slice(0, room);
    if (sample % RELABEL_SAMPLES === 0 && this.tracks.size > room) {
      const keep = new Set(wanted.filter((track) => track.rate > 0 || track.label !== undefined));
      const taking = wanted.filter((track) => track.label === undefined && track.rate > 0).length;
      let freed = 0;
      // Only as many labels move as there are busy tags without one, the idlest labelled first.
      const labelled = [...this.members].filter((track) => !keep.has(track));
      labelled.sort((a, b) => a.rate - b.rate);
      for (const track of labelled) {
        if (freed >= taking) break;
        const base = track.label as NonNullable<Track['label']>;
        // Its counts since it got the label go back to (other), which so never goes down.
        other.issued += track.buffer.issued - base.issued;
        other.loads += track.buffer.loadCount - base.loads;
        other.loadFailures += track.buffer.loadFailureCount - base.loadFailures;
        track.label = undefined;
        this.members.delete(track);
        freed++;
      }
    }
    // When every tag fits, every tag has a label, idle or not.
    const fits = this.tracks.size <= room;
    for (const track of fits ? this.tracks.values() : wanted) {
      if (this.members.size >= room) break;
      if (track.label !== undefined || (!fits && track.rate <= 0)) continue;
      // (other) has its counts so far and keeps them; the label counts from here on.
      track.label = {
        issued: track.buffer.issued,
        loads: track.buffer.loadCount,
        loadFailures: track.buffer.loadFailureCount,
      };
      this.members.add(track);
      // Out of the sums for the rest of this second (clamped: rates are floats).
      other.left = Math.max(0, other.left - track.buffer.left);
      other.rate = Math.max(0, other.rate - track.rate);
    }
  }

  /** The labelled tags, read now, and the rest added up at the last pass: what `/metrics` shows. */
  tagMetrics(): TagMetrics {
    const labelled: LabelledTag[] = [];
    for (const track of this.members) {
      const base = track.label;
      if (base === undefined) continue;
      const buffer = track.buffer;
      const left = buffer.left;
      labelled.push({
        tag: track.tag,
        issued: buffer.issued - base.issued,
        loads: buffer.loadCount - base.loads,
        loadFailures: buffer.loadFailureCount - base.loadFailures,
        left,
        rate: track.rate,
        runwaySeconds: track.rate > 0 ? left / track.rate : null,
        step: buffer.dynamicStep,
        nextReady: buffer.nextReady,
      });
    }
    return {
      tagCount: this.segment?.size ?? 0,
      labelled,
      other: this.other.tags > 0 ? this.other : undefined,
    };
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
    const tags = chosen
      .map((buffer): TagStats => {
        const state = buffer.state();
        const { current, next, slots: _slots, ...rest } = state;
        const currentLeft = current.max > current.value ? Number(current.max - current.value) : 0;
        const left = currentLeft + (next ? next.step : 0);
        const rate = this.tracks.get(state.tag)?.rate ?? 0;
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
      tagCount: segment?.size ?? 0,
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
      top.offer(
        track?.buffer === buffer
          ? track
          : {
              tag: buffer.tag,
              buffer,
              ring: new Float64Array(0),
              head: 0,
              filled: 0,
              rate: 0,
              seen: 0,
              label: undefined,
            },
      );
    }
    return top.sorted().map((track) => track.buffer);
  }
}

const EMPTY_TOTALS: RequestTotals = { count: 0, errors: 0, buckets: [] };
function addOther(other: OtherTags, track: Track, issued: number): void {
  const buffer = track.buffer;
  const left = buffer.left;
  other.issued += issued;
  other.loads += buffer.loadCount;
  other.loadFailures += buffer.loadFailureCount;
  other.left += left;
  other.rate += track.rate;
  if (track.rate > 0) {
    const runway = left / track.rate;
    if (other.runwaySeconds === null || runway < other.runwaySeconds) other.runwaySeconds = runway;
  }
  if (buffer.dynamicStep > other.step) other.step = buffer.dynamicStep;
  if (!buffer.nextReady) other.nextReady = false;
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
