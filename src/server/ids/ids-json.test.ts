import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { idsJson } from './ids-json.js';

const reference = (ids: readonly (number | bigint)[]) => JSON.stringify({ ids: ids.map(String) });

describe('idsJson', () => {
  it('writes an empty list, one ID, and runs that carry into a new digit', () => {
    assert.equal(idsJson([]).toString(), '{"ids":[]}');
    assert.equal(idsJson([0]).toString(), '{"ids":["0"]}');
    const carries = [8, 9, 10, 11, 99, 100, 999_999, 1_000_000, 1_000_001, 5, 6, 2 ** 53 - 2, 2 ** 53 - 1];
    assert.equal(idsJson(carries).toString(), reference(carries));
  });

  it('writes 64-bit snowflakes exactly, up to 2^63 - 1', () => {
    const top = (1n << 63n) - 1n;
    const ids = [
      top - 2n,
      top - 1n,
      top,
      4194304n,
      4194305n,
      9_999_999_999_999_999n,
      10_000_000_000_000_000n,
    ];
    assert.equal(idsJson(ids).toString(), reference(ids));
  });

  it('matches JSON.stringify for any runs of safe integers', () => {
    const runs = fc.array(
      fc.tuple(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER - 200 }), fc.integer({ min: 1, max: 120 })),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(runs, (parts) => {
        const ids = parts.flatMap(([start, length]) => Array.from({ length }, (_, i) => start + i));
        assert.equal(idsJson(ids).toString(), reference(ids));
      }),
    );
  });

  it('matches JSON.stringify for any runs of 63-bit bigints', () => {
    const runs = fc.array(
      fc.tuple(fc.bigInt({ min: 0n, max: (1n << 63n) - 200n }), fc.integer({ min: 1, max: 120 })),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(runs, (parts) => {
        const ids = parts.flatMap(([start, length]) => Array.from({ length }, (_, i) => start + BigInt(i)));
        assert.equal(idsJson(ids).toString(), reference(ids));
      }),
    );
  });

  it('writes negative IDs, -2^63, and a batch that crosses from numbers to bigints, exactly', () => {
    const ids = [
      -12,
      -11,
      -10,
      -9,
      -1,
      0,
      1,
      2 ** 53 - 2,
      2 ** 53 - 1,
      2n ** 53n,
      2n ** 53n + 1n,
      -(2n ** 63n),
    ];
    assert.equal(idsJson(ids).toString(), reference(ids));
  });

  it('matches JSON.stringify for any runs of signed 64-bit IDs, numbers and bigints mixed', () => {
    const runs = fc.array(
      fc.tuple(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 200n }),
        fc.integer({ min: 1, max: 40 }),
        fc.boolean(),
      ),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(runs, (parts) => {
        const ids = parts.flatMap(([start, length, asNumber]) =>
          Array.from({ length }, (_, i) => {
            const id = start + BigInt(i);
            return asNumber && id >= -(2n ** 53n) + 1n && id <= 2n ** 53n - 1n ? Number(id) : id;
          }),
        );
        assert.equal(idsJson(ids).toString(), reference(ids));
      }),
    );
  });
});
