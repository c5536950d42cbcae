import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock, settle } from '../../test/support/manual-clock.js';
import { MemoryWorkerSource } from '../../test/support/memory-worker-source.js';
import { isFrondError } from './errors.js';
import { silentLogger } from './logger.js';
import { decomposeSnowflake } from './snowflake-layout.js';
import { DEFAULT_SNOWFLAKE_OPTIONS, SnowflakeService } from './snowflake-service.js';

const T0 = 1_700_000_000_000;

function start(clock: ManualClock, source = new MemoryWorkerSource()) {
  return SnowflakeService.start(source, clock, silentLogger, DEFAULT_SNOWFLAKE_OPTIONS);
}

/** Runs `promise` while moving the manual clock forward 1 ms at a time (bounded). */
async function drive<T>(clock: ManualClock, promise: Promise<T>, maxMs = 10_000): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => {
      outcome = { value };
    },
    (error: unknown) => {
      outcome = { error };
    },
  );
  for (let i = 0; i < maxMs && outcome === undefined; i++) await clock.advance(1);
  if (outcome === undefined) throw new Error(`still pending after ${maxMs} ms of clock time`);
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

describe('SnowflakeService', () => {
  it('records a timestamp ahead of the clock before issuing, and keeps moving it forward', async () => {
    const clock = new ManualClock(T0);
    const source = new MemoryWorkerSource();
    const service = await start(clock, source);
    assert.deepEqual(source.records, [T0 + DEFAULT_SNOWFLAKE_OPTIONS.recordAheadMs]);
    await clock.advance(DEFAULT_SNOWFLAKE_OPTIONS.recordEveryMs);
    assert.equal(
      source.records.at(-1),
      T0 + DEFAULT_SNOWFLAKE_OPTIONS.recordEveryMs + DEFAULT_SNOWFLAKE_OPTIONS.recordAheadMs,
    );
    await service.close();
    assert.equal(clock.pendingTimers, 0, 'close stops the timer');
  });

  it('waits at start for a clock a little behind the last recorded timestamp, then issues above it', async () => {
    const clock = new ManualClock(T0);
    const source = new MemoryWorkerSource(3, T0 + 1500);
    const service = await drive(clock, start(clock, source));
    const id = service.tryNext();
    assert.ok(decomposeSnowflake(id).timestamp > T0 + 1500);
    assert.equal(decomposeSnowflake(id).workerId, 3);
    await service.close();
  });

  it('sleeps again when a timer ends before the wall clock has passed the recorded timestamp', async () => {
    // Start-up sleeps fire 1 ms early by the wall clock (monotonic timers, a slewed wall clock);
    // timers set once the node runs (the record loop) never fire here.
    let time = T0;
    let startupSleeps = 0;
    const clock = {
      now: () => time,
      schedule: (fn: () => void, ms: number) => {
        if (++startupSleeps <= 10) {
          time += Math.max(1, ms - 1);
          queueMicrotask(fn);
        }
        return () => {};
      },
    };
    const source = new MemoryWorkerSource(3, T0 + 1500);
    const service = await SnowflakeService.start(source, clock, silentLogger, DEFAULT_SNOWFLAKE_OPTIONS);
    assert.ok(decomposeSnowflake(service.tryNext()).timestamp > T0 + 1500);
    assert.ok(startupSleeps >= 2, 'it slept more than once');
  });

  it('refuses to start when the clock is further behind than the start-up wait', async () => {
    const clock = new ManualClock(T0);
    const source = new MemoryWorkerSource(3, T0 + 10_000);
    await assert.rejects(start(clock, source), (error) => isFrondError(error, 'CLOCK_MOVED_BACKWARDS'));
  });

  it('waits out a clock that moves back 1 ms while running, and the next ID is above the last', async () => {
    const clock = new ManualClock(T0);
    const service = await start(clock);
    const before = await service.next();
    clock.set(T0 - 1);
    const after = await drive(clock, service.next());
    assert.ok(after > before);
    assert.equal(service.backwardsEvents, 1);
    await service.close();
  });

  it('refuses at once, retryably, when the clock moves back 10 s, and serves again once it catches up', async () => {
    const clock = new ManualClock(T0);
    const service = await start(clock);
    const before = await service.next();
    clock.set(T0 - 10_000);
    await assert.rejects(
      service.next(),
      (error) => isFrondError(error, 'CLOCK_MOVED_BACKWARDS') && error.retryable,
    );
    clock.set(T0 + 1);
    assert.ok((await service.next()) > before);
    await service.close();
  });

  it('releases the worker ID with the last timestamp it used', async () => {
    const clock = new ManualClock(T0);
    const source = new MemoryWorkerSource();
    const service = await start(clock, source);
    await service.next();
    await service.close();
    assert.equal(source.released, T0);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'SHUTTING_DOWN'));
  });

  it('never repeats or reorders an ID whatever the clock does, across restarts (fast-check)', async () => {
    const move = fc.oneof(
      fc.record({ kind: fc.constant('ids' as const), count: fc.integer({ min: 1, max: 5000 }) }),
      fc.record({ kind: fc.constant('clock' as const), ms: fc.integer({ min: -20_000, max: 20_000 }) }),
      fc.record({ kind: fc.constant('restart' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(move, { maxLength: 25 }), async (moves) => {
        const clock = new ManualClock(T0);
        const source = new MemoryWorkerSource();
        let service: SnowflakeService | undefined = await start(clock, source);
        let last = -1n;
        for (const m of moves) {
          if (m.kind === 'clock') {
            clock.set(clock.now() + m.ms);
            continue;
          }
          if (m.kind === 'restart') {
            // A crash: nothing is released; the next start must respect what was recorded.
            service = await drive(clock, start(clock, source), 6000).catch(() => undefined);
            continue;
          }
          if (service === undefined) continue;
          // The clock runs on while the node waits out a small step back.
          const ids = await drive(clock, service.nextMany(m.count), 50).catch(() => []);
          for (const id of ids) {
            assert.ok(id > last, `${id} after ${last}`);
            last = id;
          }
          await settle();
        }
      }),
      { numRuns: 60 },
    );
  });
});
