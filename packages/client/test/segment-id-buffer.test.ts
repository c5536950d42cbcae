import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrondClientError, isFrondClientError } from '../src/errors.js';
import type { BufferOptions } from '../src/id-buffer.js';
import { SegmentIdBuffer } from '../src/segment-id-buffer.js';
import { FakeSource, manualClock, turn } from './support/fake-source.js';

function bufferOver(source: FakeSource, options: Partial<BufferOptions> = {}): SegmentIdBuffer<number> {
  return new SegmentIdBuffer(
    't',
    source,
    { fromSafeInteger: (id) => id, fromBigInt: (id) => Number(id) },
    {
      minBatchSize: 10,
      maxBatchSize: 10_000,
      batchTargetMs: 1_000,
      now: Date.now,
      ...options,
    },
  );
}

describe('SegmentIdBuffer', () => {
  it('answers undefined while empty, starts a fetch, then hands out the batch in order', async () => {
    const source = new FakeSource();
    const buffer = bufferOver(source);
    assert.equal(buffer.tryNext(), undefined);
    assert.deepEqual(source.requests, [10]);
    await turn();
    assert.deepEqual([buffer.tryNext(), buffer.tryNext(), buffer.tryNext()], [1, 2, 3]);
  });

  it('fetches the next batch once 10% of the current one is used, before it runs out', async () => {
    const source = new FakeSource();
    const buffer = bufferOver(source, { minBatchSize: 100 });
    assert.equal(await buffer.next(), 1);
    for (let i = 2; i <= 10; i++) assert.equal(buffer.tryTake(), i);
    await turn(2);
    assert.equal(source.requests.length, 1, '10 of 100 used: no prefetch yet');
    assert.equal(buffer.tryTake(), 11);
    await turn(2);
    assert.equal(source.requests.length, 2, 'the 11th ID crosses the 10% mark');
    assert.equal(buffer.state().available, 89 + (source.requests[1] ?? 0));
    // Drain the first batch: the next one is already there, so the hand-over never waits.
    for (let i = 12; i <= 100; i++) assert.equal(buffer.tryTake(), i);
    assert.equal(buffer.tryTake(), 101);
  });

  it('starts the prefetch on a later turn, never inside the caller’s take', async () => {
    const source = new FakeSource();
    const buffer = bufferOver(source, { minBatchSize: 100 });
    await buffer.next();
    for (let i = 0; i < 50; i++) buffer.tryTake();
    assert.equal(source.requests.length, 1);
    await turn();
    assert.equal(source.requests.length, 2);
  });

  it('follows the runs of a batch that spans several server segments', async () => {
    const source = new FakeSource();
    source.gapEvery = 4;
    const buffer = bufferOver(source);
    const ids = await buffer.nextMany(10);
    assert.deepEqual(ids, [1, 2, 3, 4, 12, 13, 14, 15, 23, 24]);
  });

  it('serves a nextIds larger than the largest batch from several fetches, without a repeat', async () => {
    const source = new FakeSource();
    const buffer = bufferOver(source, { maxBatchSize: 100 });
    const ids = await buffer.nextMany(1_234);
    assert.equal(ids.length, 1_234);
    assert.equal(new Set(ids).size, 1_234);
    assert.ok(source.requests.every((count) => count <= 100));
    assert.deepEqual(ids.slice(0, 3), [1, 2, 3]);
  });

  it('gives each of many concurrent callers its own ID while one fetch is in flight', async () => {
    const source = new FakeSource(false);
    const buffer = bufferOver(source);
    const calls = Array.from({ length: 25 }, () => buffer.next());
    assert.equal(source.requests.length, 1, 'one fetch for all waiting callers');
    for (let i = 0; i < 10 && source.pending > 0; i++) {
      source.release();
      await turn();
    }
    const ids = await Promise.all(calls);
    assert.deepEqual(
      ids,
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
    assert.ok(source.requests.length <= 3, `fetches: ${source.requests.join(', ')}`);
  });

  it('grows the batch to the caller’s rate and halves it at most once per fetch when the rate drops', async () => {
    const clock = manualClock();
    const source = new FakeSource();
    const buffer = bufferOver(source, { now: clock.now });
    await buffer.next();
    // 1,000 IDs in 10 ms is 100 IDs/ms: a batch lasting 1 s would be 100,000, capped at 10,000.
    for (let i = 0; i < 999; i++) {
      if ((await buffer.next()) === undefined) assert.fail('no ID');
      if (i % 100 === 0) clock.advance(1);
    }
    await turn(2);
    assert.equal(buffer.state().batchSize, 10_000);
    // Then the rate drops to about 100 IDs/s (a batch of 100 would do): the size halves per fetch
    // instead of dropping to the minimum at once, so one pause does not undo a steady rate.
    for (const expected of [5_000, 2_500]) {
      clock.advance(100_000);
      await buffer.nextMany(buffer.state().available);
      await buffer.next();
      assert.equal(buffer.state().batchSize, expected);
    }
  });

  it('rejects the waiting callers with the fetch’s error, keeps nothing broken, and fetches again on the next call', async () => {
    const source = new FakeSource();
    source.failWith = new FrondClientError('SEGMENT_UNAVAILABLE', 'down', { status: 503, retryable: true });
    const buffer = bufferOver(source);
    await assert.rejects(buffer.next(), (error) => isFrondClientError(error, 'SEGMENT_UNAVAILABLE'));
    assert.equal(buffer.state().lastError?.code, 'SEGMENT_UNAVAILABLE');
    source.failWith = undefined;
    assert.equal(await buffer.next(), 1);
    assert.equal(buffer.state().lastError, undefined);
  });

  it('on close, drops the buffer, rejects waiting callers and new calls with CLIENT_CLOSED, and tryNext answers undefined', async () => {
    const source = new FakeSource(false);
    const buffer = bufferOver(source);
    const pending = buffer.next();
    buffer.close();
    await assert.rejects(pending, (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
    await assert.rejects(buffer.next(), (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
    assert.equal(buffer.tryNext(), undefined, 'tryNext never throws: closed is nothing to hand out');
    source.release(true);
    await turn();
    assert.equal(buffer.state().available, 0, 'a batch landing after close is dropped');
  });

  it('never hands out an ID twice, whatever mix of next, nextMany and tryNext', async () => {
    const source = new FakeSource(false);
    source.gapEvery = 37;
    const buffer = bufferOver(source, { maxBatchSize: 64 });
    const seen = new Set<number>();
    const record = (id: number | undefined) => {
      if (id === undefined) return;
      assert.ok(!seen.has(id), `ID ${id} handed out twice`);
      seen.add(id);
    };
    for (let round = 0; round < 200; round++) {
      const calls = [buffer.next(), buffer.nextMany(1 + (round % 9)), buffer.next()];
      record(buffer.tryNext());
      while (source.pending > 0) {
        source.release();
        await turn();
      }
      const [a, many, b] = await Promise.all(calls);
      record(a as number);
      for (const id of many as number[]) record(id);
      record(b as number);
    }
    assert.ok(seen.size > 1_000);
  });
});
