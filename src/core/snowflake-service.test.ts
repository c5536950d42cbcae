import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { ManualClock, settle } from '../../test/support/manual-clock.js';
import { MemoryWorkerSource } from '../../test/support/memory-worker-source.js';
import { propertyRuns } from '../../test/support/property-runs.js';
import { isFrondError } from './errors.js';
import { silentLogger } from './logger.js';
import {
  decomposeSnowflake,
  LEAF_EPOCH,
  LEAF_LAYOUT,
  layoutOf,
  SnowflakeLayout,
} from './snowflake-layout.js';
import { DEFAULT_SNOWFLAKE_OPTIONS, SnowflakeService } from './snowflake-service.js';

const T0 = 1_700_000_000_000;

function start(clock: ManualClock, source = new MemoryWorkerSource()) {
  return SnowflakeService.start(source, clock, silentLogger, DEFAULT_SNOWFLAKE_OPTIONS);
}

/** Runs `promise` while moving the manual clock forward `stepMs` (1 ms) at a time (bounded). */
async function drive<T>(clock: ManualClock, promise: Promise<T>, maxMs = 10_000, stepMs = 1): Promise<T> {
  let outcome: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => {
      outcome = { value };
    },
    (error: unknown) => {
      outcome = { error };
    },
  );
  for (let i = 0; i < maxMs && outcome === undefined; i += stepMs) await clock.advance(stepMs);
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
    const id = service.tryNext() ?? assert.fail('tryNext had no ID');
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
    assert.ok(
      decomposeSnowflake(service.tryNext() ?? assert.fail('tryNext had no ID')).timestamp > T0 + 1500,
    );
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

  it('never moves the recorded timestamp back when the clock steps back 30 s while serving, so a restart after a crash refuses', async () => {
    const clock = new ManualClock(T0);
    const node = clock.process();
    const source = new MemoryWorkerSource();
    const service = await SnowflakeService.start(source, node, silentLogger, DEFAULT_SNOWFLAKE_OPTIONS);
    await clock.advance(1_000);
    const before = await service.next();
    const highest = Math.max(...source.records);
    clock.set(clock.now() - 30_000);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'CLOCK_MOVED_BACKWARDS'));
    // Eight record periods with the clock behind: the record stays where it was.
    await clock.advance(8 * DEFAULT_SNOWFLAKE_OPTIONS.recordEveryMs);
    const sorted = [...source.records].sort((a, b) => a - b);
    assert.deepEqual(source.records, sorted, 'the records never go down');
    assert.equal(source.lastTimestamp, highest);
    node.crash();
    // The clock is still 26 s behind the record: far past the 5 s start-up wait.
    await assert.rejects(start(clock, source), (error) => isFrondError(error, 'CLOCK_MOVED_BACKWARDS'));
    // Once the clock has caught up, a start issues above everything issued before.
    clock.set(highest + 1);
    const restarted = await start(clock, source);
    assert.ok((await restarted.next()) > before);
    await restarted.close();
  });

  it('tryNext answers undefined and never throws when the clock is behind or the node is closed; next() says why', async () => {
    const clock = new ManualClock(T0);
    const service = await start(clock);
    assert.notEqual(service.tryNext(), undefined);
    clock.set(T0 - 10_000);
    assert.equal(service.tryNext(), undefined);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'CLOCK_MOVED_BACKWARDS'));
    clock.set(T0 + 1);
    await service.close();
    assert.equal(service.tryNext(), undefined);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'SHUTTING_DOWN'));
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

  it('never repeats or reorders an ID whatever the clock does, across crashes, with the periodic record running (fast-check)', async () => {
    // `wait` lets time pass with timers firing, so the periodic record runs: with the clock stepped
    // back, a record that wrote `now + recordAheadMs` instead of never lowering it fails here.
    const move = fc.oneof(
      {
        arbitrary: fc.record({ kind: fc.constant('ids' as const), count: fc.integer({ min: 1, max: 5000 }) }),
        weight: 3,
      },
      {
        arbitrary: fc.record({
          kind: fc.constant('clock' as const),
          // Mostly steps back (NTP corrections of a fast clock), sometimes a jump forward.
          ms: fc.oneof(
            { arbitrary: fc.integer({ min: -30_000, max: -1 }), weight: 3 },
            { arbitrary: fc.integer({ min: 1, max: 20_000 }), weight: 1 },
          ),
        }),
        weight: 2,
      },
      {
        arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 4_000 }) }),
        weight: 2,
      },
      { arbitrary: fc.record({ kind: fc.constant('crash' as const) }), weight: 2 },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(move, { maxLength: 25 }), async (moves) => {
        const clock = new ManualClock(T0);
        // A naive source that keeps whatever it is told: the property is about the node's own rules.
        const source = new MemoryWorkerSource();
        const boot = async () => {
          const node = clock.process();
          const service = await drive(
            clock,
            SnowflakeService.start(source, node, silentLogger, DEFAULT_SNOWFLAKE_OPTIONS),
            6000,
          ).catch(() => undefined);
          return service === undefined ? undefined : { service, node };
        };
        let running = await boot();
        let last = -1n;
        try {
          for (const m of moves) {
            if (m.kind === 'clock') clock.set(clock.now() + m.ms);
            else if (m.kind === 'wait') await clock.advance(m.ms);
            else if (m.kind === 'crash') {
              // SIGKILL: nothing is released and the old process's timers stop; the next start
              // must respect what was recorded.
              running?.node.crash();
              running = await boot();
            } else if (running !== undefined) {
              // The clock runs on while the node waits out a small step back.
              const ids = await drive(clock, running.service.nextMany(m.count), 50).catch(() => []);
              for (const id of ids) {
                assert.ok(id > last, `${id} after ${last}`);
                last = id;
              }
              await settle();
            }
          }
        } finally {
          running?.node.crash();
        }
      }),
      {
        // About one run in 80 steps back, lets a record period pass, crashes and takes IDs again:
        // 500 runs find a record that goes back with a probability above 99 %; the example is the
        // shortest such run, so the property fails on that mistake every time.
        numRuns: propertyRuns(500),
        examples: [
          [
            [
              { kind: 'ids', count: 1 },
              { kind: 'clock', ms: -2501 },
              { kind: 'wait', ms: 500 },
              { kind: 'crash' },
              { kind: 'ids', count: 1 },
            ],
          ],
        ],
      },
    );
  });
});

