import { type Clock, within } from './clock.js';
import { describeError, ERROR_CODES, FrondError, isFrondError } from './errors.js';
import type { HeldRange } from './id-gaps.js';
import type { Logger } from './logger.js';
import { type CoreObserver, NO_CORE_OBSERVER } from './observer.js';
import { LEAF_STEP_RULES, nextStep, type StepRules, stepsAfterLoad } from './segment-step.js';
import { type Allocation, MAX_SEGMENT_ID, type SegmentStore } from './segment-store.js';
import { MAX_TABLE_STEP } from './tag.js';
import { tagNotFound } from './tag-catalogue.js';
import { KindChangedError, kindKey, type TagKind } from './tag-kind.js';

/** At most this many loads awaited by one waiter for one ID, within `segmentWaitMs` (3 s by default). */
const WAIT_ROUNDS = 10_000;
export interface SegmentBufferOptions {
  /**
   * The next segment starts loading once fewer than this fraction of the current one is left.
   * Leaf: 0.9, that is, once 10% of the segment is used.
   */
  preloadBelowIdle: number;
  /** How long a request waits for the load in flight when both buffers are empty (then 503). */
  segmentWaitMs: number;
  /**
   * After a failed load, no new load starts for this long, so a database that refuses connections
   * sees one attempt per tag per interval instead of one per request.
   */
  retryDelayMs: number;
  stepRules: StepRules;
  /**
   * false: every load takes the table's step (a dense tag: `SegmentAllocatorOptions.dense`), where
   * Leaf's rules grow it up to 1,000,000 with the traffic, and so what a crash can lose.
   */
  dynamicStep?: boolean;
}

export const DEFAULT_SEGMENT_BUFFER_OPTIONS: SegmentBufferOptions = {
  preloadBelowIdle: 0.9,
  segmentWaitMs: 3_000,
  retryDelayMs: 500,
  stepRules: LEAF_STEP_RULES,
};

/**
 * One segment ID: a number while the segment lies within ±(2^53 − 1), where a number is exact and
 * cheap, a bigint beyond (Leaf's IDs are Java longs: the whole signed 64-bit range).
 */
export type SegmentId = number | bigint;

/** A reserved range `[start, max)` of one tag. */
export interface Range {
  start: bigint;
  max: bigint;
  step: number;
}

/** What a buffer held unused when it was retired (`SegmentBuffer.retire`), and where its last grant ended. */
export interface RetiredBuffer {
  held: HeldRange[];
  to: bigint;
}

/** A run of consecutive IDs `[start, end)`, as `grant` hands them out. */
export interface IdRun {
  start: bigint;
  end: bigint;
}

/** One of Leaf's two segment slots as `/cache` shows it: the next ID to hand out, the end, the step. */
export interface SegmentSlot {
  value: bigint;
  max: bigint;
  step: number;
}

// A segment is kept in numbers when every ID in it is a safe integer; its exclusive end may be 2^53.
const SAFE_MAX = BigInt(Number.MAX_SAFE_INTEGER);
const SAFE_MIN = -SAFE_MAX;
/** The smallest Java long, -2^63: no range starts below it. */
export const MIN_SEGMENT_ID = -(2n ** 63n);

export interface SegmentBufferState {
  tag: string;
  initialized: boolean;
  nextReady: boolean;
  loading: boolean;
  /** The current segment: the next ID it hands out, its end and its step. */
  current: SegmentSlot;
  next: Range | undefined;
  /**
   * Leaf's view of the double buffer: the slot in use (0 or 1; it flips at each switch, as Leaf's
   * `currentPos`), and both slots, the one not in use holding the next segment or the last one used.
   */
  pos: 0 | 1;
  slots: [SegmentSlot, SegmentSlot];
  step: number;
  minStep: number;
  loads: number;
  lastLoadAt: number;
  /** IDs handed out by this buffer since it was created. */
  issued: number;
  loadFailures: number;
  /** Milliseconds the last successful load took. */
  lastLoadMs: number;
  lastError: { code: string; message: string; at: number } | undefined;
}

