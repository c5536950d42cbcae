import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settle } from '../../test/support/manual-clock.js';
import { bufferSetup as setup } from '../../test/support/segment-buffer-setup.js';
import { isFrondError } from './errors.js';
import type { IdRun } from './segment-buffer.js';
import { MAX_SEGMENT_ID } from './segment-store.js';

const size = (runs: readonly IdRun[]) => runs.reduce((sum, run) => sum + Number(run.end - run.start), 0);

describe('SegmentBuffer.grant', () => {
  it('grants a small count from the current segment as one run, and the one-ID path goes on after it', async () => {
    const { buffer, store } = setup(100, 1000n);
    assert.deepEqual(await buffer.grant(10), [{ start: 1000n, end: 1010n }]);
    assert.equal(buffer.tryNext(), 1010);
    assert.deepEqual(await buffer.grant(5), [{ start: 1011n, end: 1016n }]);
    // Past the 10% mark the grant preloads the next segment as any request does.
    assert.equal(store.calls.length, 2);
    assert.equal(buffer.state().issued, 16);
  });

  it('joins consecutive segments of one node into one run when a grant spans them', async () => {
    const { buffer } = setup(100, 1n);
    assert.deepEqual(await buffer.grant(150), [{ start: 1n, end: 151n }]);
    assert.equal(buffer.tryNext(), 151);
  });

  it('takes a count above the step straight from the store in one advance, with the next segment behind it', async () => {
    const { buffer, store } = setup(100, 1000n);
    assert.equal(await buffer.next(), 1000);
    await settle();
    // What is buffered first (1001..1099), then one advance of the rest plus a segment for the
    // buffer: 1,000,000 - 99 + 100.
    const runs = await buffer.grant(1_000_000);
    assert.deepEqual(runs, [{ start: 1001n, end: 1_001_001n }]);
    assert.deepEqual(
      store.calls.map((call) => call.step),
      [undefined, 1_000_000 - 99 + 100],
    );
    // The buffer serves the segment behind the grant at once: no load, no wait.
    assert.equal(buffer.tryNext(), 1_001_001);
    assert.equal(store.rows.get('orders')?.maxId, 1_001_101n);
    assert.equal(buffer.state().issued, 1_000_001 + 1);
  });

  it('keeps IDs increasing per node: one-ID requests during a direct grant get IDs above it', async () => {
    const { buffer, store } = setup(10, 1n, {}, true);
    const first = buffer.next();
    store.release();
    assert.equal(await first, 1);
    await settle();
    store.release(); // the preload: 11..20
    await settle();
    const granted = buffer.grant(1_000);
    const during = buffer.next();
    await settle();
    assert.equal(store.waiting, 1, 'one advance, the grant');
    store.release();
    const runs = await granted;
    const id = await during;
    assert.equal(size(runs), 1_000);
    const last = (runs.at(-1) as IdRun).end - 1n;
    assert.ok(BigInt(id) > last, `${id} after a grant ending at ${last}`);
  });

  it('waits for a load in flight before its direct advance, so that advance cannot overtake it', async () => {
    const { buffer, store } = setup(10, 1n, {}, true);
    const first = buffer.next();
    store.release();
    await first;
    for (let i = 0; i < 5; i++) buffer.tryNext(); // past the 10% mark: a preload is in flight
    await settle();
    assert.equal(store.waiting, 1);
    const granted = buffer.grant(500);
    await settle();
    assert.equal(store.waiting, 1, 'the grant waits for the preload');
    store.release();
    await settle();
    assert.equal(store.waiting, 1, 'then advances once');
    store.release();
    const runs = await granted;
    assert.equal(size(runs), 500);
    for (let i = 1; i < runs.length; i++)
      assert.ok((runs[i] as IdRun).start >= (runs[i - 1] as IdRun).end, 'runs increase');
    assert.deepEqual(runs[0], { start: 7n, end: 507n });
  });

  it('exact beyond 2^53 and up to 2^63 - 1; a grant that would pass it is refused alone', async () => {
    const top = MAX_SEGMENT_ID - 1_000n;
    const { buffer, store } = setup(10, top);
    const runs = await buffer.grant(500);
    assert.deepEqual(runs, [{ start: top, end: top + 500n }]);
    await assert.rejects(buffer.grant(1_000), (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'));
    // The tag still has room for what fits, and the one-ID path still serves.
    assert.equal(typeof (await buffer.next()), 'bigint');
    assert.equal(size(await buffer.grant(50)), 50);
    assert.ok((store.rows.get('orders')?.maxId as bigint) <= MAX_SEGMENT_ID);
  });

  it('answers SEGMENT_UNAVAILABLE after the bounded wait when the store hangs, and the late range is a gap', async () => {
    const { buffer, store, clock } = setup(10, 1n, { segmentWaitMs: 1_000 }, true);
    const first = buffer.next();
    store.release();
    await first;
    await settle();
    store.release();
    await settle();
    const outcome = buffer.grant(1_000).then(
      () => 'granted',
      (error: unknown) => error,
    );
    await settle();
    await clock.advance(1_000);
    assert.ok(isFrondError(await outcome, 'SEGMENT_UNAVAILABLE'));
    store.release();
    await settle();
    // The grant's IDs were never handed out; the buffer serves above them.
    const id = buffer.tryNext();
    assert.ok(typeof id === 'number' && id > 1_000, String(id));
  });

  it('answers SEGMENT_UNAVAILABLE when the store fails, and TAG_NOT_FOUND for a tag without a row', async () => {
    const { buffer, store } = setup(10, 1n, {}, true);
    const first = buffer.next();
    store.release();
    await first;
    await settle();
    store.release();
    await settle();
    const failed = buffer.grant(1_000);
    await settle();
    store.fail(new Error('connection refused'));
    await assert.rejects(failed, (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    const missing = setup(10, 1n);
    missing.store.rows.clear();
    await assert.rejects(missing.buffer.grant(5), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
  });
});
