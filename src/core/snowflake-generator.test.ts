import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Clock } from './clock.js';
import { ClockMovedBackwardsError, isFrondError } from './errors.js';
import { SnowflakeGenerator, type SnowflakeGeneratorOptions } from './snowflake-generator.js';
import { decomposeSnowflake, LEAF_EPOCH, TIMESTAMP_SPAN_MS } from './snowflake-layout.js';

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
    epoch: LEAF_EPOCH,
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
