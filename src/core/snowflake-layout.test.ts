import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { propertyRuns } from '../../test/support/property-runs.js';
import { isFrondError } from './errors.js';
import {
  composeSnowflake,
  decomposeSnowflake,
  LEAF_EPOCH,
  LEAF_LAYOUT,
  layoutOf,
  MAX_SNOWFLAKE_ID,
  MIN_TIME_LEFT_MS,
  maxWorkerIdOf,
  parseLayoutBits,
  parseSnowflakeId,
  SnowflakeLayout,
  type SnowflakeLayoutSpec,
  TIME_LEFT_WARNING_MS,
  TIMESTAMP_SPAN_MS,
} from './snowflake-layout.js';

const NOW = Date.parse('2026-12-02T00:00:00Z');
const DAY = 86_400_000;

/** Every layout `SnowflakeLayout.of` takes: bits summing to 63, a unit, an epoch, ending by year 275760. */
const validLayout: fc.Arbitrary<SnowflakeLayout> = fc
  .record({
    workerBits: fc.integer({ min: 1, max: 22 }),
    sequenceBits: fc.integer({ min: 1, max: 22 }),
    timeUnitMs: fc.oneof(fc.constantFrom(1, 10, 1000), fc.integer({ min: 1, max: 1000 })),
    epoch: fc.integer({ min: 0, max: NOW }),
  })
  .map((spec) => {
    // The most time bits the unit and epoch allow (52 in ms), at most what the others leave.
    const fit = Math.floor(Math.log2((8.64e15 - spec.epoch) / spec.timeUnitMs));
    const timeBits = Math.min(63 - spec.workerBits - spec.sequenceBits, fit);
    return { ...spec, timeBits, workerBits: 63 - timeBits - spec.sequenceBits };
  })
  .filter((spec) => spec.workerBits <= 22)
  .map((spec) => SnowflakeLayout.of(spec));

/** A layout and parts that fit it: a time unit inside the time bits, any ms of it, a worker ID, a sequence. */
const layoutAndParts = validLayout.chain((layout) =>
  fc.record({
    layout: fc.constant(layout),
    unit: fc.integer({ min: 0, max: Math.min(layout.unitSpan - 1, Number.MAX_SAFE_INTEGER) }),
    withinUnit: fc.integer({ min: 0, max: layout.timeUnitMs - 1 }),
    workerId: fc.integer({ min: 0, max: layout.maxWorkerId }),
    sequence: fc.integer({ min: 0, max: layout.maxSequence }),
  }),
);

function refused(spec: Partial<SnowflakeLayoutSpec>, pattern: RegExp): void {
  assert.throws(
    () => SnowflakeLayout.of({ ...LEAF_LAYOUT.spec(), ...spec }),
    (error: Error) => isFrondError(error, 'INVALID_CONFIG') && pattern.test(error.message),
    JSON.stringify(spec),
  );
}

describe('snowflake layout', () => {
  it('round-trips every timestamp, worker ID and sequence (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: TIMESTAMP_SPAN_MS - 1 }),
        fc.integer({ min: 0, max: 1023 }),
        fc.integer({ min: 0, max: 4095 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        (elapsed, workerId, sequence, epoch) => {
          const parts = { timestamp: epoch + elapsed, workerId, sequence };
          const id = composeSnowflake(parts, epoch);
          assert.ok(id >= 0n && id <= MAX_SNOWFLAKE_ID);
          assert.deepEqual(decomposeSnowflake(id, epoch), parts);
        },
      ),
    );
  });

  it("puts 41 bits of time, 10 of worker and 12 of sequence, as Leaf's decode reads them", () => {
    const id = composeSnowflake({ timestamp: 1567733700834, workerId: 39, sequence: 3448 });
    assert.equal(id, ((1567733700834n - 1288834974657n) << 22n) | (39n << 12n) | 3448n);
    assert.equal(
      decomposeSnowflake(1256557484213448722n).timestamp,
      Number(1256557484213448722n >> 22n) + LEAF_EPOCH,
    );
  });

  it("ends Leaf's epoch on 2080-07-10T17:30:30.208Z and refuses the millisecond after", () => {
    const last = LEAF_EPOCH + TIMESTAMP_SPAN_MS - 1;
    assert.equal(new Date(last).toISOString(), '2080-07-10T17:30:30.208Z');
    assert.equal(LEAF_LAYOUT.endsAt, last + 1);
    assert.equal(composeSnowflake({ timestamp: last, workerId: 1023, sequence: 4095 }), MAX_SNOWFLAKE_ID);
    assert.throws(
      () => composeSnowflake({ timestamp: last + 1, workerId: 0, sequence: 0 }),
      (error) => isFrondError(error, 'TIMESTAMP_OVERFLOW'),
    );
  });

  it('parses decimal IDs and rejects anything else with INVALID_ID', () => {
    assert.equal(parseSnowflakeId('9223372036854775807'), MAX_SNOWFLAKE_ID);
    for (const bad of ['', '-1', '1e3', 'abc', '9223372036854775808', '12345678901234567890', ' 1']) {
      assert.throws(
        () => parseSnowflakeId(bad),
        (error) => isFrondError(error, 'INVALID_ID'),
        bad,
      );
    }
  });
});

