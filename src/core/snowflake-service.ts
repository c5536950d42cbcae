import { type Clock, sleep } from './clock.js';
import { ClockMovedBackwardsError, describeError, FrondError, isFrondError } from './errors.js';
import type { Logger } from './logger.js';
import { SnowflakeGenerator } from './snowflake-generator.js';
import { assertWorkerId, LEAF_EPOCH, TIMESTAMP_SPAN_MS } from './snowflake-layout.js';
import type { WorkerIdSource } from './worker-id-source.js';

export interface SnowflakeOptions {
  epoch: number;
  randomStart: boolean;
  /** A clock that moves back by at most this while running is waited for (twice the offset, as Leaf). Leaf: 5 ms. */
  backwardsToleranceMs: number;
  /** At start, a clock behind the last recorded timestamp by at most this is waited for; more refuses to start. */
  startupWaitMs: number;
  /**
   * The node records a timestamp this far ahead of its clock before using it, so that after a crash
   * (SIGKILL, power loss) a restart knows a bound on every timestamp the old process could have used.
   */
  recordAheadMs: number;
  /** How often the recorded timestamp is moved forward. */
  recordEveryMs: number;
}

export const DEFAULT_SNOWFLAKE_OPTIONS: SnowflakeOptions = {
  epoch: LEAF_EPOCH,
  randomStart: true,
  backwardsToleranceMs: 5,
  startupWaitMs: 5_000,
  recordAheadMs: 2_000,
  recordEveryMs: 500,
};

/** Guards against an endless loop; each round either waits or throws. */
const MAX_ATTEMPTS = 4;

/**
 * A snowflake node: a worker ID from a source, a generator, and the rules about time. The clock is
 * checked at start against the last timestamp the worker ID used (even across crashes, thanks to the
 * timestamp recorded ahead), and on every call while running.
 */
export class SnowflakeService {
  private cancelTimer: (() => void) | undefined;
  private recording: Promise<void> | undefined;
  private closed = false;
  backwardsEvents = 0;
  /** IDs handed out since start. */
  issued = 0;

  private constructor(
    private readonly generator: SnowflakeGenerator,
    private readonly source: WorkerIdSource,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: SnowflakeOptions,
  ) {}

  static async start(
    source: WorkerIdSource,
    clock: Clock,
    logger: Logger,
    options: SnowflakeOptions = DEFAULT_SNOWFLAKE_OPTIONS,
    random: () => number = Math.random,
  ): Promise<SnowflakeService> {
    const lease = await source.acquire();
    const workerId = assertWorkerId(lease.workerId);
    let now = clock.now();
    if (now < options.epoch) {
      throw new FrondError(
        'INVALID_CONFIG',
        `the clock (${now}) is before the snowflake epoch ${options.epoch}`,
      );
    }
    if (now - options.epoch >= TIMESTAMP_SPAN_MS) {
      throw new FrondError(
        'TIMESTAMP_OVERFLOW',
        `41 bits of milliseconds from the epoch ${options.epoch} are used up`,
      );
    }
    const behind = lease.lastTimestamp - now;
    if (behind >= 0) {
      if (behind > options.startupWaitMs) {
        throw new FrondError(
          'CLOCK_MOVED_BACKWARDS',
          `the clock is ${behind} ms behind ${new Date(lease.lastTimestamp).toISOString()}, the last timestamp worker ${workerId} used (${source.description}); fix the clock or start later`,
        );
      }
      logger.log('warn', 'snowflake.clock_behind_at_start', { workerId, behindMs: behind });
      await sleep(clock, behind + 1);
      now = clock.now();
      if (now <= lease.lastTimestamp) {
        throw new FrondError(
          'CLOCK_MOVED_BACKWARDS',
          `the clock did not pass ${lease.lastTimestamp} after waiting ${behind + 1} ms`,
        );
      }
    }
    const recordedThrough = now + options.recordAheadMs;
    await source.record(recordedThrough);
    const generator = new SnowflakeGenerator({
      workerId,
      epoch: options.epoch,
      clock,
      randomStart: options.randomStart,
      random,
      lastTimestamp: lease.lastTimestamp,
      recordedThrough,
    });
    const service = new SnowflakeService(generator, source, clock, logger, options);
    service.scheduleRecord();
    logger.log('info', 'snowflake.started', { workerId, source: source.description });
    return service;
  }

  get workerId(): number {
    return this.generator.workerId;
  }

  get epoch(): number {
    return this.options.epoch;
  }

  get lastTimestamp(): number {
    return this.generator.lastTimestamp;
  }

  /** The next ID without waiting; throws what the generator throws (the caller may use `next`). */
  tryNext(): bigint {
    if (this.closed) throw closedError();
    const id = this.generator.next();
    this.issued++;
    return id;
  }

  async next(): Promise<bigint> {
    const [id] = await this.nextMany(1);
    return id as bigint;
  }

  /** `count` increasing IDs, waiting out a clock that moved back a little. */
  async nextMany(count: number): Promise<bigint[]> {
    const ids: bigint[] = [];
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw closedError();
      try {
        while (ids.length < count) ids.push(this.generator.next());
        this.issued += count;
        return ids;
      } catch (error) {
        if (attempt >= MAX_ATTEMPTS || !(await this.recover(error))) throw error;
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelTimer?.();
    await this.recording?.catch(() => {});
    await this.source.release(this.generator.lastTimestamp);
  }

  /** Waits out what can be waited out; answers false for errors that must reach the caller. */
  private async recover(error: unknown): Promise<boolean> {
    if (error instanceof ClockMovedBackwardsError) {
      this.backwardsEvents++;
      const tolerable = error.offsetMs <= this.options.backwardsToleranceMs;
      this.logger.log('warn', 'snowflake.clock_moved_backwards', {
        workerId: this.workerId,
        offsetMs: error.offsetMs,
        action: tolerable ? 'wait' : 'refuse',
      });
      if (!tolerable) return false;
      await sleep(this.clock, 2 * error.offsetMs);
      return true;
    }
    if (isFrondError(error, 'TIMESTAMP_NOT_RECORDED')) {
      await this.record();
      return true;
    }
    return false;
  }

  private record(): Promise<void> {
    if (this.recording === undefined) {
      const through = this.clock.now() + this.options.recordAheadMs;
      this.recording = this.source
        .record(through)
        .then(
          () => this.generator.allowThrough(through),
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
      void this.record().finally(() => this.scheduleRecord());
    }, this.options.recordEveryMs);
  }
}

function closedError(): FrondError {
  return new FrondError('SHUTTING_DOWN', 'the snowflake generator is shutting down');
}
