import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../test/support/property-runs.js';
import type { Clock } from './clock.js';
import { ClockMovedBackwardsError, isFrondError, SequenceExhaustedError } from './errors.js';
import { SnowflakeGenerator, type SnowflakeGeneratorOptions } from './snowflake-generator.js';
import {
  decomposeSnowflake,
  LEAF_EPOCH,
  LEAF_LAYOUT,
  layoutOf,
  SnowflakeLayout,
  TIMESTAMP_SPAN_MS,
} from './snowflake-layout.js';

const T0 = 1_700_000_000_000;

/** A clock that moves on by 1 ms every `callsPerMs` reads, like a fast loop on a real clock. */
function steppingClock(callsPerMs: number, start = T0): Clock & { time: number } {
  let calls = 0;
  const clock = {
    time: start,
    now() {
      calls++;
      if (calls % callsPerMs === 0) clock.time++;
      return clock.time;
    },
    schedule: () => () => {},
  };
  return clock;
}

function fixedClock(start = T0): Clock & { time: number } {
  const clock = { time: start, now: () => clock.time, schedule: () => () => {} };
  return clock;
}

function generator(clock: Clock, options: Partial<SnowflakeGeneratorOptions> = {}) {
  return new SnowflakeGenerator({
    workerId: 5,
    layout: LEAF_LAYOUT,
    clock,
    randomSequence: false,
    random: Math.random,
    lastTimestamp: 0,
    recordedThrough: Number.POSITIVE_INFINITY,
    ...options,
  });
}

describe('SnowflakeGenerator', () => {
  it('composes the clock, the worker ID and a sequence that counts up within a millisecond', () => {
    const clock = fixedClock();
    const gen = generator(clock);
    const ids = [gen.next(), gen.next(), gen.next()];
    assert.deepEqual(
      ids.map((id) => decomposeSnowflake(id)),
      [0, 1, 2].map((sequence) => ({ timestamp: T0, workerId: 5, sequence })),
    );
  });

  it('starts each new millisecond at a random 0..99 (Leaf), or at 0 when switched off', () => {
    const clock = fixedClock();
    const randoms = [0, 0.999, 0.5];
    const gen = generator(clock, { randomSequence: true, random: () => randoms.shift() ?? 0 });
    const sequences: number[] = [];
    for (let i = 0; i < 3; i++) {
      sequences.push(decomposeSnowflake(gen.next()).sequence);
      clock.time++;
    }
    assert.deepEqual(sequences, [0, 99, 50]);
  });

  it('waits for the next millisecond after 4096 IDs instead of wrapping: 50,000 IDs, all distinct and increasing', () => {
    const gen = generator(steppingClock(5000), { randomSequence: true });
    let previous = -1n;
    for (let i = 0; i < 50_000; i++) {
      const id = gen.next();
      assert.ok(id > previous, `ID ${i} did not increase`);
      previous = id;
    }
  });

  it('answers SEQUENCE_EXHAUSTED, not a repeat, when the clock stands still past 4096 IDs', () => {
    const gen = generator(fixedClock());
    const seen = new Set<bigint>();
    for (let i = 0; i < 4096; i++) seen.add(gen.next());
    assert.equal(seen.size, 4096);
    assert.throws(
      () => gen.next(),
      (error) => isFrondError(error, 'SEQUENCE_EXHAUSTED'),
    );
    assert.throws(
      () => gen.next(),
      (error) => isFrondError(error, 'SEQUENCE_EXHAUSTED'),
    );
  });

  it('throws ClockMovedBackwardsError with the offset when the clock moves back by 1 ms or by 10 s', () => {
    const clock = fixedClock();
    const gen = generator(clock);
    const before = gen.next();
    for (const offset of [1, 10_000]) {
      clock.time = T0 - offset;
      assert.throws(
        () => gen.next(),
        (error) => error instanceof ClockMovedBackwardsError && error.offsetMs === offset,
      );
    }
    clock.time = T0;
    assert.ok(gen.next() > before, 'back at the same millisecond, the sequence goes on');
  });

  it('issues nothing at or below the timestamp restored from the last run', () => {
    const clock = fixedClock(T0);
    const gen = generator(clock, { lastTimestamp: T0 });
    // The same millisecond as the last run: it might have used every sequence, so wait for the next.
    assert.throws(
      () => gen.next(),
      (error) => isFrondError(error, 'SEQUENCE_EXHAUSTED'),
    );
    clock.time = T0 - 1;
    assert.throws(
      () => gen.next(),
      (error) => error instanceof ClockMovedBackwardsError,
    );
    clock.time = T0 + 1;
    assert.equal(decomposeSnowflake(gen.next()).timestamp, T0 + 1);
  });

  it('withholds IDs past the last recorded timestamp until more is recorded', () => {
    const clock = fixedClock(T0);
    const gen = generator(clock, { recordedThrough: T0 });
    gen.next();
    clock.time = T0 + 1;
    assert.throws(
      () => gen.next(),
      (error) => isFrondError(error, 'TIMESTAMP_NOT_RECORDED'),
    );
    gen.allowThrough(T0 + 1000);
    assert.equal(decomposeSnowflake(gen.next()).timestamp, T0 + 1);
  });

  it('refuses to run past the 41-bit range instead of overflowing', () => {
    const end = LEAF_EPOCH + TIMESTAMP_SPAN_MS;
    const clock = fixedClock(end - 1);
    const gen = generator(clock);
    assert.ok(gen.next() > 0n);
    clock.time = end;
    assert.throws(
      () => gen.next(),
      (error) => isFrondError(error, 'TIMESTAMP_OVERFLOW'),
    );
  });

  it('rejects a worker ID outside 0..1023', () => {
    for (const workerId of [-1, 1024, 1.5]) {
      assert.throws(
        () => generator(fixedClock(), { workerId }),
        (error) => isFrondError(error, 'INVALID_CONFIG'),
      );
    }
  });
});