/**
 * The double buffer of one tag, as in Leaf: the current segment is served from memory; once 10% of
 * it is used, the next one loads in the background (never two loads at once); when the current one
 * runs out, the next takes its place. IDs from one buffer are strictly increasing, and consecutive
 * within a segment.
 */
export class SegmentBuffer {
  // The current segment, kept in plain number fields because `tryNext` reads them for every ID. A
  // segment within ±(2^53 − 1) keeps its IDs themselves in `value`/`max` (`base` undefined), and
  // `tryNext` is one comparison and an increment, nothing more. A segment beyond keeps `value` and
  // `max` at 0 (so that fast path never matches) and offsets from `base`, its first ID, in
  // `bigValue`/`bigMax`: only such a segment pays for a bigint per ID.
  private value = 0;
  private max = 0;
  private base: bigint | undefined;
  private bigValue = 0;
  private bigMax = 0;
  private currentStep = 0;
  /** IDs handed out before the current segment, so counting costs nothing per ID. */
  private issuedBefore = 0;
  private currentStart = 0;
  /** `tryNext` starts a load once it hands out an ID above this. Infinity: nothing to start. */
  private preloadAfter = Number.POSITIVE_INFINITY;

  private nextRange: Range | undefined;
  private loading: Promise<void> | undefined;
  private failure: { error: FrondError; at: number } | undefined;

  // The dynamic step, as in Leaf's SegmentBuffer.
  private step = 0;
  private minStep = 0;
  private loads = 0;
  private lastLoadAt = 0;
  private loadFailures = 0;
  private lastLoadMs = 0;
  /** The exclusive end of the last range loaded; a new range must not start below it. */
  private highest = MIN_SEGMENT_ID;
  /** Leaf's slot of the current segment, and what the other slot shows when no next one is loaded. */
  private pos: 0 | 1 = 0;
  private previous: SegmentSlot = { value: 0n, max: 0n, step: 0 };
  /**
   * The kind (plain, opaque and its setting) of every segment this buffer holds, from its first
   * grant; undefined before it. A grant of another kind (the row was deleted and created again
   * with another kind) is thrown away and retires the buffer: a buffer never holds two kinds, so a
   * caller that checked `kindKey` before `tryNext` knows the kind of the ID it gets.
   */
  private tagKind: TagKind | undefined;
  kindKey: string | undefined;
  /** Set once a grant of another kind came: the allocator replaces the buffer, nothing loads. */
  private retiredFor: TagKind | undefined;
  /** Set by `retire` (a clean stop): nothing is served or loaded any more. */
  private stopped = false;

  constructor(
    readonly tag: string,
    private readonly store: SegmentStore,
    private readonly clock: Clock,
    private readonly options: SegmentBufferOptions,
    private readonly logger: Logger,
    private readonly observer: CoreObserver = NO_CORE_OBSERVER,
  ) {}

  /** The next ID if one is buffered, else `undefined` (and a load starts if none is running). */
  tryNext(): SegmentId | undefined {
    const id = this.value;
    if (id < this.max) {
      this.value = id + 1;
      if (id > this.preloadAfter) this.startLoad();
      return id;
    }
    if (this.base !== undefined && this.bigValue < this.bigMax) return this.tryNextBig(this.base);
    return this.switchSegment() ? this.tryNext() : undefined;
  }

