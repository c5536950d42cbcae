import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isFrondError } from '../src/core/errors.js';
import type { CataloguedStore } from '../src/core/tag-catalogue.js';
import { PLAIN_KIND } from '../src/core/tag-kind.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { NEW_NAMES } from '../src/stores/new-names.js';
import { openStore } from '../src/stores/store-registry.js';
import { describeHandBack } from './hand-back.suite.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { bare, fenceByHand } from './support/store-views.js';
import { testDatabase } from './support/test-database.js';

const database = testDatabase('mysql');
after(() => database.drop());
/** Tables are dropped in this one: no other test's store works on it. */
const dropped = testDatabase('mysql');
after(() => dropped.drop());
/** Made utf8mb4_unicode_ci before frond creates its tables: a collation that ignores U+0001. */
const unicode = testDatabase('mysql');
after(() => unicode.drop());

const raw: RawTable = {
  async deleteRow(t, tag) {
    await (await database.open(t))?.sql('DELETE FROM leaf_alloc WHERE biz_tag = ?', [tag]);
  },
  async insertRow(t, tag, maxId, step) {
    await (await database.open(t))?.sql('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)', [
      tag,
      maxId.toString(),
      step,
    ]);
  },
  async fence(t, skip) {
    const db = await database.open(t);
    if (db) await fenceByHand(openStore(db.url), skip);
  },
  async forget(t, tag) {
    const db = await database.open(t);
    for (const table of ['leaf_alloc', 'frond_high_water', 'frond_tag_options', 'frond_tag_formats'])
      await db?.sql(`DELETE FROM ${table} WHERE biz_tag = ?`, [tag]);
  },
  async deleteFormat(t, tag) {
    await (await database.open(t))?.sql('DELETE FROM frond_tag_formats WHERE biz_tag = ?', [tag]);
  },
  async hasFormat(t, tag) {
    const rows = await (await database.open(t))?.sql('SELECT 1 FROM frond_tag_formats WHERE biz_tag = ?', [
      tag,
    ]);
    return (rows?.length ?? 0) > 0;
  },
  async holdHighWater(t, tag) {
    return (await database.open(t))?.hold(
      'SELECT max_id FROM frond_high_water WHERE biz_tag = ? FOR UPDATE',
      [tag],
    );
  },
};

describeHandBack(
  'MariaDB',
  async (t) => {
    const db = await database.open(t);
    return db && openStore(db.url);
  },
  {
    async setMaxId(t, tag, maxId) {
      await (await database.open(t))?.sql('UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ?', [
        maxId.toString(),
        tag,
      ]);
    },
    deleteRow: raw.deleteRow,
    fence: raw.fence as NonNullable<RawTable['fence']>,
    forget: raw.forget as NonNullable<RawTable['forget']>,
    holdHighWater: raw.holdHighWater,
  },
);

describeSegmentStore(
  'MariaDB',
  async (t) => {
    const db = await database.open(t);
    return db && bare(openStore(db.url));
  },
  raw,
);

// What a node serves from: the same contract through the fence (frond_fence, frond_high_water).
describeSegmentStore(
  'MariaDB, fenced',
  async (t) => {
    const db = await database.open(t);
    return db && servedStore(openStore(db.url), { dataDir: tempDir(), fenceSkip: 1_000_000_000 });
  },
  raw,
);

