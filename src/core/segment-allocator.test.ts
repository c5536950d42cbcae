import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, settle } from '../../test/support/manual-clock.js';
import { MemoryStore } from '../../test/support/memory-store.js';
import { FrondError, isFrondError } from './errors.js';
import { silentLogger } from './logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from './segment-allocator.js';

function setup() {
  const store = new MemoryStore();
  const clock = new ManualClock();
  const allocator = new SegmentAllocator(store, clock, silentLogger, {
    ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    tagRefreshMs: 60_000,
    missingTagTtlMs: 1_000,
  });
  return { store, clock, allocator };
}

describe('SegmentAllocator', () => {
  it('creates an empty buffer per tag at start and touches no max_id', async () => {
    const { store, allocator } = setup();
    await store.addTag({ tag: 'a', step: 10, start: 1n });
    await store.addTag({ tag: 'b', step: 10, start: 1n });
    await allocator.start();
    assert.deepEqual(allocator.tags().sort(), ['a', 'b']);
    assert.equal(store.calls.length, 0);
    allocator.close();
  });

  it('serves a tag inserted after start on its first request, without waiting for the refresh', async () => {
    const { store, allocator } = setup();
    await allocator.start();
    await store.addTag({ tag: 'late', step: 10, start: 500n });
    assert.equal(await allocator.next('late'), 500);
    allocator.close();
  });

  it('answers TAG_NOT_FOUND for a tag without a row, and remembers it for a second', async () => {
    const { store, clock, allocator } = setup();
    await allocator.start();
    await assert.rejects(allocator.next('ghost'), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
    await assert.rejects(allocator.nextMany('ghost', 3), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
    assert.equal(store.calls.length, 1, 'the second request did not reach the store');
    assert.deepEqual(allocator.tags(), []);
    await store.addTag({ tag: 'ghost', step: 10, start: 1n });
    await clock.advance(1_000);
    assert.equal(await allocator.next('ghost'), 1);
    allocator.close();
  });

  it('rejects an invalid tag name before touching the store', async () => {
    const { store, allocator } = setup();
    for (const bad of ['', 'bad\ttag', 'x'.repeat(129), '..']) {
      await assert.rejects(allocator.next(bad), (error) => isFrondError(error, 'INVALID_TAG'));
    }
    assert.equal(store.calls.length, 0);
  });

  it('serves any tag a varchar(128) holds: UTF-8, spaces, punctuation, 128 characters', async () => {
    const { store, allocator } = setup();
    const tags = ['订单', 'order tag', 'order@v2', 'a~b', 'a,b', 'a:b', 'a/b', '😀'.repeat(128)];
    for (const tag of tags) store.rows.set(tag, { maxId: 7n, step: 10 });
    for (const tag of tags) assert.equal(await allocator.next(tag), 7, tag);
  });

  it('reports a tag in the table that cannot be served when it loads the list, once, naming it', async () => {
    const store = new MemoryStore();
    store.rows.set('ok', { maxId: 1n, step: 10 });
    store.rows.set('bad\ttag', { maxId: 1n, step: 10 });
    const lines: { level: string; event: string; fields: Record<string, unknown> | undefined }[] = [];
    const logger = {
      log: (level: string, event: string, fields?: Record<string, unknown>) =>
        lines.push({ level, event, fields }),
    };
    const allocator = new SegmentAllocator(store, new ManualClock(), logger);
    await allocator.start();
    await allocator.refresh();
    allocator.close();
    const warnings = lines.filter((line) => line.event === 'segment.tag_unservable');
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]?.level, 'warn');
    assert.equal(warnings[0]?.fields?.tag, 'bad\ttag');
    assert.deepEqual(allocator.tags(), ['ok']);
  });

  it('adds new tags and drops removed ones on the periodic refresh, but ignores an empty list', async () => {
    const { store, clock, allocator } = setup();
    await store.addTag({ tag: 'a', step: 10, start: 1n });
    await allocator.start();
    await store.addTag({ tag: 'b', step: 10, start: 1n });
    store.rows.delete('a');
    await clock.advance(60_000);
    await settle();
    assert.deepEqual(allocator.tags(), ['b']);
    store.rows.clear();
    await clock.advance(60_000);
    await settle();
    assert.deepEqual(allocator.tags(), ['b'], 'an empty table does not drop what is buffered');
    allocator.close();
    assert.equal(clock.pendingTimers, 0, 'close stops the refresh timer');
  });

  it('logs the moment the store is lost and the moment it is back, once each', async () => {
    const events: string[] = [];
    const store = new MemoryStore();
    await store.addTag({ tag: 'a', step: 10, start: 1n });
    const clock = new ManualClock();
    const allocator = new SegmentAllocator(
      store,
      clock,
      { log: (_level, event) => events.push(event) },
      {
        ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
        retryDelayMs: 0,
      },
    );
    await allocator.start();
    const listTags = store.listTags.bind(store);
    store.listTags = async () => {
      throw new Error('connection refused');
    };
    await allocator.refresh();
    await allocator.refresh();
    assert.equal(allocator.storeReachable, false);
    store.listTags = listTags;
    await allocator.refresh();
    assert.equal(allocator.storeReachable, true);
    assert.deepEqual(
      events.filter((e) => e.startsWith('store.')),
      ['store.lost', 'store.back'],
    );
    allocator.close();
  });

  it('keeps why the store is unreachable: the last failed call, a load or a tag-list read, until one works', async () => {
    const { store, clock, allocator } = setup();
    await store.addTag({ tag: 'a', step: 10, start: 1n });
    await allocator.start();
    assert.equal(allocator.storeFailure, undefined);
    const advance = store.advance.bind(store);
    store.advance = async () => {
      throw new FrondError('STORE_UNAVAILABLE', 'memory: connect ECONNRESET');
    };
    await assert.rejects(allocator.next('a'));
    assert.deepEqual(allocator.storeFailure, {
      code: 'STORE_UNAVAILABLE',
      message: 'memory: connect ECONNRESET',
      at: clock.now(),
    });
    // A later failure replaces it; anything not a FrondError counts as STORE_UNAVAILABLE.
    store.listTags = async () => {
      throw new Error('connection refused');
    };
    await clock.advance(5);
    await allocator.refresh();
    assert.deepEqual(allocator.storeFailure, {
      code: 'STORE_UNAVAILABLE',
      message: 'connection refused',
      at: clock.now(),
    });
    store.advance = advance;
    // The tag's buffer waits retryDelayMs (500) after its failed load before it loads again.
    await clock.advance(500);
    assert.equal(await allocator.next('a'), 1);
    assert.equal(allocator.storeFailure, undefined);
    allocator.close();
  });

  it('keeps one buffer for concurrent first requests of a tag: one load, distinct IDs', async () => {
    const { store, allocator } = setup();
    // A step of 1000, so 50 IDs stay under the 10% mark and no preload starts.
    await store.addTag({ tag: 'a', step: 1000, start: 1n });
    const ids = await Promise.all(Array.from({ length: 50 }, () => allocator.next('a')));
    assert.equal(new Set(ids).size, 50);
    assert.equal(store.calls.length, 1);
  });
});
