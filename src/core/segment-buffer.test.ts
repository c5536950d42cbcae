import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { settle } from '../../test/support/manual-clock.js';
import { bufferSetup as setup } from '../../test/support/segment-buffer-setup.js';
import { isFrondError } from './errors.js';
import type { SegmentBuffer, SegmentId } from './segment-buffer.js';

const MINUTE = 60_000;

async function take(buffer: SegmentBuffer, n: number): Promise<SegmentId[]> {
  const ids: SegmentId[] = [];
  for (let i = 0; i < n; i++) ids.push(await buffer.next());
  return ids;
}

describe('SegmentBuffer', () => {
  it('hands out 1000 first when max_id is 1000, consecutively within the segment', async () => {
    const { buffer } = setup(100, 1000n);
    const ids = await take(buffer, 100);
    assert.deepEqual(
      ids,
      Array.from({ length: 100 }, (_, i) => 1000 + i),
    );
  });

  it('loads nothing until the first request (lazy)', async () => {
    const { store, buffer } = setup();
    assert.equal(store.calls.length, 0);
    assert.equal(buffer.tryNext(), undefined);
    await settle();
    assert.equal(store.calls.length, 1);
    assert.equal(buffer.tryNext(), 1000);
  });

  it('starts loading the next segment once 10% is used, as Leaf (idle below 0.9 of the step)', async () => {
    const { store, buffer } = setup(100);
    await take(buffer, 11); // 1000..1010: 89 or more left, nothing starts
    await settle();
    assert.equal(store.calls.length, 1);
    await take(buffer, 1); // 1011: 89 left < 90
    await settle();
    assert.equal(store.calls.length, 2);
    assert.equal(buffer.state().nextReady, true);
  });

  it('never runs two loads at once, however many requests pass the mark', async () => {
    const { store, buffer } = setup(100, 1n, {}, true);
    const first = buffer.next();
    store.release();
    assert.equal(await first, 1);
    for (let i = 0; i < 60; i++) buffer.tryNext();
    await settle();
    assert.equal(store.waiting, 1);
    assert.equal(store.calls.length, 2);
    store.release();
    await settle();
    assert.equal(buffer.state().nextReady, true);
  });

  it('switches to the next segment when the current one is used up, and not before', async () => {
    const { buffer } = setup(10, 1n);
    const ids = await take(buffer, 25);
    assert.deepEqual(
      ids,
      Array.from({ length: 25 }, (_, i) => 1 + i),
    );
  });

  it('waits for the load in flight when both buffers are empty, and serves when it lands in time', async () => {
    const { store, buffer, clock } = setup(10, 1n, { segmentWaitMs: 1000 }, true);
    const pending = buffer.next();
    await clock.advance(900);
    store.release();
    assert.equal(await pending, 1);
  });

  it('answers SEGMENT_UNAVAILABLE after the bounded wait when the database is slow, never hangs', async () => {
    const { store, buffer, clock } = setup(10, 1n, { segmentWaitMs: 1000 }, true);
    const pending = buffer.next();
    const outcome = pending.then(
      () => 'served',
      (error: unknown) => error,
    );
    await clock.advance(1000);
    const error = await outcome;
    assert.ok(isFrondError(error, 'SEGMENT_UNAVAILABLE'), String(error));
    assert.equal(error.retryable, true);
    // The late load still lands and is used: its range is ours (a gap at worst, never a repeat).
    store.release();
    await settle();
    assert.equal(buffer.tryNext(), 1);
  });

  it('fails fast after a failed load, then tries again after the retry delay', async () => {
    const { store, buffer, clock } = setup(10, 1n, { retryDelayMs: 500 }, true);
    const first = buffer.next();
    store.fail(new Error('connection refused'));
    await assert.rejects(
      first,
      (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE') && /connection refused/.test(error.message),
    );
    await assert.rejects(buffer.next(), (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    assert.equal(store.calls.length, 1, 'no new load inside the retry delay');
    await clock.advance(500);
    const again = buffer.next();
    assert.equal(store.calls.length, 2);
    store.release();
    assert.equal(await again, 1);
  });

  it('keeps serving buffered IDs while preloads fail, and recovers when the store returns', async () => {
    const { store, buffer, clock } = setup(100, 1n, { retryDelayMs: 100 }, true);
    const first = buffer.next();
    store.release();
    await first;
    const ids: SegmentId[] = [1];
    for (let i = 0; i < 99; i++) {
      const id = buffer.tryNext();
      assert.ok(id !== undefined);
      ids.push(id);
      if (store.waiting > 0) store.fail();
      await settle();
      await clock.advance(10);
    }
    assert.deepEqual(
      ids,
      Array.from({ length: 100 }, (_, i) => 1 + i),
    );
    await clock.advance(100);
    const next = buffer.next();
    store.release();
    const id = await next;
    assert.ok(id > 100, `the next ID ${id} is above every ID handed out`);
  });

  it("uses the table's step for the first two loads, then doubles while segments last under 15 minutes", async () => {
    const { store, buffer, clock } = setup(10, 1n);
    await take(buffer, 10); // load 1 at t0, load 2 (preload) at t0
    await clock.advance(MINUTE);
    await take(buffer, 10); // uses segment 2; its preload is load 3, 1 minute after load 2
    await settle();
    assert.deepEqual(
      store.calls.map((c) => c.step),
      [undefined, undefined, 20],
    );
    assert.equal(buffer.state().step, 20);
  });

  it("halves the step after 30 minutes, never below the table's step", async () => {
    const { store, buffer, clock } = setup(10, 1n);
    await take(buffer, 10);
    await clock.advance(MINUTE);
    await take(buffer, 10); // load 3: 20
    await clock.advance(MINUTE);
    await take(buffer, 20); // load 4: 40
    await clock.advance(31 * MINUTE);
    await take(buffer, 40); // load 5: 31 minutes later, halved to 20
    await clock.advance(31 * MINUTE);
    await take(buffer, 20); // load 6: 10
    await clock.advance(31 * MINUTE);
    await take(buffer, 10); // load 7: stays at the table's 10
    await settle();
    assert.deepEqual(
      store.calls.map((c) => c.step),
      [undefined, undefined, 20, 40, 20, 10, 10],
    );
  });

  // Leaf's SegmentIDGenImpl.updateSegmentFromDb (leaf-core/.../segment/SegmentIDGenImpl.java at
  // 86a6441), from the third load on: `nextStep` is doubled from `buffer.getStep()` (lines 173-179),
  // the buffer keeps it (`setStep(nextStep)`, line 191) and takes only its floor from the row
  // (`setMinStep(leafAlloc.getStep())`, line 192); halving stops at that floor (line 183).
  it("keeps doubling when a DBA lowers the table's step, as Leaf, and halves down to the new step", async () => {
    const { store, buffer, clock } = setup(10, 1n);
    await take(buffer, 10);
    await clock.advance(MINUTE);
    await take(buffer, 10); // load 3 with 20
    await store.setStep('orders', 5);
    for (const used of [20, 40, 80]) {
      await clock.advance(MINUTE);
      await take(buffer, used); // loads 4, 5, 6: 40, 80, 160, whatever the row says
    }
    for (const used of [160, 80, 40, 20, 10, 5]) {
      await clock.advance(31 * MINUTE);
      await take(buffer, used); // loads 7 to 12: halved to 80, 40, 20, 10, 5, and 5 stays
    }
    await settle();
    assert.deepEqual(
      store.calls.map((c) => c.step),
      [undefined, undefined, 20, 40, 80, 160, 80, 40, 20, 10, 5, 5],
    );
    assert.equal(buffer.state().minStep, 5);
  });

  it("keeps its step when a DBA raises the table's step, as Leaf: the row's step is only the floor", async () => {
    const { store, buffer, clock } = setup(10, 1n);
    await take(buffer, 10);
    await clock.advance(MINUTE);
    await take(buffer, 10); // load 3 with 20
    await store.setStep('orders', 500);
    await clock.advance(MINUTE);
    await take(buffer, 20); // load 4 with 40: the floor is now 500
    await clock.advance(31 * MINUTE);
    await take(buffer, 40); // load 5: 40 / 2 is below the floor, so 40 stays (line 183)
    await clock.advance(MINUTE);
    await take(buffer, 40); // load 6: doubled, 80
    await settle();
    assert.deepEqual(
      store.calls.map((c) => c.step),
      [undefined, undefined, 20, 40, 40, 80],
    );
    assert.equal(buffer.state().minStep, 500);
  });

  it('counts the IDs it handed out across segments', async () => {
    const { buffer } = setup(10, 1n);
    await take(buffer, 25);
    await buffer.nextMany(12);
    assert.equal(buffer.state().issued, 37);
  });

  it('spans segments in one batch with increasing IDs', async () => {
    const { buffer } = setup(7, 1n);
    const ids = await buffer.nextMany(30);
    assert.deepEqual(
      ids,
      Array.from({ length: 30 }, (_, i) => 1 + i),
    );
  });

  it('refuses a range below one already handed out (max_id lowered by hand), never a repeat', async () => {
    const { store, buffer } = setup(10, 1n);
    await take(buffer, 20);
    await settle();
    const row = store.rows.get('orders');
    assert.ok(row);
    row.maxId = 5n;
    const seen = new Set<SegmentId>();
    // What is buffered (up to [21, 41) with the doubled step) is served; the bad range is not.
    for (let i = 0; i < 60; i++) {
      try {
        const id = await buffer.next();
        assert.ok(!seen.has(id) && id > 20);
        seen.add(id);
      } catch (error) {
        assert.ok(isFrondError(error, 'SEGMENT_REGRESSED'), String(error));
        return;
      }
    }
    assert.fail('expected SEGMENT_REGRESSED');
  });

  it('serves IDs above 2^53 - 1 exactly, as bigints, and numbers while a segment stays below', async () => {
    const { buffer, store } = setup(3, 2n ** 53n - 4n);
    // [2^53 - 4, 2^53 - 1) in numbers; [2^53 - 1, 2^53 + 2), which passes 2^53 - 1, in bigints.
    assert.deepEqual(await buffer.nextMany(6), [
      2 ** 53 - 4,
      2 ** 53 - 3,
      2 ** 53 - 2,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
    ]);
    assert.equal(typeof (await buffer.next()), 'bigint');
    const big = setup(5, 2n ** 62n + 7n);
    assert.deepEqual(await big.buffer.nextMany(3), [2n ** 62n + 7n, 2n ** 62n + 8n, 2n ** 62n + 9n]);
    assert.equal(big.buffer.state().current.value, 2n ** 62n + 10n);
    assert.ok(store.calls.length >= 2);
  });

  it('serves up to 2^63 - 2, then refuses ID_RANGE_EXHAUSTED without consuming the table', async () => {
    const top = 2n ** 63n - 1n;
    const { buffer, store } = setup(10, top - 20n);
    const ids = await buffer.nextMany(20);
    assert.equal(ids[0], top - 20n);
    assert.equal(ids.at(-1), top - 1n);
    for (let i = 0; i < 5; i++) {
      await assert.rejects(buffer.next(), (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'));
    }
    assert.equal(store.rows.get('orders')?.maxId, top, 'max_id stays at 2^63 - 1');
  });

  it('falls back to the table step when a doubled step no longer fits below 2^63 - 1', async () => {
    const top = 2n ** 63n - 1n;
    const { buffer, store } = setup(10, top - 35n);
    // Loads 1 and 2 use the step 10; load 3 asks for 20, which passes the top; 10 still fits.
    const ids = await buffer.nextMany(30);
    assert.equal(ids.at(-1), top - 6n);
    assert.equal(store.rows.get('orders')?.maxId, top - 5n);
    assert.ok(store.calls.some((call) => call.step === 20));
  });

  it('serves negative IDs as Leaf would (max_id is a signed long)', async () => {
    const { buffer } = setup(3, -10n);
    assert.deepEqual(await buffer.nextMany(4), [-10, -9, -8, -7]);
  });

  it('answers TAG_NOT_FOUND when the row is gone', async () => {
    const { store, buffer } = setup(10, 1n);
    store.rows.delete('orders');
    await assert.rejects(buffer.next(), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
  });
});