  /**
   * A clean stop: the buffer serves and loads nothing from now on, and answers what it held
   * unused, ascending (the current segment's rest, then the loaded next one), with the end of the
   * last range it was granted (`to`); undefined if it was never granted one. A load in flight is
   * awaited first, so what it brings is held too. The rest is read and emptied in one synchronous
   * step, so no ID is both handed out and held; `tryNext` pays nothing for this (its fast path
   * finds the segment used up). Calls that wait for an ID then get SEGMENT_UNAVAILABLE.
   */
  async retire(): Promise<RetiredBuffer | undefined> {
    this.stopped = true;
    this.preloadAfter = Number.POSITIVE_INFINITY;
    // No new load starts once stopped (startLoad, grant), so one await settles the last one; the
    // bound is a guard.
    for (let round = 0; round < 4 && this.loading !== undefined; round++) await this.loading;
    const held: HeldRange[] = [];
    const base = this.base ?? 0n;
    const at = this.at;
    const end = this.end;
    if (at < end)
      held.push({ start: base + BigInt(at), end: base + BigInt(end), reason: 'unsafe_hand_back' });
    const next = this.nextRange;
    if (next !== undefined) held.push({ start: next.start, end: next.max, reason: 'unsafe_hand_back' });
    if (this.base === undefined) this.value = this.max;
    else this.bigValue = this.bigMax;
    this.nextRange = undefined;
    return this.highest === MIN_SEGMENT_ID ? undefined : { held, to: this.highest };
  }

  /** Whether `retire` stopped this buffer. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** The current segment's next ID when it lies beyond ±(2^53 − 1). */
  private tryNextBig(base: bigint): bigint {
    const offset = this.bigValue++;
    if (offset > this.preloadAfter) this.startLoad();
    return base + BigInt(offset);
  }

  /** The current segment's next value and end, as numbers: IDs, or offsets from `base`. */
  private get at(): number {
    return this.base === undefined ? this.value : this.bigValue;
  }

  private get end(): number {
    return this.base === undefined ? this.max : this.bigMax;
  }

  /** The kind of this buffer's segments, once one was granted. */
  get kind(): TagKind | undefined {
    return this.tagKind;
  }

  /** Whether a grant of another kind retired this buffer (the allocator then makes a new one). */
  get retired(): boolean {
    return this.retiredFor !== undefined;
  }

  /**
   * The next ID of kind `key` (`kindKey`), waiting a bounded time for a load when both buffers are
   * empty. A buffer of another kind rejects with KindChangedError, before any ID is taken.
   */
  next(key = ''): Promise<SegmentId> {
    try {
      this.expectKind(key);
    } catch (error) {
      return Promise.reject(error);
    }
    const id = this.kindKey === undefined ? undefined : this.tryNext();
    return id === undefined ? this.waitForId(key) : Promise.resolve(id);
  }

  /** `count` increasing IDs of kind `key`; they span segments when the current one has fewer left. */
  async nextMany(count: number, key = ''): Promise<SegmentId[]> {
    const ids: SegmentId[] = [];
    this.expectKind(key);
    if (this.kindKey !== undefined) this.fill(ids, count);
    while (ids.length < count) {
      ids.push(await this.waitForId(key));
      this.fill(ids, count);
    }
    return ids;
  }

  /** Rejects unless every segment of this buffer is of kind `key` (nothing loaded yet passes). */
  private expectKind(key: string): void {
    const retired = this.retiredFor;
    if (retired !== undefined && this.at >= this.end) throw new KindChangedError(this.tag, retired);
    if (this.kindKey !== undefined && this.kindKey !== key)
      throw new KindChangedError(this.tag, this.tagKind as TagKind);
  }

  /**
   * `count` IDs as runs of consecutive IDs, increasing, above every ID this buffer handed out before
   * and below every one it hands out after. What is left of the current segment and the loaded next
   * one comes first. A count a segment covers waits for loads as `nextMany` does; a larger one takes
   * the rest straight from the store in one `advance`, which also reserves this buffer's next
   * segment right behind the grant, so the one-ID routes go on without waiting for a load.
   */
  async grant(count: number, key = ''): Promise<IdRun[]> {
    const runs: IdRun[] = [];
    let left = count;
    const deadline = this.clock.now() + this.options.segmentWaitMs;
    // Each round waits for one load, or ends with the one direct advance; the bound is a guard.
    for (let round = 0; ; round++) {
      this.expectKind(key);
      if (this.stopped) throw this.unavailable();
      // More than a segment holds: no load starts on the way, so the advance below can follow.
      if (this.kindKey !== undefined)
        left -= this.takeRuns(runs, left, !(this.loads > 0 && left > this.step));
      else this.startLoad();
      if (left === 0) return runs;
      if (round >= 16) throw this.unavailable();
      if (this.loads > 0 && left > this.step && this.loading === undefined) {
        if (this.failure !== undefined && this.clock.now() - this.failure.at < this.options.retryDelayMs)
          throw this.unavailable();
        const run = await this.waitWithin(this.advanceDirect(left, key), deadline);
        addRun(runs, run.start, run.end);
        return runs;
      }
      // A load in flight settles first: a direct advance must not overtake it.
      if (this.loading === undefined) this.startLoad();
      const loading = this.loading;
      if (loading === undefined) throw this.unavailable();
      await this.waitWithin(loading, deadline);
    }
  }