/**
 * Leaf's generator as it was before layouts, line for line: the reference the default layout must
 * match bit for bit (the same IDs, the same errors, for the same clock readings and random draws).
 */
class LeafReference {
  private last: number;
  private sequence = 4095;
  private base = 0n;
  constructor(
    private readonly workerId: number,
    private readonly clock: Clock,
    private readonly random: () => number,
    lastTimestamp: number,
  ) {
    this.last = lastTimestamp;
  }
  next(): bigint {
    const now = this.clock.now();
    if (now === this.last) {
      if (this.sequence < 4095) return this.base + BigInt(++this.sequence);
      let t = this.clock.now();
      for (let i = 0; i < 2 ** 20 && t === this.last; i++) t = this.clock.now();
      if (t < this.last) throw new ClockMovedBackwardsError(this.last - t);
      if (t === this.last) throw new Error('SEQUENCE_EXHAUSTED');
      this.enter(t);
    } else if (now > this.last) this.enter(now);
    else throw new ClockMovedBackwardsError(this.last - now);
    return this.base + BigInt(this.sequence);
  }
  private enter(t: number): void {
    this.base = (BigInt(t - LEAF_EPOCH) << 22n) | (BigInt(this.workerId) << 12n);
    this.last = t;
    this.sequence = Math.floor(this.random() * 100);
  }
}

/** A clock that reads `steps` in turn (then stays on the last): the same readings for two generators. */
function scriptedClock(readings: readonly number[]): Clock {
  let i = 0;
  return { now: () => readings[Math.min(i++, readings.length - 1)] as number, schedule: () => () => {} };
}