// frond's tables, or leaf_alloc, dropped by hand while nodes run: the next operation creates them
// again (a statement that finds one missing forgets the table check) instead of every load failing
// until a restart.
describe('MariaDB: tables dropped under a running store', () => {
  it('creates frond_high_water and frond_fence again, and goes on with no range handed out twice', async (t) => {
    const db = await dropped.open(t);
    if (db === undefined) return;
    const plain = bare(openStore(db.url));
    const fenced = servedStore(openStore(db.url), { dataDir: tempDir(), fenceSkip: 1_000_000 });
    try {
      const tag = randomTag();
      await plain.addTag({ tag, step: 10, start: 1n });
      const ranges: [bigint, bigint][] = [];
      const take = async (store: CataloguedStore) => {
        const grant = await store.advance(tag);
        assert.ok(grant !== undefined);
        ranges.push([grant.maxId - BigInt(grant.step), grant.maxId]);
        return grant;
      };
      await take(fenced);
      await take(plain);
      await db.sql('DROP TABLE frond_high_water, frond_fence');
      // The very next advance of each store succeeds, above everything granted before the drop.
      const last = ranges.at(-1)?.[1] as bigint;
      assert.ok((await take(fenced)).maxId - 10n >= last);
      assert.ok((await take(plain)).maxId - 10n >= last + 10n);
      // Dropped while both stores advance: every advance still succeeds.
      const loops = [fenced, plain].map(async (store) => {
        for (let i = 0; i < 25; i++) await take(store);
      });
      await sleep(30);
      await db.sql('DROP TABLE IF EXISTS frond_high_water, frond_fence');
      await Promise.all(loops);
      // 54 ranges, none overlapping, each store's own in increasing order (checked by FencedStore
      // for its own: a range below its high-water would have been refused).
      assert.equal(ranges.length, 54);
      const sorted = [...ranges].sort((a, b) => (a[0] < b[0] ? -1 : 1));
      for (let i = 1; i < sorted.length; i++) {
        assert.ok((sorted[i]?.[0] as bigint) >= (sorted[i - 1]?.[1] as bigint), `overlap at ${sorted[i]}`);
      }
      // Both tables are back, the high-water at the last grant, the fence naming this server.
      const top = sorted.at(-1)?.[1] as bigint;
      const [high] = await db.sql('SELECT max_id FROM frond_high_water WHERE biz_tag = ?', [tag]);
      assert.equal(BigInt(String(high?.max_id)), top);
      assert.equal((await db.sql('SELECT epoch FROM frond_fence')).length, 1);
      assert.equal((await plain.tag(tag))?.maxId, top);
    } finally {
      await plain.close();
      await fenced.close();
    }
  });

  it('creates frond_tag_options and leaf_alloc again', async (t) => {
    const db = await dropped.open(t);
    if (db === undefined) return;
    // The fences of the test before raised the first ID of new names past this domain's 2^20 IDs
    // (src/stores/new-names.ts): this one starts as on a database never fenced.
    await db.sql('DELETE FROM frond_high_water WHERE biz_tag = ?', [NEW_NAMES]);
    const store = bare(openStore(db.url));
    try {
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: 1n }, { domain: 'bits:20', keyCheck: 'k' });
      assert.equal((await store.advance(tag))?.maxId, 11n);
      await db.sql('DROP TABLE frond_tag_options');
      assert.deepEqual(await store.listOpaque(), new Map());
      await db.sql('DROP TABLE leaf_alloc');
      assert.deepEqual(await store.listTags(), []);
      assert.equal(await store.advance(tag), undefined);
      // The name served IDs (frond_high_water kept it): it cannot come back opaque.
      await assert.rejects(
        store.addTag({ tag, step: 10, start: 1n }, { domain: 'bits:20', keyCheck: 'k' }),
        (error) => isFrondError(error, 'OPAQUE_TAG_FIXED'),
      );
      await store.addTag({ tag, step: 10, start: 1n });
      const grant = await store.advance(tag);
      assert.deepEqual(grant?.kind, PLAIN_KIND);
      assert.ok(grant !== undefined && grant.maxId - 10n >= 11n, 'above the grant before the drop');
    } finally {
      await store.close();
    }
  });
});

// The default collations make one key of names that differ in case, accents or trailing blanks:
// frond_high_water's row for `order` is `ORDER`'s too, and the advance of `ORDER` goes on from it.
// Checked by exact bytes, an opaque `ORDER` after a removed plain `order` was accepted, and 841 of
// its first 30,000 IDs equalled plain ones served before.
describe('MariaDB: a removed name under another spelling of the same key', () => {
  for (const [was, spelled] of [
    ['order', 'ORDER'],
    ['café', 'cafe'],
    ['order', 'order '],
  ] as const)
    it(`refuses an opaque ${JSON.stringify(spelled)} after a plain ${JSON.stringify(was)} was removed`, async (t) => {
      const db = await database.open(t);
      if (db === undefined) return;
      const store = bare(openStore(db.url));
      try {
        const suffix = randomTag();
        await store.addTag({ tag: `${suffix}-${was}`, step: 10, start: 1n });
        assert.ok(await store.advance(`${suffix}-${was}`));
        await store.removeTag(`${suffix}-${was}`);
        await assert.rejects(
          store.addTag(
            { tag: `${suffix}-${spelled}`, step: 10, start: 1n },
            { domain: 'bits:20', keyCheck: 'k' },
          ),
          (error) => isFrondError(error, 'OPAQUE_TAG_FIXED'),
        );
      } finally {
        await store.close();
      }
    });
});

// utf8mb4_unicode_ci ignores U+0001 and case: the new-names record ('\u0001frond new names')
// compared equal to a tag named `Frond New Names`, whose own high-water then became the first ID of
// every new name (101 on a database never fenced).
describe('MariaDB: the new-names record under a collation that ignores control characters', () => {
  it('is never a tag of that name', async (t) => {
    const db = await unicode.open(t);
    if (db === undefined) return;
    await db.sql(`ALTER DATABASE ${db.name} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
    const store = bare(openStore(db.url));
    try {
      await store.addTag({ tag: 'Frond New Names', step: 100, start: 1n });
      assert.equal((await store.advance('Frond New Names'))?.maxId, 101n);
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: 1n });
      assert.equal((await store.tag(tag))?.maxId, 1n, 'a new name starts where its row says');
      assert.equal((await store.advance(tag))?.maxId, 11n);
    } finally {
      await store.close();
    }
  });
});
