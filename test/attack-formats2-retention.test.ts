import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { FormatRetention } from '../src/server/opaque/format-retention.js';
import { OpaqueTags } from '../src/server/opaque/opaque-tags.js';
import { TagIssuer } from '../src/server/opaque/tag-issuer.js';
import { ManualClock } from './support/manual-clock.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';

function node(store: MemoryStore, clock: ManualClock) {
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const opaque = new OpaqueTags(allocator, undefined, () => clock.now());
  return { allocator, issuer: new TagIssuer(allocator, opaque) };
}

// Node A's clock 9 days ahead of node B's runs the clean-up on the day B still serves, again and
// again while B serves (a counter removed and re-created with the same period, many times), in a
// period after the database's fence row (so the counter starts from its own record only).
describe('attack-formats2: the clean-up racing a node whose clock is behind', () => {
  it('B serves its day across repeated removals and re-creations, no number twice', async () => {
    const store = new MemoryStore();
    const day = new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10);
    const clockB = new ManualClock(Date.parse(`${day}T10:00:00Z`));
    const clockA = new ManualClock(Date.parse(`${day}T10:00:00Z`) + 9 * 86_400_000);
    const tag = randomTag('sweep');
    await store.addTag({
      tag,
      step: 7,
      start: 1n,
      format: { format: 'R{yyyy}{MM}{dd}-{seq:8}', timeZone: 'UTC' },
    });
    const b = node(store, clockB);
    const retention = new FormatRetention(store, clockA, silentLogger, 7, 600_000);
    const served: string[] = [];
    let removed = 0;
    for (let round = 0; round < 30; round++) {
      served.push(...(await b.issuer.many(tag, 1 + (round % 5))).map(String));
      if (round % 3 === 0) removed += (await retention.sweep()).length;
      clockB.set(clockB.now() + 1_000);
    }
    b.allocator.close();
    assert.ok(removed >= 5, `the clean-up removed B's counter ${removed} times`);
    assert.equal(
      new Set(served).size,
      served.length,
      `served twice: ${served.filter((id, i) => served.indexOf(id) !== i)}`,
    );
    assert.ok(
      served.every((id) => id.startsWith(`R${day.replaceAll('-', '')}-`) && id.length === 18),
      served.join(','),
    );
  });
});