describe('SnowflakeService in another layout', () => {
  const sony = layoutOf('39+16+8', 10, LEAF_EPOCH);
  const options = { ...DEFAULT_SNOWFLAKE_OPTIONS, layout: sony };

  it('serves a batch that needs several 10 ms units by sleeping to each next unit: unique, increasing', async () => {
    const clock = new ManualClock(T0);
    const service = await SnowflakeService.start(
      new MemoryWorkerSource(40_000),
      clock,
      silentLogger,
      options,
    );
    const ids = await drive(clock, service.nextMany(2_000));
    assert.equal(new Set(ids).size, 2_000);
    for (let i = 1; i < ids.length; i++) assert.ok((ids[i] as bigint) > (ids[i - 1] as bigint));
    const parts = ids.map((id) => sony.decompose(id));
    assert.ok(parts.every((part) => part.workerId === 40_000 && part.sequence <= 255));
    // 256 a unit at most (a random start of 0–99 leaves fewer): at least 8 units.
    assert.ok(new Set(parts.map((part) => part.timestamp)).size >= 8);
    assert.ok(parts.every((part) => (part.timestamp - LEAF_EPOCH) % 10 === 0));
    assert.equal(service.issued, 2_000);
    await service.close();
  });

  it("starts after the unit of the source's last timestamp, not only after the timestamp", async () => {
    const clock = new ManualClock(T0);
    const unitStart = sony.unitStart(sony.unitOf(T0));
    // The earlier holder recorded a time 2 ms into the unit the clock is in now.
    const source = new MemoryWorkerSource(3, unitStart + 2);
    clock.set(unitStart + 5);
    const service = await drive(clock, SnowflakeService.start(source, clock, silentLogger, options));
    const id = (await drive(clock, service.next())) as bigint;
    assert.equal(sony.decompose(id).timestamp, unitStart + 10, 'the next unit');
    assert.ok(source.records.every((record) => record >= unitStart + 9));
    await service.close();
  });

  it('never repeats or reorders an ID in units of 3 ms, 10 ms or 1 s, whatever the clock does, across crashes (fast-check)', async () => {
    const layouts = [sony, layoutOf('31+20+12', 1000, LEAF_EPOCH), layoutOf('40+13+10', 3, LEAF_EPOCH)];
    let batches = 0;
    const move = fc.oneof(
      {
        arbitrary: fc.record({ kind: fc.constant('ids' as const), count: fc.integer({ min: 1, max: 700 }) }),
        weight: 3,
      },
      {
        arbitrary: fc.record({
          kind: fc.constant('clock' as const),
          ms: fc.oneof(
            { arbitrary: fc.integer({ min: -3_000, max: -1 }), weight: 3 },
            { arbitrary: fc.integer({ min: 1, max: 3_000 }), weight: 1 },
          ),
        }),
        weight: 2,
      },
      {
        arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
        weight: 2,
      },
      { arbitrary: fc.record({ kind: fc.constant('crash' as const) }), weight: 2 },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...layouts),
        fc.array(move, { maxLength: 20 }),
        async (layout, moves) => {
          const clock = new ManualClock(T0);
          const source = new MemoryWorkerSource();
          const step = Math.max(1, Math.floor(layout.timeUnitMs / 4));
          const boot = async () => {
            const node = clock.process();
            const service = await drive(
              clock,
              SnowflakeService.start(source, node, silentLogger, { ...DEFAULT_SNOWFLAKE_OPTIONS, layout }),
              8_000,
              step,
            ).catch(() => undefined);
            return service === undefined ? undefined : { service, node };
          };
          let running = await boot();
          let last = -1n;
          try {
            for (const m of moves) {
              if (m.kind === 'clock') clock.set(clock.now() + m.ms);
              else if (m.kind === 'wait') await clock.advance(m.ms);
              else if (m.kind === 'crash') {
                running?.node.crash();
                running = await boot();
              } else if (running !== undefined) {
                const ids = await drive(
                  clock,
                  running.service.nextMany(m.count),
                  3 * layout.timeUnitMs + 50,
                  step,
                ).catch(() => []);
                if (ids.length === m.count) batches++;
                for (const id of ids) {
                  assert.ok(id > last, `${id} after ${last} in ${layout.bits}`);
                  last = id;
                }
                await settle();
              }
            }
          } finally {
            running?.node.crash();
          }
        },
      ),
      { numRuns: propertyRuns(150) },
    );
    // Not a property of nothing: most batches were served whole.
    assert.ok(batches > propertyRuns(150), `only ${batches} batches served`);
  });

  it("says how long the layout's time bits have left, and warns under three years", async () => {
    const clock = new ManualClock(T0);
    const service = await start(clock);
    assert.equal(service.timeLeftMs(), LEAF_LAYOUT.endsAt - T0);
    assert.equal(service.timeLeftWarning(), undefined);
    await service.close();
    const short = SnowflakeLayout.of({
      timeBits: 36,
      workerBits: 15,
      sequenceBits: 12,
      timeUnitMs: 1,
      epoch: T0 + 500 * 86_400_000 - 2 ** 36,
    });
    const ending = await SnowflakeService.start(new MemoryWorkerSource(), clock, silentLogger, {
      ...DEFAULT_SNOWFLAKE_OPTIONS,
      layout: short,
    });
    assert.equal(ending.timeLeftMs(), 500 * 86_400_000);
    assert.match(ending.timeLeftWarning() ?? '', /run out on .*, in 500 days/);
    await ending.close();
  });
});

