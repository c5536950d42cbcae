import type { Clock } from './clock.js';
import { ClockMovedBackwardsError, FrondError, SequenceExhaustedError } from './errors.js';
import { LEAF_LAYOUT, type SnowflakeLayout, unitOfElapsed } from './snowflake-layout.js';

export interface SnowflakeGeneratorOptions {
  workerId: number;
  /** Bits, time unit and epoch; Leaf's 41+10+12 in ms from Leaf's epoch when absent. */
  layout?: SnowflakeLayout;
  clock: Clock;
  /**
   * Leaf starts each new millisecond's sequence at a random 0..99: at low traffic every ID would
   * otherwise end in sequence 0, and users who shard on `id % N` get skewed buckets. With fewer
   * than 200 sequence values a unit, the start is random within the first half.
   */
  randomSequence: boolean;
  /** A number in [0, 1), as Math.random. */
  random: () => number;
  /** IDs are only issued for timestamps above this (ms since 1970); 0 when nothing is known. */
  lastTimestamp: number;
  /** IDs are only issued for timestamps up to this one, the last one recorded durably. */
  recordedThrough: number;
}

/**
 * How many times the generator reads the clock waiting for the next millisecond once 4096 IDs are
 * used in one. About 30 ns a read, so 2^20 reads are some 30 ms, far more than the 1 ms it takes a
 * working clock; a clock that stands still ends in SEQUENCE_EXHAUSTED instead of a hang. Layouts in
 * coarser units do not spin: they throw `SequenceExhaustedError`, and the service sleeps.
 */
const SPIN_LIMIT = 2 ** 20;

/**
 * A snowflake generator on one layout (Leaf's by default: 1 sign bit, 41 bits of ms since the
 * epoch, 10 bits of worker ID, 12 bits of sequence). Never wraps the sequence within a time unit
 * (it waits for the next one) and never issues an ID for a time unit at or below one it used
 * before: a clock that moved back throws ClockMovedBackwardsError, and the caller decides whether
 * to wait. In 1 ms units (Leaf's) the path is Leaf's, ms by ms; in coarser units the same rules
 * hold per unit.
 */
export class SnowflakeGenerator {
  readonly workerId: number;
  readonly layout: SnowflakeLayout;
  /** The clock reading that entered the current unit (or the one restored at start). */
  private last: number;
  /** The unit of `last`; only read in units above 1 ms. */
  private lastUnit: number;
  private sequence: number;
  /** The high bits of every ID of the current unit: time and worker ID. */
  private base = 0n;
  private readonly workerBits: bigint;
  private readonly timeShift: bigint;
  private readonly maxSequence: number;
  /** A new unit's sequence starts at a random 0..randomSpan − 1 (100, Leaf's, unless the sequence is short). */
  private readonly randomSpan: number;
  private readonly unitMs: number;
  private readonly unitSpan: number;
  private readonly clock: Clock;
  private readonly epoch: number;
  private readonly randomSequence: boolean;
  private readonly random: () => number;
  private recordedThrough: number;

  constructor(options: SnowflakeGeneratorOptions) {
    const layout = options.layout ?? LEAF_LAYOUT;
    this.layout = layout;
    this.workerId = layout.assertWorkerId(options.workerId);
    this.workerBits = BigInt(options.workerId) << layout.workerShift;
    this.timeShift = layout.timeShift;
    this.maxSequence = layout.maxSequence;
    this.randomSpan = Math.min(100, Math.floor((layout.maxSequence + 1) / 2));
    this.unitMs = layout.timeUnitMs;
    this.unitSpan = layout.unitSpan;
    this.clock = options.clock;
    this.epoch = layout.epoch;
    this.randomSequence = options.randomSequence;
    this.random = options.random;
    // With the sequence at its maximum, the first call in this unit waits for the next one.
    this.sequence = layout.maxSequence;
    this.last = options.lastTimestamp;
    this.lastUnit = layout.unitOf(options.lastTimestamp);
    this.recordedThrough = options.recordedThrough;
  }

  /** The last timestamp put in an ID, as the clock read it (or the one restored at start). */
  get lastTimestamp(): number {
    return this.last;
  }

  /** Allows timestamps up to `timestamp`, once it is recorded durably. Never lowers the limit. */
  allowThrough(timestamp: number): void {
    if (timestamp > this.recordedThrough) this.recordedThrough = timestamp;
  }

  next(): bigint {
    const now = this.clock.now();
    if (this.unitMs !== 1) return this.nextInUnits(now);
    if (now === this.last) {
      if (this.sequence < this.maxSequence) return this.base + BigInt(++this.sequence);
      const t = this.waitNextMillisecond();
      this.enter(t, t - this.epoch);
    } else if (now > this.last) {
      this.enter(now, now - this.epoch);
    } else {
      throw new ClockMovedBackwardsError(this.last - now);
    }
    return this.base + BigInt(this.sequence);
  }

  /** Units above 1 ms: the same rules by unit; a used-up unit is waited for by the caller. */
  private nextInUnits(now: number): bigint {
    const unit = unitOfElapsed(now - this.epoch, this.unitMs);
    if (unit === this.lastUnit) {
      if (this.sequence < this.maxSequence) return this.base + BigInt(++this.sequence);
      const waitMs = this.layout.unitStart(unit + 1) - now;
      throw new SequenceExhaustedError(
        waitMs,
        `all ${this.maxSequence + 1} IDs of the ${this.unitMs} ms unit starting ${this.layout.unitStart(unit)} are used; the next unit starts in ${waitMs} ms`,
      );
    }
    if (unit < this.lastUnit) throw new ClockMovedBackwardsError(this.layout.unitStart(this.lastUnit) - now);
    this.enter(now, unit);
    return this.base + BigInt(this.sequence);
  }

  /** Moves to time unit `unit`, read at `t`; leaves the state untouched when it throws. */
  private enter(t: number, unit: number): void {
    if (t > this.recordedThrough) {
      throw new FrondError(
        'TIMESTAMP_NOT_RECORDED',
        `timestamp ${t} is past ${this.recordedThrough}, the last one recorded for worker ${this.workerId}; retry`,
      );
    }
    if (unit >= this.unitSpan || unit < 0) {
      throw new FrondError(
        'TIMESTAMP_OVERFLOW',
        `the clock (${new Date(t).toISOString()}) is outside the ${this.layout.timeBits}-bit range from the epoch ${this.epoch}`,
      );
    }
    this.base = (BigInt(unit) << this.timeShift) | this.workerBits;
    this.last = t;
    this.lastUnit = unit;
    this.sequence = this.randomSequence ? Math.floor(this.random() * this.randomSpan) : 0;
  }

  private waitNextMillisecond(): number {
    const last = this.last;
    for (let i = 0; i < SPIN_LIMIT; i++) {
      const t = this.clock.now();
      if (t > last) return t;
      if (t < last) throw new ClockMovedBackwardsError(last - t);
    }
    throw new FrondError(
      'SEQUENCE_EXHAUSTED',
      `all ${this.maxSequence + 1} IDs of millisecond ${last} are used and the clock did not move on; retry`,
    );
  }
}
