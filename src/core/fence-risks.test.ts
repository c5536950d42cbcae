import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fenceRisks } from './fence-risks.js';
import type { TagRow } from './tag-catalogue.js';

const row = (tag: string, maxId: bigint, step = 1000): TagRow => ({
  tag,
  maxId,
  step,
  description: null,
  updateTime: null,
});
const INT = 2n ** 31n - 1n;
const SKIP = 1_000_000_000n;
const findings = (rows: TagRow[], skip = SKIP, opaque = new Map()) =>
  fenceRisks(rows, opaque, skip).map((risk) => `${risk.tag}: ${risk.finding}`);

describe('fenceRisks', () => {
  it("takes a tag past a 32-bit column when max_id + skip (or + 2 × skip) passes the column's largest", () => {
    assert.deepEqual(findings([row('fits', INT - SKIP)]), [
      'fits: two fences take its IDs past 2147483647, the largest of a signed 32-bit INT column',
    ]);
    assert.deepEqual(findings([row('next', INT - SKIP + 1n)]), [
      'next: the next fence takes its IDs past 2147483647, the largest of a signed 32-bit INT column',
    ]);
    assert.deepEqual(findings([row('low', INT - 2n * SKIP)]), []);
  });

  it('leaves out a column the IDs already passed: the column is another', () => {
    // max_id 2^31: the IDs served end at 2^31 - 1, which a signed INT holds.
    assert.equal(findings([row('at', INT + 1n)]).length, 1);
    assert.deepEqual(findings([row('past', INT + 2n)]), []);
    assert.deepEqual(findings([row('past both', 2n ** 32n + 1n)]), []);
  });

  it('names a step above the skip, and a tag a fence leaves no segment below 2^63 - 1', () => {
    assert.deepEqual(findings([row('step', 10n ** 12n, 1001)], 1000n), [
      'step: its step is larger than the skip: a segment lost in a failover reaches past the fence, and is handed out again',
    ]);
    // After the fence max_id is 2^63 - 1 - 999: no segment of 1,000 fits below 2^63 - 1.
    assert.deepEqual(findings([row('top', 2n ** 63n - 1000n - SKIP)]), [
      'top: the next fence leaves no room for a segment below 2^63 - 1: it is used up',
    ]);
    assert.deepEqual(findings([row('room', 2n ** 63n - 1000n - 2n * SKIP)]), [
      'room: two fences leave no room for a segment below 2^63 - 1: it is used up',
    ]);
  });

  it('checks an opaque tag against its domain, not against a 32-bit column', () => {
    const opaque = new Map([
      ['small', { domain: 'bits:20', keyCheck: 'x' }],
      ['big', { domain: 'digits:12', keyCheck: 'x' }],
    ]);
    assert.deepEqual(findings([row('small', 1n), row('big', 1n)], SKIP, opaque), [
      'small: the next fence uses up its 1048575 segment IDs (fewer than the skip)',
    ]);
    assert.deepEqual(findings([row('small', 1n)], 1_000_000n, opaque), [
      'small: two fences use up its 1048575 segment IDs',
    ]);
  });
});
