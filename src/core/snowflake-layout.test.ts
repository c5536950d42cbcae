import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isFrondError } from './errors.js';
import {
  composeSnowflake,
  decomposeSnowflake,
  LEAF_EPOCH,
  MAX_SNOWFLAKE_ID,
  parseSnowflakeId,
  TIMESTAMP_SPAN_MS,
} from './snowflake-layout.js';

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