  /** IDs handed out so far (as `state().issued`), without building the state: the sampler reads it for every tag each second. */
  get issued(): number {
    return this.issuedBefore + Math.min(this.at, this.end) - this.currentStart;
  }

  /** IDs left in both buffers (the current segment's rest and the next one's step). */
  get left(): number {
    const end = this.end;
    const at = this.at;
    return (end > at ? end - at : 0) + (this.nextRange ? this.nextRange.step : 0);
  }

  /** Segment loads that worked and that failed; the dynamic step; whether the next segment is in. Plain fields, read for every tag each second. */
  get loadCount(): number {
    return this.loads;
  }

  get loadFailureCount(): number {
    return this.loadFailures;
  }

  get dynamicStep(): number {
    return this.step;
  }

  get nextReady(): boolean {
    return this.nextRange !== undefined;
  }

  state(): SegmentBufferState {
    const current = this.currentSlot();
    const next = this.nextRange;
    const other: SegmentSlot = next ? { value: next.start, max: next.max, step: next.step } : this.previous;
    return {
      tag: this.tag,
      initialized: this.loads > 0,
      nextReady: next !== undefined,
      loading: this.loading !== undefined,
      current,
      next: next && { ...next },
      pos: this.pos,
      slots: this.pos === 0 ? [current, { ...other }] : [{ ...other }, current],
      step: this.step,
      minStep: this.minStep,
      loads: this.loads,
      lastLoadAt: this.lastLoadAt,
      issued: this.issuedBefore + Math.min(this.at, this.end) - this.currentStart,
      loadFailures: this.loadFailures,
      lastLoadMs: this.lastLoadMs,
      lastError: this.failure && {
        code: this.failure.error.code,
        message: this.failure.error.message,
        at: this.failure.at,
      },
    };
  }

  private currentSlot(): SegmentSlot {
    const base = this.base ?? 0n;
    return { value: base + BigInt(this.at), max: base + BigInt(this.end), step: this.currentStep };
  }

  private fill(out: SegmentId[], count: number): void {
    while (out.length < count) {
      const base = this.base;
      let id = this.at;
      const end = Math.min(this.end, id + (count - out.length));
      if (id < end) {
        if (base === undefined) {
          for (; id < end; id++) out.push(id);
          this.value = end;
        } else {
          for (; id < end; id++) out.push(base + BigInt(id));
          this.bigValue = end;
        }
        if (end - 1 > this.preloadAfter) this.startLoad();
      } else if (!this.switchSegment()) {
        return;
      }
    }
  }

  /**
   * Moves up to `count` buffered IDs into `out` as runs and answers how many; never waits. With
   * `load` false it starts no load, not even past the 10% mark.
   */
  private takeRuns(out: IdRun[], count: number, load: boolean): number {
    let taken = 0;
    while (taken < count) {
      const at = this.at;
      const end = Math.min(this.end, at + (count - taken));
      if (at < end) {
        const base = this.base;
        const start = base === undefined ? BigInt(at) : base + BigInt(at);
        const stop = start + BigInt(end - at);
        if (base === undefined) this.value = end;
        else this.bigValue = end;
        if (load && end - 1 > this.preloadAfter) this.startLoad();
        addRun(out, start, stop);
        taken += end - at;
      } else {
        const next = this.nextRange;
        if (next === undefined) {
          if (load) this.startLoad();
          break;
        }
        this.nextRange = undefined;
        this.install(next);
      }
    }
    return taken;
  }

