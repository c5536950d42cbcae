import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { OpaqueCodec, parseDomain } from '../../core/opaque-codec.js';
import type { SegmentId } from '../../core/segment-buffer.js';
import { OpaqueSecret } from './opaque-keys.js';
import { encodeInChunks, OPAQUE_STEP_MS } from './opaque-tags.js';

const SECRET = OpaqueSecret.fromBytes(randomBytes(32), 'steps');

/**
 * A codec whose every `encodeBatch` call moves a fake clock by `msPerId` an ID, and that notes each
 * call's size and whether the event loop had a turn since the last call.
 */
function timedCodec(text: string, msPerId: { value: number }) {
  const domain = parseDomain(text);
  const codec = new OpaqueCodec(SECRET.cipherFor('steps', domain), domain);
  let clock = 0;
  const steps: { size: number; ms: number; afterTurn: boolean }[] = [];
  let turned = true;
  const encodeBatch = codec.encodeBatch.bind(codec);
  codec.encodeBatch = (ids: readonly SegmentId[]) => {
    const ms = ids.length * msPerId.value;
    clock += ms;
    steps.push({ size: ids.length, ms, afterTurn: turned });
    turned = false;
    setImmediate(() => {
      turned = true;
    });
    return encodeBatch(ids);
  };
  return { codec, steps, pacing: { budgetMs: OPAQUE_STEP_MS, now: () => clock } };
}

describe('encodeInChunks paced by time', () => {
  it('sizes each step to the budget by the measured cost, yields between steps, and encodes what one call does', async () => {
    const cost = { value: 0.002 };
    const { codec, steps, pacing } = timedCodec('digits:11', cost);
    const ids = Array.from({ length: 5_000 }, (_, i) => i + 1);
    const encoded = await encodeInChunks(codec, ids, pacing);
    assert.deepEqual(encoded.map(String), codec.encodeBatch(ids).map(String));
    steps.pop(); // the reference call above
    assert.equal(
      steps.reduce((sum, step) => sum + step.size, 0),
      ids.length,
    );
    assert.ok(steps.length >= 10, `${steps.length} steps`);
    for (const step of steps) assert.ok(step.afterTurn, 'two steps in one turn of the event loop');
    // After the first (sized by the first estimate), each step fits the budget, with at most one
    // step's remainder (under 64 IDs) added to the last.
    for (const step of steps.slice(1, -1)) assert.ok(step.ms <= OPAQUE_STEP_MS + 1e-9, `${step.ms} ms`);
    assert.ok((steps.at(-1)?.ms ?? 0) <= OPAQUE_STEP_MS + 64 * cost.value);
  });

  it('follows a codec that gets slower: steps shrink within a few calls; none is under 64 IDs', async () => {
    const cost = { value: 0.0005 };
    const { codec, steps, pacing } = timedCodec('bits:53', cost);
    await encodeInChunks(
      codec,
      Array.from({ length: 4_000 }, (_, i) => i + 1),
      pacing,
    );
    const fast = steps.at(-2)?.size ?? 0;
    assert.ok(fast >= 600, `steps of ${fast} at 0.5 µs an ID`);
    steps.length = 0;
    cost.value = 0.004;
    await encodeInChunks(
      codec,
      Array.from({ length: 4_000 }, (_, i) => 10_000 + i),
      pacing,
    );
    // The estimate moves a quarter of the way each call: within 8 calls the step is under 1.5 × budget.
    const late = steps.slice(8, -1);
    assert.ok(late.length > 0);
    for (const step of late) assert.ok(step.ms <= 1.5 * OPAQUE_STEP_MS, `${step.size} IDs, ${step.ms} ms`);
    for (const step of steps.slice(0, -1)) assert.ok(step.size >= 64);
  });

  it('a batch that fits one step is one call, in the same turn', async () => {
    const { codec, steps, pacing } = timedCodec('digits:6', { value: 0.001 });
    const ids = Array.from({ length: 300 }, (_, i) => i + 1);
    const encoded = await encodeInChunks(codec, ids, pacing);
    assert.equal(steps.length, 1);
    assert.equal(encoded.length, 300);
  });
});
