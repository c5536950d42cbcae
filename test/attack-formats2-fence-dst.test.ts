import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseFormat, periodAt } from '../src/core/id-format.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { firstStartOf } from '../src/server/opaque/formatted-tag.js';
import { OpaqueTags } from '../src/server/opaque/opaque-tags.js';
import { TagIssuer } from '../src/server/opaque/tag-issuer.js';
import { ManualClock } from './support/manual-clock.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';

const ms = (iso: string) => Date.parse(iso);

function node(store: MemoryStore, clock: ManualClock) {
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const opaque = new OpaqueTags(allocator, undefined, () => clock.now());
  return { allocator, issuer: new TagIssuer(allocator, opaque) };
}

/** Runs `run` with the database's clock (MemoryStore's fenced_at is Date.now()) at `atMs`. */
async function databaseAt<T>(atMs: number, run: () => Promise<T> | T): Promise<T> {
  const real = Date.now;
  Date.now = () => atMs;
  try {
    return await run();
  } finally {
    Date.now = real;
  }
}

/**
 * The fence rule (src/stores/new-names.ts startsAfterFence) assumes a period's counter can have
 * served only after the period's start: a period starting more than an hour after the last fence
 * starts at 1. In a zone whose clocks go back by two hours (Antarctica/Troll: +02 to +00 on the
 * last Sunday of October at 01:00 UTC) a local hour happens twice, two hours apart, and shares one
 * counter (formats.md); periodAt gives the second stretch its own start. Every clock here is exact
 * (node and database agree to the millisecond), so the documented one-hour assumption holds.
 */
describe('attack-formats2: a fence and an hour that happens twice, two hours apart', () => {
  it('Antarctica/Troll {HH}: the lost 01 hour served again from 1 after a fence, no clock skew', async () => {
    // The database made (fenced_at at creation) the evening before.
    const store = await databaseAt(ms('2026-10-24T20:00:00Z'), () => new MemoryStore());
    const tag = randomTag('troll');
    await store.addTag({
      tag,
      step: 5,
      start: 1n,
      format: { format: 'T{yyyy}{MM}{dd}{HH}-{seq:6}', timeZone: 'Antarctica/Troll' },
    });
    // 23:10 UTC = 01:10 local (+02): the first 01 hour. Three numbers served.
    const clock = new ManualClock(ms('2026-10-24T23:10:00Z'));
    const first = node(store, clock);
    const before = [String(await first.issuer.one(tag)), ...(await first.issuer.many(tag, 2)).map(String)];
    assert.deepEqual(before, ['T2026102501-000001', 'T2026102501-000002', 'T2026102501-000003']);
    first.allocator.close();
    // The database fails over at 23:30 and the replica had not got the counter (or a backup taken
    // at 23:00 is restored): the counter's rows are gone, as everything the database lost.
    for (const name of [...store.rows.keys()]) if (name.startsWith(`${tag}\u001f`)) store.rows.delete(name);
    for (const name of [...store.highWater.keys()])
      if (name.startsWith(`${tag}\u001f`)) store.highWater.delete(name);
    for (const name of [...store.formats.keys()])
      if (name.startsWith(`${tag}\u001f`)) store.formats.delete(name);
    // The operator fences at 23:40 UTC (database clock = node clock), with a --fence-skip of 1,000 (what the docs advise for {seq:N}).
    await databaseAt(ms('2026-10-24T23:40:00Z'), () =>
      store.primitive.fence({ observedEpoch: 1, aboveEpoch: 1, skip: 1_000n, atLeast: new Map() }),
    );
    // 01:10 UTC = 01:10 local (+00): the 01 hour again, the same counter name, its stretch's start
    // 01:00 UTC, more than an hour after the fence: the rule says it cannot have served.
    clock.set(ms('2026-10-25T01:10:00Z'));
    const second = node(store, clock);
    const after = [String(await second.issuer.one(tag)), ...(await second.issuer.many(tag, 2)).map(String)];
    second.allocator.close();
    const repeated = after.filter((id) => before.includes(id));
    assert.deepEqual(
      repeated,
      [],
      `served twice: ${repeated.join(', ')} (before the fence ${before}, after ${after})`,
    );
  });

  it('firstStartOf: the first stretch of the key (Troll two hours back), else the stretch itself', () => {
    const first = (format: string, timeZone: string, at: string) => {
      const parsed = parseFormat({ format, timeZone });
      return new Date(firstStartOf(parsed, periodAt(parsed, ms(at)))).toISOString();
    };
    assert.equal(
      first('{yyyy}{MM}{dd}{HH}{seq:6}', 'Antarctica/Troll', '2026-10-25T01:30:00Z'),
      '2026-10-24T23:00:00.000Z',
    );
    assert.equal(
      first('{yyyy}{MM}{dd}{HH}{seq:6}', 'Antarctica/Troll', '2026-10-25T02:30:00Z'),
      '2026-10-25T00:00:00.000Z',
    );
    assert.equal(
      first('{yyyy}{MM}{dd}{HH}{seq:6}', 'Europe/Berlin', '2026-10-25T01:30:00Z'),
      '2026-10-25T00:00:00.000Z',
    );
    assert.equal(
      first('{yyyy}{MM}{dd}{seq:6}', 'Australia/Lord_Howe', '2026-04-05T12:00:00Z'),
      '2026-04-04T13:00:00.000Z',
    );
    assert.equal(
      first('{yyyy}{MM}{dd}{HH}{seq:6}', 'UTC', '1600-01-01T00:30:00Z'),
      '1600-01-01T00:00:00.000Z',
    );
    const all = parseFormat({ format: '{seq:6}', timeZone: 'UTC' });
    assert.equal(firstStartOf(all, periodAt(all, ms('2026-01-01T00:00:00Z'))), Number.NEGATIVE_INFINITY);
  });
});
