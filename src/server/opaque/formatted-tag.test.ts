import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { isFrondError, RetryLaterError } from '../../core/errors.js';
import { counterName } from '../../core/id-format.js';
import { silentLogger } from '../../core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../../core/segment-allocator.js';
import { httpStatusOf } from '../http/http-status.js';
import { FormatRetention, latestPeriodEnd } from './format-retention.js';
import { removeTagAndCounters } from './format-setting.js';
import { FormattedTag } from './formatted-tag.js';
import { OpaqueTags } from './opaque-tags.js';
import { TagIssuer } from './tag-issuer.js';

function node(store: MemoryStore, clock: ManualClock) {
  const allocator = new SegmentAllocator(store, clock, silentLogger, DEFAULT_SEGMENT_ALLOCATOR_OPTIONS);
  const opaque = new OpaqueTags(allocator, undefined, () => clock.now());
  return { allocator, opaque, issuer: new TagIssuer(allocator, opaque) };
}

const ms = (iso: string) => Date.parse(iso);

async function addFormatted(store: MemoryStore, tag: string, format: string, timeZone: string, step = 10) {
  await store.addTag({ tag, step, start: 1n, format: { format, timeZone } });
}

describe('formatted tags served (FormattedTag through TagIssuer)', () => {
  it('numbers restart at 1 at local midnight in Asia/Shanghai, well formed and unique, learned from the first grant', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(ms('2026-12-31T15:59:50Z'));
    const { issuer, opaque } = node(store, clock);
    const tag = randomTag('day');
    await addFormatted(store, tag, 'O{yyyy}{MM}{dd}-{seq:4}', 'Asia/Shanghai', 7);
    assert.equal(opaque.modeOf(tag), undefined, 'not preloaded: the first grant says formatted');
    const served: { id: string; at: number }[] = [];
    for (let step = 0; step < 20; step++) {
      const at = clock.now();
      const one = issuer.tryOne(tag) ?? (await issuer.one(tag));
      served.push({ id: String(one), at });
      for (const id of await issuer.many(tag, 3)) served.push({ id: String(id), at });
      clock.set(at + 1_000);
    }
    assert.ok(opaque.modeOf(tag) instanceof FormattedTag);
    const midnight = ms('2026-12-31T16:00:00Z');
    const shape = /^O(20261231|20270101)-([0-9]{4})$/;
    const seqs = new Map<string, number[]>();
    for (const { id, at } of served) {
      const match = shape.exec(id);
      assert.ok(match, id);
      assert.equal(
        match[1],
        at < midnight ? '20261231' : '20270101',
        `${id} at ${new Date(at).toISOString()}`,
      );
      const list = seqs.get(match[1] as string) ?? [];
      list.push(Number(match[2]));
      seqs.set(match[1] as string, list);
    }
    assert.equal(new Set(served.map((one) => one.id)).size, served.length, 'no number twice');
    for (const [day, list] of seqs) {
      assert.equal(list[0], 1, `${day} starts at 1`);
      assert.deepEqual(
        list,
        [...list].sort((a, b) => a - b),
        `${day} in order`,
      );
    }
    assert.equal(seqs.get('20261231')?.length, 40);
    assert.ok(store.rows.has(counterName(tag, '20261231')) && store.rows.has(counterName(tag, '20270101')));
    await assert.rejects(issuer.ranges(tag, 10), (error) => isFrondError(error, 'FORMAT_NO_RANGES'));
  });

  it('a period that runs out of {seq:2} refuses with ID_RANGE_EXHAUSTED, 503 and the seconds to the next period; the next one starts at 01', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(ms('2026-12-15T23:59:00Z'));
    const { issuer, opaque } = node(store, clock);
    const tag = randomTag('tiny');
    await addFormatted(store, tag, 'D{yyyy}{MM}{dd}-{seq:2}', 'UTC', 1000);
    await opaque.preload();
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(...(await issuer.many(tag, 10)).map(String));
    for (let i = 0; i < 9; i++) ids.push(String(await issuer.one(tag)));
    assert.deepEqual(
      ids,
      Array.from({ length: 99 }, (_, i) => `D20261215-${String(i + 1).padStart(2, '0')}`),
    );
    for (const take of [() => issuer.one(tag), () => issuer.many(tag, 5)]) {
      const refused = await take().then(
        (value) => assert.fail(`served ${String(value)}`),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof RetryLaterError && refused.code === 'ID_RANGE_EXHAUSTED', String(refused));
      assert.equal(refused.retryAfterSeconds, 60);
      assert.equal(httpStatusOf(refused), 503);
    }
    assert.equal(issuer.tryOne(tag), undefined, 'nothing wider from the buffer either');
    clock.set(ms('2026-12-16T00:00:01Z'));
    assert.deepEqual((await issuer.many(tag, 3)).map(String), [
      'D20261216-01',
      'D20261216-02',
      'D20261216-03',
    ]);
  });

  it('a formatted tag removed keeps its format: another kind or format under the name is refused, the same goes on above what it served', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(ms('2026-06-01T10:00:00Z'));
    const { issuer, allocator } = node(store, clock);
    const tag = randomTag('fixed');
    // Another row: a refresh that reads an empty table changes nothing (segment-allocator.ts).
    await store.addTag({ tag: randomTag('other'), step: 5, start: 1n });
    await addFormatted(store, tag, 'F{yyyy}{MM}{dd}-{seq:6}', 'Europe/Berlin', 5);
    const before = (await issuer.many(tag, 12)).map(String);
    await removeTagAndCounters(store, tag);
    assert.ok(![...store.rows.keys()].some((name) => name.startsWith(tag)), 'tag and counters gone');
    await allocator.refresh();
    await assert.rejects(issuer.many(tag, 1), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
    await assert.rejects(store.addTag({ tag, step: 5, start: 1n }), (error) =>
      isFrondError(error, 'FORMAT_TAG_FIXED'),
    );
    await assert.rejects(
      store.addTag({ tag, step: 5, start: 1n, format: { format: 'F{yyyy}-{seq:6}', timeZone: 'UTC' } }),
      (error) => isFrondError(error, 'FORMAT_TAG_FIXED'),
    );
    await addFormatted(store, tag, 'F{yyyy}{MM}{dd}-{seq:6}', 'Europe/Berlin', 5);
    clock.set(clock.now() + 2_000);
    const after = (await issuer.many(tag, 12)).map(String);
    for (const id of after) assert.match(id, /^F20260601-[0-9]{6}$/);
    assert.ok(
      after.every((id) => !before.includes(id) && id > (before.at(-1) as string)),
      `${after} after ${before}`,
    );
  });

  it('counters are no tags: refused on the routes, no buffer from the tag refresh, dropped when their row goes', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(ms('2026-06-01T10:00:00Z'));
    const { issuer, allocator } = node(store, clock);
    const tag = randomTag('hidden');
    await addFormatted(store, tag, 'H{yyyy}{MM}{dd}{HH}-{seq}', 'UTC');
    await issuer.one(tag);
    const counter = counterName(tag, '2026060110');
    await assert.rejects(issuer.one(counter), (error) => isFrondError(error, 'INVALID_TAG'));
    await assert.rejects(issuer.many(counter, 2), (error) => isFrondError(error, 'INVALID_TAG'));
    const fresh = node(store, clock).allocator;
    await fresh.refresh();
    assert.ok(fresh.tags().includes(tag) && !fresh.tags().includes(counter), fresh.tags().join(','));
    assert.ok(allocator.tags().includes(counter));
    await store.removeTag(counter);
    await allocator.refresh();
    assert.ok(!allocator.tags().includes(counter), 'the gone counter is dropped');
  });

  it('the clean-up removes counters whose period ended more than the retention ago, by the manual clock, and keeps newer ones', async () => {
    const store = new MemoryStore();
    const clock = new ManualClock(ms('2026-06-10T12:00:00Z'));
    const tag = randomTag('kept');
    await addFormatted(store, tag, 'K{yyyy}{MM}{dd}-{seq}', 'Pacific/Kiritimati');
    const hourly = randomTag('hourly');
    await addFormatted(store, hourly, 'K{yyyy}{MM}{dd}{HH}-{seq}', 'UTC');
    const forever = randomTag('forever');
    await addFormatted(store, forever, 'K-{seq}', 'UTC');
    for (const [name, key] of [
      [tag, '20260601'],
      [tag, '20260602'],
      [tag, '20260603'],
      [tag, '20260604'],
      [hourly, '2026060209'],
      [forever, 'all'],
    ] as const)
      await store.addTag({
        tag: counterName(name, key),
        step: 10,
        start: 1n,
        format: store.formats.get(name) as { format: string; timeZone: string },
      });
    const retention = new FormatRetention(store, clock, silentLogger, 7, 600_000);
    retention.start();
    // At 2026-06-10T12:10Z, 7 days back is 2026-06-03T12:10Z: 2026-06-01 ended by 2026-06-02T14:00Z
    // in any zone, the hour 09 of 2026-06-02 by 2026-06-03T00:00Z; 2026-06-02 may end at 14:00Z.
    await clock.advance(600_000);
    const left = () => [...store.rows.keys()].filter((name) => name.includes('\u001f')).sort();
    assert.deepEqual(left(), [
      counterName(forever, 'all'),
      counterName(tag, '20260602'),
      counterName(tag, '20260603'),
      counterName(tag, '20260604'),
    ]);
    // 2026-06-03 ends by 2026-06-04T14:00Z in any zone: 7 days after is 2026-06-11T14:00Z.
    clock.set(ms('2026-06-11T14:00:01Z'));
    await clock.advance(600_000);
    assert.deepEqual(left(), [counterName(forever, 'all'), counterName(tag, '20260604')]);
    assert.ok(store.rows.has(tag) && store.rows.has(hourly), 'the tags themselves stay');
    retention.close();
    assert.equal(latestPeriodEnd('all'), undefined);
    assert.equal(latestPeriodEnd('2026'), ms('2027-01-01T14:00:00Z'));
    assert.equal(latestPeriodEnd('202612'), ms('2027-01-01T14:00:00Z'));
    assert.equal(latestPeriodEnd('2026123123'), ms('2027-01-01T14:00:00Z'));
  });
});
