import { type Clock, Sleeps, sleep } from './clock.js';
import {
  ClockMovedBackwardsError,
  describeError,
  FrondError,
  isFrondError,
  SequenceExhaustedError,
} from './errors.js';
import type { Logger } from './logger.js';
import { SnowflakeGenerator } from './snowflake-generator.js';
import { LEAF_LAYOUT, type SnowflakeLayout } from './snowflake-layout.js';
import type { WorkerIdSource, WorkerLease } from './worker-id-source.js';

export interface SnowflakeOptions {
  /** Bits of time, worker ID and sequence, the time unit and the epoch (`LEAF_LAYOUT` by default). */
  layout: SnowflakeLayout;
  /** Each millisecond's sequence starts at a random 0–99 (Leaf), not at 0, so IDs spread over shards. */
  randomSequence: boolean;
  /** A clock that moves back by at most this while running is waited for (twice the offset, as Leaf). Leaf: 5 ms. */
  clockToleranceMs: number;
  /** At start, a clock behind the last recorded timestamp by at most this is waited for; more refuses to start. */
  clockStartupWaitMs: number;
  /**
   * The node records a timestamp this far ahead of its clock before using it, so that after a crash
   * (SIGKILL, power loss) a restart knows a bound on every timestamp the old process could have used.
   */
  recordAheadMs: number;
  /** How often the recorded timestamp is moved forward. */
  recordEveryMs: number;
}

export const DEFAULT_SNOWFLAKE_OPTIONS: SnowflakeOptions = {
  layout: LEAF_LAYOUT,
  randomSequence: true,
  clockToleranceMs: 5,
  clockStartupWaitMs: 5_000,
  recordAheadMs: 2_000,
  recordEveryMs: 500,
};

/** Guards against an endless loop; each round either waits or throws. */
const MAX_ATTEMPTS = 4;

/**
 * A snowflake node: a worker ID from a source, a generator, and the rules about time. The clock is
 * checked at start against the last timestamp the worker ID used (even across crashes, thanks to the
 * timestamp recorded ahead), and on every call while running.
 *
 * With a lease-based source the worker ID can be lost while running (`source.valid()` turns false):
 * the node then answers WORKER_ID_UNAVAILABLE until the source holds a worker ID again, and starts a
 * new generator for it only once the clock has passed the new lease's last timestamp and a time
 * ahead is recorded, exactly as at start.
 */
export class SnowflakeService {
  private cancelTimer: (() => void) | undefined;
  private recording: Promise<void> | undefined;
  private closed = false;
  /** Set once the worker ID is lost; cleared when a regained one is recorded and its generator in use. */
  private stale = false;
  /** Counts regained leases, so that an older adoption still waiting gives way to a newer one. */
  private generation = 0;
  /**
   * The highest timestamp read from the source for the worker ID held now, or recorded for it since.
   * A record is a promise about the past ("nothing above this was used"), so it only ever grows: a
   * clock that steps back 30 s while serving must not write a time 30 s lower, or a restart after a
   * crash would trust it and issue IDs the crashed process already issued.
   */
  private recorded: number;
  /** Sleeps that closing cuts short, so a closed node leaves no timer behind. */
  private readonly sleeps: Sleeps;
  backwardsEvents = 0;
  /** IDs handed out since start. */
  issued = 0;

  private constructor(
    private generator: SnowflakeGenerator,
    private readonly source: WorkerIdSource,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: SnowflakeOptions,
    private readonly random: () => number,
    recorded: number,
  ) {
    this.sleeps = new Sleeps(clock);
    this.recorded = recorded;
  }

  static async start(
    source: WorkerIdSource,
    clock: Clock,
    logger: Logger,
    options: SnowflakeOptions = DEFAULT_SNOWFLAKE_OPTIONS,
    random: () => number = Math.random,
  ): Promise<SnowflakeService> {
    const lease = await source.acquire();
    try {
      return await SnowflakeService.begin(source, lease, clock, logger, options, random);
    } catch (error) {
      // Nothing was issued: give the worker ID back as it was, so that no client or timer of the
      // source keeps a process alive that failed to start.
      await source.release(lease.lastTimestamp).catch(() => {});
      throw error;
    }
  }