describe('SnowflakeGenerator in any layout', () => {
  it("gives Leaf's IDs bit for bit in the default layout, clock steps back included (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -3, max: 2 }), { minLength: 1, maxLength: 3_000 }),
        fc.integer({ min: 0, max: 1023 }),
        fc.array(fc.double({ min: 0, max: 0.999_999, noNaN: true }), { minLength: 1, maxLength: 50 }),
        (moves, workerId, draws) => {
          // Mostly repeated readings (same ms), some steps on, a few steps back.
          const readings: number[] = [];
          let t = T0;
          for (const move of moves) {
            t += move < 0 ? (move === -3 ? -1 : 0) : move === 2 ? 1 : 0;
            readings.push(t);
          }
          let d = 0;
          const random = () => draws[d++ % draws.length] as number;
          let r = 0;
          const randomRef = () => draws[r++ % draws.length] as number;
          const actual = new SnowflakeGenerator({
            workerId,
            layout: LEAF_LAYOUT,
            clock: scriptedClock(readings),
            randomSequence: true,
            random,
            lastTimestamp: 0,
            recordedThrough: Number.POSITIVE_INFINITY,
          });
          const reference = new LeafReference(workerId, scriptedClock(readings), randomRef, 0);
          for (let i = 0; i < readings.length; i++) {
            const outcome = (make: () => bigint) => {
              try {
                return make().toString();
              } catch (error) {
                return error instanceof ClockMovedBackwardsError ? `back ${error.offsetMs}` : 'exhausted';
              }
            };
            assert.equal(
              outcome(() => actual.next()),
              outcome(() => reference.next()),
              `call ${i}`,
            );
          }
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('issues unique, increasing IDs of its worker in every valid layout and unit, waiting out used-up units (fast-check)', () => {
    const layouts = fc
      .record({
        workerBits: fc.integer({ min: 1, max: 22 }),
        sequenceBits: fc.integer({ min: 1, max: 12 }),
        timeUnitMs: fc.constantFrom(1, 2, 10, 100, 1000),
      })
      .map(({ workerBits, sequenceBits, timeUnitMs }) => {
        const fit = Math.floor(Math.log2((8.64e15 - LEAF_EPOCH) / timeUnitMs));
        const timeBits = Math.min(63 - workerBits - sequenceBits, fit);
        return { timeBits, workerBits: 63 - timeBits - sequenceBits, sequenceBits, timeUnitMs };
      })
      .filter((spec) => spec.workerBits <= 22)
      .map((spec) => SnowflakeLayout.of({ ...spec, epoch: LEAF_EPOCH }))
      // Time bits that still hold the test's clock.
      .filter((layout) => layout.endsAt > T0 + 86_400_000);
    fc.assert(
      fc.property(
        layouts,
        fc.integer({ min: 1, max: 50 }),
        fc.boolean(),
        fc.nat(),
        (layout, callsPerMs, randomSequence, seed) => {
          const workerId = seed % (layout.maxWorkerId + 1);
          const clock = steppingClock(callsPerMs);
          const gen = new SnowflakeGenerator({
            workerId,
            layout,
            clock,
            randomSequence,
            random: Math.random,
            lastTimestamp: 0,
            recordedThrough: Number.POSITIVE_INFINITY,
          });
          let previous = -1n;
          for (let i = 0; i < 2_000; i++) {
            let id: bigint;
            try {
              id = gen.next();
            } catch (error) {
              // A used-up unit of more than 1 ms: the caller sleeps `waitMs`, to the next unit's start.
              assert.ok(error instanceof SequenceExhaustedError, String(error));
              assert.equal(clock.time + error.waitMs, layout.unitStart(layout.unitOf(clock.time) + 1));
              clock.time += error.waitMs;
              continue;
            }
            assert.ok(id > previous, `ID ${i} did not increase in ${layout.describe()}`);
            previous = id;
            const parts = layout.decompose(id);
            assert.equal(parts.workerId, workerId);
            assert.ok(parts.sequence <= layout.maxSequence);
            assert.ok(parts.timestamp <= clock.time && clock.time < parts.timestamp + layout.timeUnitMs);
          }
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('counts 10 ms units: 256 IDs a unit in 39+16+8, then SequenceExhaustedError until the next unit', () => {
    const layout = layoutOf('39+16+8', 10, LEAF_EPOCH);
    const start = layout.unitStart(layout.unitOf(T0) + 1);
    const clock = fixedClock(start + 3);
    const gen = new SnowflakeGenerator({
      workerId: 65_535,
      layout,
      clock,
      randomSequence: false,
      random: Math.random,
      lastTimestamp: 0,
      recordedThrough: Number.POSITIVE_INFINITY,
    });
    const ids = Array.from({ length: 256 }, () => gen.next());
    assert.deepEqual(layout.decompose(ids[255] as bigint), {
      timestamp: start,
      workerId: 65_535,
      sequence: 255,
    });
    assert.throws(
      () => gen.next(),
      (error) =>
        error instanceof SequenceExhaustedError && error.waitMs === 7 && error.code === 'SEQUENCE_EXHAUSTED',
    );
    // Back within the unit (3 ms) is not a step back; before it is.
    clock.time = start;
    assert.throws(() => gen.next(), SequenceExhaustedError);
    clock.time = start - 2;
    assert.throws(
      () => gen.next(),
      (error) => error instanceof ClockMovedBackwardsError && error.offsetMs === 2,
    );
    clock.time = start + 10;
    assert.equal(layout.decompose(gen.next()).timestamp, start + 10);
  });

  it('starts a restored unit only after it: the last timestamp may have used any ms of its unit', () => {
    const layout = layoutOf('31+20+12', 1000, LEAF_EPOCH);
    const unit = layout.unitOf(T0);
    const clock = fixedClock(layout.unitStart(unit) + 900);
    const gen = new SnowflakeGenerator({
      workerId: 7,
      layout,
      clock,
      randomSequence: true,
      random: () => 0.999,
      lastTimestamp: layout.unitStart(unit) + 100,
      recordedThrough: Number.POSITIVE_INFINITY,
    });
    assert.throws(
      () => gen.next(),
      (error) => error instanceof SequenceExhaustedError && error.waitMs === 100,
    );
    clock.time = layout.unitStart(unit + 1);
    const first = layout.decompose(gen.next());
    assert.equal(first.timestamp, layout.unitStart(unit + 1));
    // A random start in 0..99 (4096 sequence values a unit), as Leaf's.
    assert.equal(first.sequence, 99);
  });

  it('keeps the random start within the first half of a short sequence', () => {
    const layout = layoutOf('41+18+4', 1, LEAF_EPOCH);
    const clock = fixedClock();
    const gen = new SnowflakeGenerator({
      workerId: 1,
      layout,
      clock,
      randomSequence: true,
      random: () => 0.999,
      lastTimestamp: 0,
      recordedThrough: Number.POSITIVE_INFINITY,
    });
    assert.equal(layout.decompose(gen.next()).sequence, 7);
    for (let i = 8; i <= 15; i++) assert.equal(layout.decompose(gen.next()).sequence, i);
  });
});