describe('SnowflakeService: a lease lost and regained while the start waits for its clock', () => {
  it('serves nothing on the lost worker ID: the regain heard during the wait is adopted first', async () => {
    const clock = new ManualClock(T0);
    // Worker 3, recorded 1.5 s ahead by its last holder: the start waits for the clock.
    const inner = new MemoryWorkerSource(3, T0 + 1500);
    let regained: ((lease: { workerId: number; lastTimestamp: number }) => void) | undefined;
    const source = Object.assign(inner, {
      valid: () => true,
      onRegained(listener: (lease: { workerId: number; lastTimestamp: number }) => void) {
        regained = listener;
      },
    });
    const starting = start(clock, source);
    // Mid-wait the lease source lost worker 3 and claimed worker 9 (what a cut longer than the TTL does).
    await clock.advance(500);
    assert.ok(regained, 'the start listens for a regain before it waits');
    regained({ workerId: 9, lastTimestamp: T0 });
    const service = await drive(clock, starting);
    const ids: bigint[] = [];
    for (let i = 0; i < 3_000; i++) {
      const id = service.tryNext();
      if (id !== undefined) ids.push(id);
      if (i % 100 === 99) await clock.advance(1);
    }
    assert.ok(ids.length > 0, 'it serves again once worker 9 is adopted');
    for (const id of ids)
      assert.equal(decomposeSnowflake(id).workerId, 9, `an ID on the lost worker ID: ${id}`);
    await service.close();
  });
});