  private static async begin(
    source: WorkerIdSource,
    lease: WorkerLease,
    clock: Clock,
    logger: Logger,
    options: SnowflakeOptions,
    random: () => number,
  ): Promise<SnowflakeService> {
    const layout = options.layout;
    const workerId = layout.assertWorkerId(lease.workerId);
    // Listened for before any wait: a lease lost and claimed again while this start waits for its
    // clock comes back as another worker ID (or the same one, used by another node meanwhile), and
    // the record below then lands on that claim. Heard only after the start, the regain was missed
    // and the generator began on the lost worker ID beside its new holder (75,693 IDs twice, on
    // PostgreSQL and MariaDB leases). A regain heard meanwhile is adopted before the service serves.
    let regainedMeanwhile: WorkerLease | undefined;
    let onRegain: ((regained: WorkerLease) => void) | undefined;
    source.onRegained?.((regained) => {
      if (onRegain === undefined) regainedMeanwhile = regained;
      else onRegain(regained);
    });
    let now = clock.now();
    if (now < layout.epoch) {
      throw new FrondError(
        'INVALID_CONFIG',
        `the clock (${now}) is before the snowflake epoch ${layout.epoch}`,
      );
    }
    if (now >= layout.endsAt) {
      throw new FrondError(
        'TIMESTAMP_OVERFLOW',
        `${layout.timeBits} bits of ${layout.timeUnitMs === 1 ? 'milliseconds' : `${layout.timeUnitMs} ms units`} from the epoch ${layout.epoch} are used up`,
      );
    }
    const behind = lease.lastTimestamp - now;
    // An earlier holder may have used any ms of the unit of its last timestamp: the first ID here
    // is in a later unit (in 1 ms units, Leaf's, this is the last timestamp itself).
    const floor = layout.lastMsOfUnit(lease.lastTimestamp);
    if (behind >= 0) {
      if (behind > options.clockStartupWaitMs) {
        throw new FrondError(
          'CLOCK_MOVED_BACKWARDS',
          `the clock is ${behind} ms behind ${new Date(lease.lastTimestamp).toISOString()}, the last timestamp worker ${workerId} used (${source.description}); fix the clock or start later`,
        );
      }
      logger.log('warn', 'snowflake.clock_behind_at_start', { workerId, behindMs: behind });
      // Timers run on the monotonic clock and the wall clock may be slewed, so one sleep of the gap
      // can end a millisecond short: sleep the rest again, up to 1 s past the allowed wait.
      const giveUpAt = now + options.clockStartupWaitMs + 1_000 + layout.timeUnitMs - 1;
      while (now <= floor) {
        if (now >= giveUpAt) {
          throw new FrondError(
            'CLOCK_MOVED_BACKWARDS',
            `the clock did not pass ${floor} after waiting ${floor - lease.lastTimestamp + behind + 1} ms`,
          );
        }
        await sleep(clock, floor - now + 1);
        now = clock.now();
      }
    } else if (now <= floor) {
      // Ahead of the last timestamp but in its unit: the rest of the unit, at most one unit.
      await sleep(clock, floor - now + 1);
      now = clock.now();
    }
    // `now` is past the lease's last timestamp here, so this is above everything read.
    const recordedThrough = Math.max(floor, now + options.recordAheadMs);
    await source.record(recordedThrough);
    const generator = new SnowflakeGenerator({
      workerId,
      layout,
      clock,
      randomSequence: options.randomSequence,
      random,
      lastTimestamp: floor,
      recordedThrough,
    });
    const service = new SnowflakeService(generator, source, clock, logger, options, random, recordedThrough);
    onRegain = (regained) => service.regain(regained);
    // Stale at once, until the regained lease is adopted: no ID goes out on the lost worker ID.
    if (regainedMeanwhile !== undefined) service.regain(regainedMeanwhile);
    service.scheduleRecord();
    logger.log('info', 'snowflake.started', {
      workerId,
      source: source.description,
      layout: layout.bits,
      timeUnitMs: layout.timeUnitMs,
    });
    const warning = layout.timeLeftWarning(now);
    if (warning !== undefined)
      logger.log('warn', 'snowflake.time_bits_running_out', { endsAt: layout.endsAt, message: warning });
    return service;
  }

