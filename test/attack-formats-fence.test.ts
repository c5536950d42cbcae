import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { counterName, parseFormat, periodAt } from '../src/core/id-format.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { OpaqueTags } from '../src/server/opaque/opaque-tags.js';
import { TagIssuer } from '../src/server/opaque/tag-issuer.js';
import { NEW_NAMES } from '../src/stores/new-names.js';
import { ManualClock } from './support/manual-clock.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';

// Attack on "a period that starts more than an hour after the last fence starts at 1": the period's
// start a node sends (periodAt's startMs) is the start of the stretch of the period's key that holds
// the node's clock, not the first moment the key was ever served. Antarctica/Troll falls back two
// hours (+02 to +00 at 01:00 UTC on the last Sunday of October): local 01:00-03:00 happens twice and
// the two 01 hours are NOT adjacent (02 lies between), so the second 01 hour's startMs is two hours
// after the first's. A fence that ran in the first 01 hour (after a failover/restore that lost the
// counter's creation) is more than an hour before that startMs, and the counter of the key that
// already served numbers is created again at 1.

const node = (store: MemoryStore, clock: ManualClock) => {
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const opaque = new OpaqueTags(allocator, undefined, () => clock.now());
  return { allocator, issuer: new TagIssuer(allocator, opaque) };
};
const ms = (iso: string) => Date.parse(iso);
const FORMAT = 'T{yyyy}{MM}{dd}{HH}-{seq:12}';
const ZONE = 'Antarctica/Troll';

describe('attack: the fence margin and a repeated local hour that is not adjacent (Antarctica/Troll)', () => {
  it('periodAt: the second 01 hour of 2026-10-25 in Troll shares the key of the first, two hours later', () => {
    const format = parseFormat({ format: FORMAT, timeZone: ZONE });
    const first = periodAt(format, ms('2026-10-24T23:10:00Z'));
    const second = periodAt(format, ms('2026-10-25T01:10:00Z'));
    assert.equal(first.key, '2026102501');
    assert.equal(second.key, first.key, 'one key, one counter (the design)');
    // What the node sends as periodStartMs for the second stretch:
    assert.ok(second.startMs - first.startMs >= 2 * 3_600_000, `${second.startMs - first.startMs} ms apart`);
  });

  it('a fence in the first 01 hour after the counter was lost: the second 01 hour serves no number twice', async () => {
    const store = new MemoryStore();
    const tag = randomTag('troll');
    await store.addTag({ tag, step: 5, start: 1n, format: { format: FORMAT, timeZone: ZONE } });
    // Node A: local 2026-10-25 01:10 (+02).
    const clockA = new ManualClock(ms('2026-10-24T23:10:00Z'));
    const a = node(store, clockA);
    const servedA = [
      String(await a.issuer.one(tag)),
      String(await a.issuer.one(tag)),
      String(await a.issuer.one(tag)),
    ];
    assert.deepEqual(servedA, [
      'T2026102501-000000000001',
      'T2026102501-000000000002',
      'T2026102501-000000000003',
    ]);
    a.allocator.close();
    // The primary fails over to a replica that never saw the counter (its row, format row and
    // high-water record lost with the commits), as a restore from a backup taken before 23:00 UTC.
    const counter = counterName(tag, '2026102501');
    store.rows.delete(counter);
    store.formats.delete(counter);
    store.highWater.delete(counter);
    await store.primitive.fence({
      observedEpoch: 1,
      aboveEpoch: 1,
      skip: 1_000_000_000n,
      atLeast: new Map(),
    });
    assert.ok(
      (store.highWater.get(NEW_NAMES) ?? 0n) >= 1_000_000_000n,
      'the fence raised the new-names floor',
    );
    // The fence ran at 23:20 UTC (the database's clock), in the first 01 hour.
    store.fenced.atMs = ms('2026-10-24T23:20:00Z');
    // Node B, a fresh node, with a correct clock: local 01:10 again (+00), key 2026102501 again.
    const clockB = new ManualClock(ms('2026-10-25T01:10:00Z'));
    const b = node(store, clockB);
    const servedB = [String(await b.issuer.one(tag)), String(await b.issuer.one(tag))];
    b.allocator.close();
    const twice = servedB.filter((id) => servedA.includes(id));
    assert.deepEqual(twice, [], `served twice: ${twice.join(', ')} (B served ${servedB.join(', ')})`);
  });
});
