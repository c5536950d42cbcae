import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { describeHandBack } from './hand-back.suite.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { bare, fenceByHand } from './support/store-views.js';
import { testDatabase } from './support/test-database.js';

const database = testDatabase('postgres');
after(() => database.drop());

const raw: RawTable = {
  async deleteRow(t, tag) {
    await (await database.open(t))?.sql('DELETE FROM leaf_alloc WHERE biz_tag = $1', [tag]);
  },
  async insertRow(t, tag, maxId, step) {
    await (await database.open(t))?.sql(
      'INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ($1, $2, $3)',
      [tag, maxId.toString(), step],
    );
  },
  async fence(t, skip) {
    const db = await database.open(t);
    if (db) await fenceByHand(openStore(db.url), skip);
  },
  async forget(t, tag) {
    const db = await database.open(t);
    for (const table of ['leaf_alloc', 'frond_high_water', 'frond_tag_options', 'frond_tag_formats'])
      await db?.sql(`DELETE FROM ${table} WHERE biz_tag = $1`, [tag]);
  },
  async deleteFormat(t, tag) {
    await (await database.open(t))?.sql('DELETE FROM frond_tag_formats WHERE biz_tag = $1', [tag]);
  },
  async hasFormat(t, tag) {
    const rows = await (await database.open(t))?.sql('SELECT 1 FROM frond_tag_formats WHERE biz_tag = $1', [
      tag,
    ]);
    return (rows?.length ?? 0) > 0;
  },
  async holdHighWater(t, tag) {
    return (await database.open(t))?.hold(
      'SELECT max_id FROM frond_high_water WHERE biz_tag = $1 FOR UPDATE',
      [tag],
    );
  },
};

describeHandBack(
  'PostgreSQL',
  async (t) => {
    const db = await database.open(t);
    return db && openStore(db.url);
  },
  {
    async setMaxId(t, tag, maxId) {
      await (await database.open(t))?.sql('UPDATE leaf_alloc SET max_id = $1 WHERE biz_tag = $2', [
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
  'PostgreSQL',
  async (t) => {
    const db = await database.open(t);
    return db && bare(openStore(db.url));
  },
  raw,
);

// What a node serves from: the same contract through the fence (frond_fence, frond_high_water).
describeSegmentStore(
  'PostgreSQL, fenced',
  async (t) => {
    const db = await database.open(t);
    return db && servedStore(openStore(db.url), { dataDir: tempDir(), fenceSkip: 1_000_000_000 });
  },
  raw,
);

describe('PostgreSQL: the tags lock held elsewhere', () => {
  it('fails an add within half the query timeout, in a line that says tags are being added or removed', async (t) => {
    const db = await database.open(t);
    if (db === undefined) return;
    const tag = randomTag();
    // What an add or a removal in flight holds (NAME_LOCK in postgres-segment-store.ts).
    const release = await db.hold('SELECT pg_advisory_xact_lock(1718775396, 0)');
    const store = bare(openStore(`${db.url}?query_timeout_ms=2000`));
    try {
      const started = performance.now();
      await assert.rejects(
        store.addTag({ tag, step: 10, start: 1n }),
        (error) =>
          isFrondError(error, 'STORE_UNAVAILABLE') &&
          /tags are being added, removed or fenced by another connection/.test((error as Error).message),
      );
      assert.ok(performance.now() - started < 1_900, 'waited past half the query timeout');
      await assert.rejects(store.removeTag(tag), (error) => isFrondError(error, 'STORE_UNAVAILABLE'));
    } finally {
      await release();
    }
    try {
      await store.addTag({ tag, step: 10, start: 1n });
      assert.equal((await store.tag(tag))?.maxId, 1n);
    } finally {
      await store.close();
    }
  });
});