  /** Makes the loaded next segment current; without one, starts a load and answers false. */
  private switchSegment(): boolean {
    const next = this.nextRange;
    if (next === undefined) {
      this.startLoad();
      return false;
    }
    this.nextRange = undefined;
    this.install(next);
    return true;
  }

  private install(range: Range): void {
    this.issuedBefore += Math.min(this.at, this.end) - this.currentStart;
    // The first segment goes into Leaf's slot 0; every later one into the other slot, which then
    // becomes the one in use.
    if (this.currentStep > 0) {
      this.previous = this.currentSlot();
      this.pos = this.pos === 0 ? 1 : 0;
    }
    if (range.start >= SAFE_MIN && range.max <= SAFE_MAX + 1n) {
      this.base = undefined;
      this.value = Number(range.start);
      this.max = Number(range.max);
      this.bigValue = 0;
      this.bigMax = 0;
    } else {
      this.base = range.start;
      this.value = 0;
      this.max = 0;
      this.bigValue = 0;
      this.bigMax = range.step;
    }
    this.currentStart = this.at;
    this.currentStep = range.step;
    this.preloadAfter = this.end - this.options.preloadBelowIdle * range.step;
  }

  private startLoad(): void {
    if (
      this.loading !== undefined ||
      this.nextRange !== undefined ||
      this.retiredFor !== undefined ||
      this.stopped
    )
      return;
    if (this.failure !== undefined && this.clock.now() - this.failure.at < this.options.retryDelayMs) return;
    this.preloadAfter = Number.POSITIVE_INFINITY;
    this.loading = this.load()
      .then(
        (range) => {
          this.failure = undefined;
          if (this.at >= this.end) this.install(range);
          else this.nextRange = range;
        },
        (error: unknown) => this.loadFailed(error),
      )
      .finally(() => {
        this.loading = undefined;
      });
  }

  private loadFailed(error: unknown): void {
    const failure = isFrondError(error)
      ? error
      : new FrondError('INTERNAL', `loading a segment of ${this.tag} failed: ${describeError(error)}`, {
          cause: error,
        });
    this.failure = { error: failure, at: this.clock.now() };
    this.loadFailures++;
    // A later request past the 10% mark tries again (after retryDelayMs).
    if (this.at < this.end) this.preloadAfter = this.end - this.options.preloadBelowIdle * this.currentStep;
    // An unknown tag is a client's mistake, not the node's: not worth a warning.
    const level = failure.code === 'TAG_NOT_FOUND' ? 'debug' : 'warn';
    this.logger.log(level, 'segment.load_failed', {
      tag: this.tag,
      code: failure.code,
      error: failure.message,
    });
  }

  /**
   * One advance by `count` plus this buffer's step, as the buffer's load (so no other load runs
   * beside it): the first `count` IDs are the grant's, the rest becomes the current segment. Called
   * only with both segments used up and no load in flight. A grant whose advance would pass
   * 2^63 - 1 is refused alone: the tag may still have room for smaller ones.
   */
  private advanceDirect(count: number, key: string): Promise<IdRun> {
    const step = this.step;
    const total = count + step <= MAX_TABLE_STEP ? count + step : count;
    const own = total - count;
    const startedAt = this.clock.now();
    let exhausted: FrondError | undefined;
    const reserved = this.reserve(total).then((allocation) => {
      this.checkKind(allocation);
      return this.toRange(allocation);
    });
    this.preloadAfter = Number.POSITIVE_INFINITY;
    this.loading = reserved
      .then(
        (range) => {
          this.failure = undefined;
          this.lastLoadMs = this.clock.now() - startedAt;
          this.issuedBefore += count;
          this.logger.log('info', 'segment.loaded', {
            tag: this.tag,
            start: range.start.toString(),
            max: range.max.toString(),
            step: range.step,
            ms: this.lastLoadMs,
          });
          this.observer.segmentLoaded(this.tag, this.lastLoadMs);
          if (own > 0) this.install({ start: range.start + BigInt(count), max: range.max, step: own });
        },
        (error: unknown) => {
          if (isFrondError(error, 'ID_RANGE_EXHAUSTED')) exhausted = error;
          else this.loadFailed(error);
        },
      )
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading.then(async () => {
      if (exhausted !== undefined) {
        throw new FrondError(
          'ID_RANGE_EXHAUSTED',
          `tag ${this.tag}: a grant of ${count} IDs would pass 2^63 - 1; ask for fewer (${exhausted.message})`,
        );
      }
      const range = await reserved.catch(() => undefined);
      if (range === undefined) {
        this.expectKind(key);
        throw this.unavailable();
      }
      return { start: range.start, end: range.start + BigInt(count) };
    });
  }