  get workerId(): number {
    return this.generator.workerId;
  }

  get layout(): SnowflakeLayout {
    return this.options.layout;
  }

  get epoch(): number {
    return this.options.layout.epoch;
  }

  /** The largest clock step back that is waited out instead of refused (`--clock-tolerance-ms`). */
  get clockToleranceMs(): number {
    return this.options.clockToleranceMs;
  }

  get lastTimestamp(): number {
    return this.generator.lastTimestamp;
  }

  /** ms until the layout's time bits run out, by the node's clock (negative once they have). */
  timeLeftMs(): number {
    return this.options.layout.timeLeftMs(this.clock.now());
  }

  /** A warning while the time bits have under three years left (`TIME_LEFT_WARNING_MS`). */
  timeLeftWarning(): string | undefined {
    return this.options.layout.timeLeftWarning(this.clock.now());
  }

  /** Whether IDs can be handed out now: not closed, and the worker ID is held (a lease can be lost). */
  get available(): boolean {
    return !this.closed && !this.stale && this.source.valid?.() !== false;
  }

  /**
   * The next ID if it can be had at once, else `undefined`: never throws, never waits (the same
   * contract as `SegmentAllocator.tryNext` and the SDK's). `next()` then waits out what can be waited
   * out, or rejects with the reason (clock behind, worker ID lost, shutting down).
   */
  tryNext(): bigint | undefined {
    if (!this.holding()) return undefined;
    try {
      const id = this.generator.next();
      this.issued++;
      return id;
    } catch {
      return undefined;
    }
  }

  async next(): Promise<bigint> {
    const [id] = await this.nextMany(1);
    return id as bigint;
  }

