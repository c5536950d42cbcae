import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, settle } from '../../../test/support/manual-clock.js';
import { MemoryStore } from '../../../test/support/memory-store.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { isFrondError } from '../../core/errors.js';
import type { Gap, GapReason } from '../../core/id-gaps.js';
import type { GapTotal } from '../../core/tag-catalogue.js';
import { gapsPage, gapsQuery, MAX_RETURNED_IDS, recordReturnedRange } from './gap-routes.js';
import { GAP_TOTALS_TTL_MS, GapTotals, gapTotalsJson } from './gap-totals.js';

function gap(tag: string, start: bigint, end: bigint, reason: GapReason = 'crash'): Gap {
  return { tag, start, end, reason, node: '127.0.0.1:8080', at: 0 };
}

async function storeWithGaps(tag: string, gaps: Gap[]): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.addTag({ tag, step: 100, start: 1n });
  await store.primitive.recordGaps(gaps);
  return store;
}

describe('GET /v1/tags/{tag}/gaps', () => {
  it('reads ?after= as a start ID and ?limit= from 1 to 1,000 (100 by default)', () => {
    assert.deepEqual(gapsQuery(''), { after: undefined, limit: 100 });
    assert.deepEqual(gapsQuery('after=9223372036854775000&limit=1000'), {
      after: 9223372036854775000n,
      limit: 1000,
    });
    for (const bad of ['limit=0', 'limit=1001', 'limit=x', 'after=1.5', 'after=', 'after=1e3'])
      assert.throws(
        () => gapsQuery(bad),
        (error) => isFrondError(error, 'INVALID_ARGUMENT'),
        bad,
      );
  });

  it('pages by start, never splitting the gaps of one start over two pages, to the end', async () => {
    const tag = randomTag();
    // Starts 10, 20, 30 (three gaps), 40, 50: with limit 2 the page of 20 grows to hold all of 30.
    const all = [
      gap(tag, 10n, 15n),
      gap(tag, 20n, 25n),
      gap(tag, 30n, 31n),
      gap(tag, 30n, 35n, 'unsafe_hand_back'),
      gap(tag, 30n, 39n, 'range_unused'),
      gap(tag, 40n, 45n),
      gap(tag, 50n, 55n),
    ];
    const store = await storeWithGaps(tag, all);
    const seen: string[] = [];
    let after: bigint | undefined;
    for (let page = 0; page < 10; page++) {
      const read = await gapsPage(store, tag, after, 2);
      seen.push(...read.gaps.map((g) => `${g.start}-${g.end}`));
      if (read.next === null) break;
      after = BigInt(read.next);
    }
    assert.deepEqual(
      seen,
      all.map((g) => `${g.start}-${g.end}`),
    );
    const second = await gapsPage(store, tag, 15n, 2);
    assert.deepEqual(
      second.gaps.map((g) => g.start),
      ['20', '30', '30', '30'],
    );
    assert.equal(second.next, '30');
  });

  it('shows IDs as strings, the size, reason, node and time', async () => {
    const tag = randomTag();
    const at = Date.UTC(2026, 11, 3, 12, 0, 0);
    const store = await storeWithGaps(tag, [
      { ...gap(tag, 9223372036854775000n, 9223372036854775800n, 'fence'), node: 'fence', at },
    ]);
    const page = await gapsPage(store, tag, undefined, 100);
    // The time is the store's (the database's clock where it has one): an ISO string, whatever it is.
    assert.match(page.gaps[0]?.at ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual(
      { ...page, gaps: page.gaps.map((g) => ({ ...g, at: 'ISO' })) },
      {
        tag,
        gaps: [
          {
            start: '9223372036854775000',
            end: '9223372036854775800',
            ids: '800',
            reason: 'fence',
            node: 'fence',
            at: 'ISO',
          },
        ],
        next: null,
      },
    );
    assert.deepEqual((await gapsPage(store, randomTag(), undefined, 100)).gaps, []);
  });
});

describe('POST /v1/tags/{tag}/gaps', () => {
  async function setup() {
    const tag = randomTag();
    const store = new MemoryStore();
    await store.addTag({ tag, step: 1000, start: 1n });
    await store.advance(tag); // max_id 1001: IDs 1..1000 issued
    const deps = {
      catalogue: store,
      record: (gaps: readonly Gap[]) => store.primitive.recordGaps(gaps),
      now: () => 1234,
    };
    return { tag, store, deps };
  }

  it('records a returned range as range_unused by node client', async () => {
    const { tag, store, deps } = await setup();
    const recorded = await recordReturnedRange(deps, tag, '{"start":"600","end":"1001"}');
    assert.deepEqual(recorded, {
      tag,
      start: 600n,
      end: 1001n,
      reason: 'range_unused',
      node: 'client',
      at: 1234,
    });
    const { at: _at, ...stored } = (await store.listGaps(tag))[0] ?? { at: 0 };
    assert.deepEqual(stored, { tag, start: 600n, end: 1001n, reason: 'range_unused', node: 'client' });
    // Sent again (an answer lost): recorded once.
    const again = await recordReturnedRange(deps, tag, '{"start":600,"end":1001}');
    assert.equal((await store.listGaps(tag)).length, 1);
    // Answered as stored, marked so that the route does not count it as given up again.
    assert.deepEqual(again, { ...(await store.listGaps(tag))[0], repeated: true });
  });

  it('refuses with one line: not JSON, other fields, not IDs, start >= end, too many IDs, above max_id, no row', async () => {
    const { tag, deps } = await setup();
    const cases: [string, RegExp][] = [
      ['nope', /not JSON/],
      ['[1,2]', /JSON object/],
      ['{"start":"1","end":"2","x":1}', /unknown field "x"/],
      ['{"start":"a","end":"2"}', /start must be an ID/],
      ['{"start":"1"}', /end must be an ID/],
      ['{"start":1.5,"end":2}', /start must be an ID/],
      ['{"start":"500","end":"500"}', /must be below end/],
      ['{"start":"-5","end":"2"}', /below 0/],
      [`{"start":"0","end":"${MAX_RETURNED_IDS + 1n}"}`, /at most 100000000/],
      ['{"start":"900","end":"1002"}', /above tag .* max_id 1001/],
    ];
    for (const [body, message] of cases)
      await assert.rejects(
        recordReturnedRange(deps, tag, body),
        (error) => isFrondError(error, 'INVALID_ARGUMENT') && message.test(error.message),
        body,
      );
    await assert.rejects(recordReturnedRange(deps, randomTag(), '{"start":"1","end":"2"}'), (error) =>
      isFrondError(error, 'TAG_NOT_FOUND'),
    );
  });
});

describe('GapTotals', () => {
  it('reads the store at most once per TTL, one read at a time, and keeps the last totals when a read fails', async () => {
    const clock = new ManualClock();
    let reads = 0;
    let fail = false;
    const totals = new Map<GapReason, GapTotal>([['crash', { ranges: 2, ids: 3000n }]]);
    const cache = new GapTotals(
      {
        gapTotals: async () => {
          reads++;
          if (fail) throw new Error('down');
          return new Map(totals);
        },
      },
      clock,
    );
    assert.equal(cache.current(), undefined, 'nothing before the first answer');
    assert.equal(cache.current(), undefined);
    await settle();
    assert.equal(reads, 1, 'one read in flight at a time');
    assert.deepEqual(cache.current()?.get('crash'), { ranges: 2, ids: 3000n });
    assert.deepEqual((await cache.read())?.get('crash'), { ranges: 2, ids: 3000n });
    assert.equal(reads, 1, 'fresh: not read again');
    clock.advance(GAP_TOTALS_TTL_MS);
    fail = true;
    assert.deepEqual(
      (await cache.read())?.get('crash'),
      { ranges: 2, ids: 3000n },
      'a failure keeps the last',
    );
    assert.equal(reads, 2);
  });

  it('answers every reason in JSON, zeros included, IDs as strings', () => {
    const json = gapTotalsJson(new Map([['unsafe_hand_back', { ranges: 1, ids: 2n ** 62n }]]));
    assert.deepEqual(json, {
      crash: { ranges: 0, ids: '0' },
      unsafe_hand_back: { ranges: 1, ids: '4611686018427387904' },
      opaque_look_ahead: { ranges: 0, ids: '0' },
      range_unused: { ranges: 0, ids: '0' },
      fence: { ranges: 0, ids: '0' },
    });
  });
});