  /** Waits for `promise` until `deadline`, else SEGMENT_UNAVAILABLE (the load goes on without us). */
  private async waitWithin<T>(promise: Promise<T>, deadline: number): Promise<T> {
    const remaining = deadline - this.clock.now();
    const settled = remaining <= 0 ? undefined : await within(this.clock, promise, remaining);
    if (settled === undefined) {
      throw new FrondError(
        'SEGMENT_UNAVAILABLE',
        `no IDs buffered for tag ${this.tag}: the segment load did not finish within ${this.options.segmentWaitMs} ms (database slow or down); retry`,
      );
    }
    return settled.value;
  }

  private async load(): Promise<Range> {
    const startedAt = this.clock.now();
    // Loads 1 and 2 use the table's step; from the third on, the step follows the traffic.
    const requested =
      this.loads < 2 || this.options.dynamicStep === false
        ? undefined
        : nextStep(this.step, startedAt - this.lastLoadAt, this.minStep, this.options.stepRules);
    let allocation: Allocation;
    try {
      allocation = await this.reserve(requested);
    } catch (error) {
      // A dynamic step that no longer fits below 2^63 - 1: the table's own step may still fit.
      if (requested === undefined || !isFrondError(error, 'ID_RANGE_EXHAUSTED')) throw error;
      allocation = await this.reserve(undefined);
    }
    this.checkKind(allocation);
    const range = this.toRange(allocation);
    const previousStep = this.step;
    // The step's clock starts at load 2, as Leaf's; stats show when the first load was made.
    this.lastLoadAt = startedAt;
    const after = stepsAfterLoad(allocation);
    this.step = after.step;
    this.minStep = after.minStep;
    this.loads++;
    this.lastLoadMs = this.clock.now() - startedAt;
    this.logger.log('info', 'segment.loaded', {
      tag: this.tag,
      start: range.start.toString(),
      max: range.max.toString(),
      step: range.step,
      ms: this.lastLoadMs,
    });
    this.observer.segmentLoaded(this.tag, this.lastLoadMs);
    if (this.loads > 2 && this.step !== previousStep) {
      this.logger.log('info', 'segment.step_changed', { tag: this.tag, from: previousStep, to: this.step });
    }
    return range;
  }

  /** One `advance`: TAG_NOT_FOUND without a row, STORE_UNAVAILABLE when the outcome is unknown. */
  private async reserve(step: number | undefined): Promise<Allocation> {
    let allocation: Allocation | undefined;
    try {
      allocation = await this.store.advance(this.tag, step);
    } catch (error) {
      if (isFrondError(error)) throw error;
      // The outcome is unknown: the UPDATE may have committed. The range is thrown away (a gap),
      // never guessed at: another node may already hold the next one.
      throw new FrondError(
        'STORE_UNAVAILABLE',
        `loading a segment of ${this.tag} from ${this.store.description} failed: ${describeError(error)}`,
        { cause: error },
      );
    }
    if (allocation === undefined) {
      throw tagNotFound(this.tag);
    }
    return allocation;
  }

