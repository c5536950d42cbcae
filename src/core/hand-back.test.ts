import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, settle } from '../../test/support/manual-clock.js';
import { MemoryStore } from '../../test/support/memory-store.js';
import { bufferSetup } from '../../test/support/segment-buffer-setup.js';
import { isFrondError } from './errors.js';
import type { HandBackResult, HeldRange } from './id-gaps.js';
import { silentLogger } from './logger.js';
import type { CoreObserver } from './observer.js';
import {
  DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
  SegmentAllocator,
  type SegmentAllocatorOptions,
} from './segment-allocator.js';
import type { SegmentId } from './segment-buffer.js';

function allocatorOn(
  store: MemoryStore,
  options: Partial<SegmentAllocatorOptions> = {},
  observer?: CoreObserver,
) {
  const clock = new ManualClock();
  return new SegmentAllocator(
    store,
    clock,
    silentLogger,
    { ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, ...options },
    observer,
  );
}

async function take(allocator: SegmentAllocator, tag: string, n: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < n; i++) ids.push(BigInt(await allocator.next(tag)));
  return ids;
}

describe('SegmentBuffer.retire', () => {
  it('answers the current rest and the next segment, then serves and loads nothing', async () => {
    const { store, buffer } = bufferSetup(100, 1000n);
    for (let i = 0; i < 20; i++) await buffer.next(); // 1000..1019; the next segment loads past 10%
    await settle();
    assert.equal(store.calls.length, 2);
    const retired = await buffer.retire();
    assert.deepEqual(retired, {
      held: [
        { start: 1020n, end: 1100n, reason: 'unsafe_hand_back' },
        { start: 1100n, end: 1200n, reason: 'unsafe_hand_back' },
      ],
      to: 1200n,
    });
    assert.equal(buffer.tryNext(), undefined);
    await assert.rejects(
      buffer.next(),
      (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE') && /stopping/.test(error.message),
    );
    await assert.rejects(buffer.grant(500), (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    await settle();
    assert.equal(store.calls.length, 2, 'no load after the stop');
  });

  it('waits for the load in flight, and holds what it brought', async () => {
    const { store, buffer } = bufferSetup(10, 0n, {}, true);
    const first = buffer.next();
    store.release();
    assert.equal(await first, 0);
    for (let i = 0; i < 2; i++) await buffer.next(); // 0..2: the next load starts and waits
    assert.equal(store.waiting, 1);
    const retiring = buffer.retire();
    store.release();
    assert.deepEqual(await retiring, {
      held: [
        { start: 3n, end: 10n, reason: 'unsafe_hand_back' },
        { start: 10n, end: 20n, reason: 'unsafe_hand_back' },
      ],
      to: 20n,
    });
    assert.equal(buffer.tryNext(), undefined);
  });

  it('answers undefined for a buffer that was never granted a segment', async () => {
    const { buffer } = bufferSetup();
    assert.equal(await buffer.retire(), undefined);
  });
});

describe('SegmentAllocator.handBackAll', () => {
  it('gives the tail back: the next node goes on with the next ID, and nothing is a gap', async () => {
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const handedBack: bigint[] = [];
    const observer: CoreObserver = {
      segmentLoaded() {},
      idsGivenUp() {
        assert.fail('nothing given up');
      },
      idsHandedBack(_tag, count) {
        handedBack.push(count);
      },
    };
    const first = allocatorOn(store, {}, observer);
    const before = await take(first, 't', 15);
    await settle();
    const granted = store.rows.get('t')?.maxId as bigint;
    const summary = await first.handBackAll();
    assert.equal(summary.failed.length, 0);
    assert.deepEqual(summary.gaps, []);
    assert.equal(store.rows.get('t')?.maxId, 16n);
    assert.equal(summary.handedBack, granted - 16n);
    assert.deepEqual(handedBack, [summary.handedBack]);
    await assert.rejects(first.next('t'), (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    await assert.rejects(first.next('other'), (error) => isFrondError(error, 'SEGMENT_UNAVAILABLE'));
    const second = allocatorOn(store);
    const after = await take(second, 't', 5);
    assert.equal(after[0], (before[before.length - 1] as bigint) + 1n, 'consecutive across the stop');
    assert.equal(await store.listGaps('t').then((gaps) => gaps.length), 0);
  });

  it('records the tail as a gap when another node was granted a segment after it, and never issues it', async () => {
    const store = new MemoryStore();
    await store.addTag({ tag: 't', step: 10, start: 1n });
    const a = allocatorOn(store);
    const b = allocatorOn(store);
    const fromA = await take(a, 't', 3);
    const fromB = await take(b, 't', 3);
    const summary = await a.handBackAll();
    assert.equal(summary.handedBack, 0n);
    assert.deepEqual(
      summary.gaps.map((gap) => [gap.start, gap.end, gap.reason]),
      [
        [4n, 11n, 'unsafe_hand_back'],
        [11n, 21n, 'unsafe_hand_back'],
      ],
    );
    const more = await take(b, 't', 30);
    const all = [...fromA, ...fromB, ...more];
    assert.equal(new Set(all).size, all.length, 'no ID twice');
    for (const id of more) assert.ok(id < 4n || id >= 21n, `${id} is in a gap`);
  });

  it("hands back an opaque tag's look-ahead with the buffer when it runs into the buffer's rest", async () => {
    const store = new MemoryStore();
    await store.addTag({ tag: 'o', step: 100, start: 0n });
    const a = allocatorOn(store);
    const taken = await take(a, 'o', 30); // 0..29; say 20..29 were taken ahead and never served
    assert.equal(taken[29], 29n);
    const extra = new Map<string, HeldRange[]>([
      ['o', [{ start: 20n, end: 30n, reason: 'opaque_look_ahead' }]],
    ]);
    const summary = await a.handBackAll({ extra });
    assert.deepEqual(summary.gaps, []);
    assert.equal(store.rows.get('o')?.maxId, 20n);
  });

  it('lists a tag whose hand-back fails or does not answer, and still ends', async () => {
    const store = new MemoryStore();
    await store.addTag({ tag: 'f', step: 10, start: 1n });
    await store.addTag({ tag: 'h', step: 10, start: 1n });
    const clock = new ManualClock();
    const failing = Object.assign(Object.create(store) as MemoryStore, {
      handBack: (tag: string): Promise<HandBackResult> =>
        tag === 'f' ? Promise.reject(new Error('connection refused')) : new Promise<HandBackResult>(() => {}),
    });
    const a = new SegmentAllocator(failing, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
    await take(a, 'f', 1);
    await take(a, 'h', 1);
    const stopping = a.handBackAll({ timeoutMs: 1_000 });
    await settle();
    await clock.advance(1_000);
    const summary = await stopping;
    assert.deepEqual(summary.failed.sort(), ['f', 'h']);
    assert.equal(summary.handedBack, 0n);
  });
});

describe('dense tags', () => {
  it('load the next segment only when the current one runs out, always by the table step', async () => {
    const store = new MemoryStore();
    await store.addTag({ tag: 'd', step: 10, start: 0n });
    await store.addTag({ tag: 'p', step: 10, start: 0n });
    const a = allocatorOn(store, { dense: (tag) => tag === 'd' });
    const ids: SegmentId[] = [];
    for (let i = 0; i < 95; i++) ids.push(await a.next('d'));
    await settle();
    const dense = store.calls.filter((call) => call.tag === 'd');
    assert.equal(dense.length, 10, 'segments 0..9, none ahead');
    assert.ok(
      dense.every((call) => call.step === undefined),
      'the table step each time',
    );
    assert.deepEqual(
      ids,
      Array.from({ length: 95 }, (_, i) => i),
    );
    const held = await a.handBackAll();
    assert.equal(held.handedBack, 5n, 'only the rest of the current segment');
    for (let i = 0; i < 5; i++) await a.next('p').catch(() => undefined);
  });
});