describe('SnowflakeLayout: any valid layout', () => {
  it('round-trips time unit, worker ID and sequence in every valid layout, within 0..2^63 − 1 (fast-check)', () => {
    fc.assert(
      fc.property(layoutAndParts, ({ layout, unit, withinUnit, workerId, sequence }) => {
        const start = layout.unitStart(unit);
        const id = layout.compose({ timestamp: start + withinUnit, workerId, sequence });
        assert.ok(id >= 0n && id <= MAX_SNOWFLAKE_ID, `${id} in ${layout.describe()}`);
        // The decoded time is the first ms of the unit: every ms of a unit makes the same ID.
        assert.deepEqual(layout.decompose(id), { timestamp: start, workerId, sequence });
        assert.equal(layout.compose({ timestamp: start, workerId, sequence }), id);
        assert.equal(layout.unitOf(start + withinUnit), unit);
        assert.equal(layout.lastMsOfUnit(start + withinUnit), start + layout.timeUnitMs - 1);
      }),
      { numRuns: propertyRuns(2_000) },
    );
  });

  it('orders IDs as (time unit, worker ID, sequence) and gives distinct parts distinct IDs (fast-check)', () => {
    const twoParts = layoutAndParts.chain((a) =>
      fc.record({
        a: fc.constant(a),
        b: fc.record({
          unit: fc.integer({ min: 0, max: Math.min(a.layout.unitSpan - 1, Number.MAX_SAFE_INTEGER) }),
          workerId: fc.integer({ min: 0, max: a.layout.maxWorkerId }),
          sequence: fc.integer({ min: 0, max: a.layout.maxSequence }),
        }),
      }),
    );
    fc.assert(
      fc.property(twoParts, ({ a, b }) => {
        const { layout } = a;
        const idA = layout.compose({
          timestamp: layout.unitStart(a.unit),
          workerId: a.workerId,
          sequence: a.sequence,
        });
        const idB = layout.compose({
          timestamp: layout.unitStart(b.unit),
          workerId: b.workerId,
          sequence: b.sequence,
        });
        const order =
          Math.sign(a.unit - b.unit) ||
          Math.sign(a.workerId - b.workerId) ||
          Math.sign(a.sequence - b.sequence);
        assert.equal(idA < idB ? -1 : idA > idB ? 1 : 0, order);
      }),
      { numRuns: propertyRuns(2_000) },
    );
  });

  it("composes Leaf's layout exactly as Leaf's formula, bit for bit (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: LEAF_EPOCH, max: LEAF_LAYOUT.endsAt - 1 }),
        fc.integer({ min: 0, max: 1023 }),
        fc.integer({ min: 0, max: 4095 }),
        (timestamp, workerId, sequence) => {
          const leaf = (BigInt(timestamp - LEAF_EPOCH) << 22n) | (BigInt(workerId) << 12n) | BigInt(sequence);
          assert.equal(LEAF_LAYOUT.compose({ timestamp, workerId, sequence }), leaf);
          assert.equal(layoutOf('41+10+12', 1, LEAF_EPOCH).compose({ timestamp, workerId, sequence }), leaf);
        },
      ),
      { numRuns: propertyRuns(1_000) },
    );
    assert.equal(LEAF_LAYOUT.workerShift, 12n);
    assert.equal(LEAF_LAYOUT.timeShift, 22n);
    assert.equal(maxWorkerIdOf(), 1023);
    assert.equal(
      LEAF_LAYOUT.lastMsOfUnit(1_700_000_000_123),
      1_700_000_000_123,
      'a 1 ms unit ends where it starts',
    );
  });

  it('gives worker IDs up to 2^worker bits − 1 and refuses the next one', () => {
    const sony = layoutOf('39+16+8', 10, LEAF_EPOCH);
    assert.equal(sony.maxWorkerId, 65_535);
    assert.equal(sony.workerIdCount, 65_536);
    assert.equal(sony.maxSequence, 255);
    assert.equal(sony.assertWorkerId(65_535), 65_535);
    assert.throws(
      () => sony.assertWorkerId(65_536),
      /out of range: use an integer from 0 to 65535 \(16 worker bits\)/,
    );
    assert.throws(
      () => LEAF_LAYOUT.assertWorkerId(1024),
      /^FrondError: worker ID 1024 is out of range: use an integer from 0 to 1023$/,
    );
  });

  it('decodes 39+16+8 in 10 ms units: the time is the first ms of its unit', () => {
    const layout = layoutOf('39+16+8', 10, LEAF_EPOCH);
    const id = layout.compose({ timestamp: LEAF_EPOCH + 12_345_678_907, workerId: 40_000, sequence: 200 });
    assert.equal(id, (1_234_567_890n << 24n) | (40_000n << 8n) | 200n);
    assert.deepEqual(layout.decompose(id), {
      timestamp: LEAF_EPOCH + 12_345_678_900,
      workerId: 40_000,
      sequence: 200,
    });
    assert.equal(new Date(layout.endsAt).toISOString(), '2185-01-19T05:11:53.537Z');
  });
});