  /**
   * The first grant sets the buffer's kind; a grant of another kind is thrown away (a gap, never
   * served under the old kind) and retires the buffer, so the IDs it still holds are served under
   * the kind they were granted with and nothing more is loaded into it.
   */
  private checkKind(allocation: Allocation): void {
    const key = kindKey(allocation.kind);
    if (this.kindKey === undefined) {
      this.kindKey = key;
      this.tagKind = allocation.kind;
    } else if (key !== this.kindKey) {
      this.retiredFor = allocation.kind;
      this.logger.log('warn', 'segment.kind_changed', { tag: this.tag, from: this.kindKey, to: key });
      throw new KindChangedError(this.tag, allocation.kind);
    }
  }

  private toRange(allocation: Allocation): Range {
    const { maxId, step } = allocation;
    if (!Number.isSafeInteger(step) || step <= 0 || step > MAX_TABLE_STEP) {
      throw new FrondError(
        'INVALID_CONFIG',
        `tag ${this.tag} has step ${step} in leaf_alloc; set a step from 1 to ${MAX_TABLE_STEP}`,
      );
    }
    const max = maxId;
    const start = max - BigInt(step);
    if (start < MIN_SEGMENT_ID || max > MAX_SEGMENT_ID) {
      throw new FrondError(
        'ID_RANGE_EXHAUSTED',
        `tag ${this.tag}: the store returned [${start}, ${max}), outside the signed 64-bit range`,
      );
    }
    if (start < this.highest) {
      throw new FrondError(
        'SEGMENT_REGRESSED',
        `tag ${this.tag}: the store returned [${start}, ${max}), below ${this.highest}, which this node already reached; was max_id lowered?`,
      );
    }
    this.highest = max;
    return { start, max, step };
  }

  private async waitForId(key: string): Promise<SegmentId> {
    const deadline = this.clock.now() + this.options.segmentWaitMs;
    // Each round waits for one load to settle; the deadline is the bound. A waiter can lose many
    // loads in a row to others without any failing: 4 pipelined connections × 1,024 INCRs on a
    // step-50 tag lost 8 in a row 896 times in 80,000 when the bound was 8 rounds, and answered
    // SEGMENT_UNAVAILABLE from a healthy store. A failed load ends the wait at once (below); the
    // round bound only guards against a load that settles without changing anything.
    for (let round = 0; round < WAIT_ROUNDS; round++) {
      this.expectKind(key);
      const id = this.kindKey === undefined ? this.startLoadOnly() : this.tryNext();
      if (id !== undefined) return id;
      const loading = this.loading;
      if (loading === undefined) throw this.unavailable();
      const remaining = deadline - this.clock.now();
      if (remaining <= 0 || (await within(this.clock, loading, remaining)) === undefined) {
        throw new FrondError(
          'SEGMENT_UNAVAILABLE',
          `no IDs buffered for tag ${this.tag}: the segment load did not finish within ${this.options.segmentWaitMs} ms (database slow or down); retry`,
        );
      }
    }
    throw this.unavailable();
  }

  /** Before the first grant nothing is served (its kind is unknown): a load starts, no ID. */
  private startLoadOnly(): undefined {
    this.startLoad();
    return undefined;
  }

  private unavailable(): FrondError {
    if (this.stopped)
      return new FrondError(
        'SEGMENT_UNAVAILABLE',
        `tag ${this.tag}: this node is stopping; retry on another node`,
      );
    const failure = this.failure;
    if (failure === undefined) {
      return new FrondError('SEGMENT_UNAVAILABLE', `no IDs buffered for tag ${this.tag}; retry`);
    }
    // TAG_NOT_FOUND, SEGMENT_REGRESSED and the like: another load cannot mend them (`permanent`).
    if (ERROR_CODES[failure.error.code].permanent) return failure.error;
    return new FrondError(
      'SEGMENT_UNAVAILABLE',
      `no IDs buffered for tag ${this.tag}: the last segment load failed ${this.clock.now() - failure.at} ms ago (${failure.error.message}); retry`,
      { cause: failure.error },
    );
  }
}

/** Appends `[start, end)`; a run that starts where the last one ended extends it instead. */
function addRun(runs: IdRun[], start: bigint, end: bigint): void {
  const last = runs[runs.length - 1];
  if (last !== undefined && last.end === start) last.end = end;
  else runs.push({ start, end });
}