  /**
   * `count` increasing IDs, waiting out a clock that moved back a little. In units above 1 ms a
   * batch may span several units: each wait for the next unit that brought IDs is not an attempt.
   */
  async nextMany(count: number): Promise<bigint[]> {
    const ids: bigint[] = [];
    let progress = 0;
    for (let attempt = 1; ; attempt++) {
      this.assertHolding();
      try {
        while (ids.length < count) ids.push(this.generator.next());
        this.issued += count;
        return ids;
      } catch (error) {
        if (error instanceof SequenceExhaustedError && ids.length > progress) {
          progress = ids.length;
          attempt = 0;
        }
        if (attempt >= MAX_ATTEMPTS || !(await this.recover(error))) throw error;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelTimer?.();
    this.sleeps.wakeAll();
    await this.recording?.catch(() => {});
    // The last timestamp actually used; sources keep what they recorded ahead when it is higher.
    await this.source.release(this.generator.lastTimestamp);
  }

  /** Waits out what can be waited out; answers false for errors that must reach the caller. */
  private async recover(error: unknown): Promise<boolean> {
    if (error instanceof ClockMovedBackwardsError) {
      this.backwardsEvents++;
      const tolerable = error.offsetMs <= this.options.clockToleranceMs;
      this.logger.log('warn', 'snowflake.clock_moved_backwards', {
        workerId: this.workerId,
        offsetMs: error.offsetMs,
        action: tolerable ? 'wait' : 'refuse',
      });
      if (!tolerable) return false;
      await sleep(this.clock, 2 * error.offsetMs);
      return true;
    }
    if (error instanceof SequenceExhaustedError) {
      await this.sleeps.sleep(error.waitMs);
      return !this.closed;
    }
    if (isFrondError(error, 'TIMESTAMP_NOT_RECORDED')) {
      await this.record();
      return true;
    }
    return false;
  }

  /** Throws unless IDs may be handed out; a lost worker ID stays lost until `regain` swaps it. */
  private assertHolding(): void {
    if (this.closed) throw closedError();
    if (!this.holding()) throw this.unavailable();
  }

  /** Whether the worker ID is held; the first time the source says it is not, it is lost for good. */
  private holding(): boolean {
    if (this.closed || this.stale) return false;
    if (this.source.valid?.() !== false) return true;
    this.stale = true;
    this.logger.log('warn', 'snowflake.worker_id_lost', {
      workerId: this.workerId,
      source: this.source.description,
    });
    return false;
  }

  private unavailable(): FrondError {
    return new FrondError(
      'WORKER_ID_UNAVAILABLE',
      `worker ID ${this.workerId} is no longer held (${this.source.description}); waiting for a new lease`,
    );
  }

  /** The source holds a worker ID again: the old generator is never used again from here on. */
  private regain(lease: WorkerLease): void {
    this.stale = true;
    const generation = ++this.generation;
    this.adopt(lease, generation).catch((error: unknown) => {
      this.logger.log('error', 'snowflake.regain_failed', { error: describeError(error) });
    });
  }

  private async adopt(lease: WorkerLease, generation: number): Promise<void> {
    const layout = this.options.layout;
    const workerId = layout.assertWorkerId(lease.workerId);
    const previous = this.generator;
    // Above the lease's last timestamp (fencing against the worker ID's earlier holder) and above
    // this node's own last one, so its IDs keep increasing whichever worker ID it now holds; past
    // the end of that timestamp's unit (the timestamp itself in 1 ms units).
    const floor = layout.lastMsOfUnit(Math.max(lease.lastTimestamp, previous.lastTimestamp));
    const current = () => !this.closed && generation === this.generation;
    let warned = false;
    while (current()) {
      const now = this.clock.now();
      if (now <= floor) {
        if (!warned) {
          this.logger.log('warn', 'snowflake.clock_behind_lease', { workerId, behindMs: floor - now });
          warned = true;
        }
        // At most a second at a time, so that a clock that jumps meanwhile is read again.
        await this.sleeps.sleep(Math.min(floor - now + 1, 1_000));
        continue;
      }
      const through = Math.max(floor, now + this.options.recordAheadMs);
      try {
        await this.source.record(through);
      } catch (error) {
        this.logger.log('error', 'snowflake.record_failed', { workerId, error: describeError(error) });
        await this.sleeps.sleep(this.options.recordEveryMs);
        continue;
      }
      if (!current()) return;
      this.recorded = through;
      this.generator = new SnowflakeGenerator({
        workerId,
        layout,
        clock: this.clock,
        randomSequence: this.options.randomSequence,
        random: this.random,
        lastTimestamp: floor,
        recordedThrough: through,
      });
      this.stale = false;
      this.logger.log('info', 'snowflake.worker_id_regained', {
        workerId,
        previousWorkerId: previous.workerId,
        source: this.source.description,
      });
      return;
    }
  }

  private record(): Promise<void> {
    if (this.recording === undefined) {
      // Never below what is recorded already: with the clock stepped back, `now + recordAheadMs` is
      // lower than the last record, and writing it would shrink the bound a restart relies on.
      const through = Math.max(this.recorded, this.clock.now() + this.options.recordAheadMs);
      if (through === this.recorded) return Promise.resolve();
      // The generator of the moment: a record that ends after a regain must not widen the new one.
      const generator = this.generator;
      this.recording = this.source
        .record(through)
        .then(
          () => {
            if (generator !== this.generator) return;
            this.recorded = Math.max(this.recorded, through);
            generator.allowThrough(through);
          },
          (error: unknown) => {
            this.logger.log('error', 'snowflake.record_failed', {
              workerId: this.workerId,
              error: describeError(error),
            });
          },
        )
        .finally(() => {
          this.recording = undefined;
        });
    }
    return this.recording;
  }

  private scheduleRecord(): void {
    if (this.closed) return;
    this.cancelTimer = this.clock.schedule(() => {
      // Without the worker ID there is nothing to record; `adopt` records for a regained one.
      if (!this.available) return this.scheduleRecord();
      void this.record().finally(() => this.scheduleRecord());
    }, this.options.recordEveryMs);
  }
}

function closedError(): FrondError {
  return new FrondError('SHUTTING_DOWN', 'the snowflake generator is shutting down');
}
