import type { Clock } from './clock.js';
import { ClockMovedBackwardsError, FrondError } from './errors.js';
import {
  assertWorkerId,
  MAX_SEQUENCE,
  SEQUENCE_BITS,
  TIMESTAMP_SPAN_MS,
  WORKER_ID_BITS,
} from './snowflake-layout.js';

export interface SnowflakeGeneratorOptions {
  workerId: number;
  epoch: number;
  clock: Clock;
  /**
   * Leaf starts each new millisecond's sequence at a random 0..99: at low traffic every ID would
   * otherwise end in sequence 0, and users who shard on `id % N` get skewed buckets.
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
 * working clock; a clock that stands still ends in SEQUENCE_EXHAUSTED instead of a hang.
 */
const SPIN_LIMIT = 2 ** 20;
const TIMESTAMP_SHIFT = BigInt(SEQUENCE_BITS + WORKER_ID_BITS);

/**
 * Leaf's snowflake: 1 sign bit, 41 bits of ms since the epoch, 10 bits of worker ID, 12 bits of
 * sequence. Never wraps the sequence within a millisecond (it waits for the next one) and never
 * issues an ID for a timestamp at or below one it used before: a clock that moved back throws
 * ClockMovedBackwardsError, and the caller decides whether to wait.
 */
export class SnowflakeGenerator {
  readonly workerId: number;
  private last: number;
  private sequence = MAX_SEQUENCE;
  /** The high bits of every ID of the current millisecond: timestamp and worker ID. */
  private base = 0n;
  private readonly workerBits: bigint;
  private readonly clock: Clock;
  private readonly epoch: number;
  private readonly randomSequence: boolean;
  private readonly random: () => number;
  private recordedThrough: number;

  constructor(options: SnowflakeGeneratorOptions) {
    this.workerId = assertWorkerId(options.workerId);
    this.workerBits = BigInt(options.workerId) << BigInt(SEQUENCE_BITS);
    this.clock = options.clock;
    this.epoch = options.epoch;
    this.randomSequence = options.randomSequence;
    this.random = options.random;
    // With the sequence at its maximum, the first call in this millisecond waits for the next one.
    this.last = options.lastTimestamp;
    this.recordedThrough = options.recordedThrough;
  }

  /** The last timestamp put in an ID (or the one restored at start). */
  get lastTimestamp(): number {
    return this.last;
  }

  /** Allows timestamps up to `timestamp`, once it is recorded durably. Never lowers the limit. */
  allowThrough(timestamp: number): void {
    if (timestamp > this.recordedThrough) this.recordedThrough = timestamp;
  }

  next(): bigint {
    const now = this.clock.now();
    if (now === this.last) {
      if (this.sequence < MAX_SEQUENCE) return this.base + BigInt(++this.sequence);
      this.enter(this.waitNextMillisecond());
    } else if (now > this.last) {
      this.enter(now);
    } else {
      throw new ClockMovedBackwardsError(this.last - now);
    }
    return this.base + BigInt(this.sequence);
  }

  /** Moves to millisecond `t`; leaves the state untouched when it throws. */
  private enter(t: number): void {
    if (t > this.recordedThrough) {
      throw new FrondError(
        'TIMESTAMP_NOT_RECORDED',
        `timestamp ${t} is past ${this.recordedThrough}, the last one recorded for worker ${this.workerId}; retry`,
      );
    }
    const elapsed = t - this.epoch;
    if (elapsed >= TIMESTAMP_SPAN_MS || elapsed < 0) {
      throw new FrondError(
        'TIMESTAMP_OVERFLOW',
        `the clock (${new Date(t).toISOString()}) is outside the 41-bit range from the epoch ${this.epoch}`,
      );
    }
    this.base = (BigInt(elapsed) << TIMESTAMP_SHIFT) | this.workerBits;
    this.last = t;
    this.sequence = this.randomSequence ? Math.floor(this.random() * 100) : 0;
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
      `all 4096 IDs of millisecond ${last} are used and the clock did not move on; retry`,
    );
  }
}