describe('SnowflakeLayout: what cannot work is refused in one line', () => {
  it('refuses bits that do not sum to 63, sequence or worker bits outside 1–22', () => {
    refused(
      { timeBits: 40 },
      /^layout 40\+10\+12 has 62 bits: time, worker and sequence bits must sum to 63/,
    );
    refused({ timeBits: 42 }, /has 64 bits/);
    refused({ workerBits: 22, sequenceBits: 0 }, /^layout 41\+22\+0 has no sequence bit/);
    refused(
      { timeBits: 30, workerBits: 10, sequenceBits: 23 },
      /sequence bits must be 1 to 22 \(up to 4,194,304 IDs a time unit\)/,
    );
    refused({ timeBits: 41, workerBits: 0, sequenceBits: 22 }, /worker bits must be 1 to 22/);
    refused(
      { timeBits: 20, workerBits: 31, sequenceBits: 12 },
      /worker bits must be 1 to 22 \(2 to 4,194,304 worker IDs\)/,
    );
    refused({ timeBits: 41.5, sequenceBits: 11.5 }, /bits are whole numbers/);
  });

  it('refuses a unit outside 1–1000 ms, a negative epoch, and time bits past the year 275760', () => {
    for (const timeUnitMs of [0, 1001, 1.5])
      refused({ timeUnitMs }, /time unit .* use a whole number of ms from 1 to 1000/);
    refused({ epoch: -1 }, /epoch -1: use ms since 1970/);
    refused(
      { timeBits: 53, workerBits: 5, sequenceBits: 5 },
      /runs past the year 275760, the last date JavaScript holds: use at most 52 time bits with this unit/,
    );
    refused({ timeBits: 43, workerBits: 10, sequenceBits: 10, timeUnitMs: 1000 }, /use at most 42 time bits/);
  });

  it('names the flags when told to, and parses TIME+WORKER+SEQUENCE only', () => {
    const names = { bits: '--snowflake-layout', unit: '--time-unit-ms', epoch: '--epoch' };
    assert.throws(
      () => layoutOf('40+10+12', 1, LEAF_EPOCH, names),
      /^FrondError: --snowflake-layout 40\+10\+12 has 62 bits/,
    );
    for (const bad of ['41,10,12', '41+10', '41+10+12+0', '', 'a+b+c', '-1+52+12', '100+1+1'])
      assert.throws(
        () => parseLayoutBits(bad, names),
        (error: Error) =>
          isFrondError(error, 'INVALID_CONFIG') &&
          /^--snowflake-layout ".*" is invalid: give TIME\+WORKER\+SEQUENCE/.test(error.message),
        bad,
      );
    assert.deepEqual(parseLayoutBits(' 39 + 16 + 8 '), { timeBits: 39, workerBits: 16, sequenceBits: 8 });
  });
});

describe('SnowflakeLayout: time left', () => {
  const ending = (leftMs: number) =>
    // 36 bits of ms are 795 days: an epoch that far before `NOW + leftMs`.
    SnowflakeLayout.of({
      timeBits: 36,
      workerBits: 15,
      sequenceBits: 12,
      timeUnitMs: 1,
      epoch: NOW + leftMs - 2 ** 36,
    });

  it('refuses a start with under 365 days left, or before the epoch, and takes one with more', () => {
    const tight = ending(MIN_TIME_LEFT_MS - 1);
    assert.throws(
      () => tight.assertLasts(NOW),
      (error: Error) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        /^layout 36\+15\+12 in 1 ms units from epoch \d+ runs out on \S+, in 364 days: a layout must last at least 365 days from now/.test(
          error.message,
        ),
    );
    assert.throws(() => ending(-DAY).assertLasts(NOW), /ran out on/);
    ending(MIN_TIME_LEFT_MS).assertLasts(NOW);
    LEAF_LAYOUT.assertLasts(NOW);
    assert.throws(() => LEAF_LAYOUT.assertLasts(LEAF_EPOCH - 1), /is after the clock/);
  });

  it('warns under three years left, not at three years or more', () => {
    assert.equal(LEAF_LAYOUT.timeLeftWarning(NOW), undefined);
    assert.equal(ending(TIME_LEFT_WARNING_MS).timeLeftWarning(NOW), undefined);
    const warning = ending(545 * DAY).timeLeftWarning(NOW);
    assert.match(
      warning ?? '',
      /^the snowflake time bits \(36\+15\+12, 1 ms units\) run out on \S+, in 545 days: plan a new layout/,
    );
    assert.match(ending(-1).timeLeftWarning(NOW) ?? '', /ran out on/);
    assert.equal(ending(545 * DAY).timeLeftMs(NOW), 545 * DAY);
  });
});
