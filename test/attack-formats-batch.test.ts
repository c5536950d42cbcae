import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { OpaqueTags } from '../src/server/opaque/opaque-tags.js';
import { TagIssuer } from '../src/server/opaque/tag-issuer.js';
import { ManualClock } from './support/manual-clock.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';

// Attack: one request for more numbers than the period's whole {seq:N} holds (seen on a real node:
// `GET /v1/segment/ord?count=5000` on `O{yyyy}{MM}{dd}{HH}-{seq:3}` at seq 2) can never be served,
// yet it took seqs 3..5002, dropped them all (a batch is all or nothing) and marked the period used
// up: every client got 503 ID_RANGE_EXHAUSTED for the 49 minutes left of the hour, 997 numbers lost.

describe('attack: a batch larger than a period can hold', () => {
  it('is refused without using up the numbers the period has left', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(Date.parse('2026-12-02T20:10:00Z'));
    const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
    const issuer = new TagIssuer(allocator, new OpaqueTags(allocator, undefined, () => clock.now()));
    const tag = randomTag('burn');
    await store.addTag({
      tag,
      step: 1000,
      start: 1n,
      format: { format: 'O{yyyy}{MM}{dd}{HH}-{seq:3}', timeZone: 'UTC' },
    });
    assert.equal(String(await issuer.one(tag)), 'O2026120220-001');
    await assert.rejects(issuer.many(tag, 5000), (error) => isFrondError(error));
    // The other clients of the tag are still served from the 998 numbers left.
    assert.equal(String(await issuer.one(tag)), 'O2026120220-002');
    allocator.close();
  });
});
