import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/support/frond-process.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { byHand } from '../../../test/support/sqlite-by-hand.js';
import { bare } from '../../../test/support/store-views.js';
import { isFrondError } from '../../core/errors.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { PLAIN_KIND } from '../../core/tag-kind.js';
import { servedStore } from '../fencing/served-store.js';
import { SQLITE_DDL, SQLITE_FROND_DDL } from './sqlite-database.js';
import { SqliteSegmentStore } from './sqlite-segment-store.js';

// frond_high_water in the SQLite file: what one process granted is the floor of every other process
// on the file, whatever its data dir holds (`--workers N` runs N processes, `frond tag add` none).

const opaque = { domain: 'bits:20', keyCheck: '0123456789abcdef' };

/** Two processes on one file: the bare stores, and the stores as nodes serve them (a data dir each). */
const setups: [string, (path: string) => CataloguedStore][] = [
  ['two stores', (path) => bare(new SqliteSegmentStore(path))],
  [
    'two fenced stores, each with its own data dir (two --workers processes)',
    (path) => servedStore(new SqliteSegmentStore(path), { dataDir: tempDir(), fenceSkip: 1_000_000_000 }),
  ],
];

describe('SQLite frond_high_water across processes on one file', () => {
  for (const [name, open] of setups) {
    it(`${name}: a row deleted by hand is neither made opaque nor served again below from the other`, async () => {
      const path = join(tempDir(), 'frond.db');
      const first = open(path);
      const second = open(path);
      try {
        const tag = randomTag();
        await first.addTag({ tag, step: 100, start: 1n });
        assert.equal((await first.advance(tag))?.maxId, 101n);
        assert.equal((await first.advance(tag, 400))?.maxId, 501n); // [1, 501) granted
        byHand(path, (db) => db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag));

        // The second never served the tag; only the file knows it did.
        await assert.rejects(
          second.addTag({ tag, step: 100, start: 1n }, opaque),
          (error) => isFrondError(error, 'OPAQUE_TAG_FIXED') && /has served IDs before/.test(error.message),
        );
        assert.equal(await second.tag(tag), undefined, 'no row was created');
        assert.equal((await second.listOpaque()).has(tag), false, 'no setting was created');

        await second.addTag({ tag, step: 100, start: 1n });
        const grant = await second.advance(tag);
        assert.deepEqual(grant, { maxId: 601n, step: 100, tableStep: 100, kind: PLAIN_KIND });
        // And the first goes on above the second's grant.
        assert.equal((await first.advance(tag))?.maxId, 701n);
        const record = byHand(path, (db) =>
          db.prepare('SELECT max_id FROM frond_high_water WHERE biz_tag = ?').safeIntegers(true).get(tag),
        );
        assert.deepEqual(record, { max_id: 701n });
      } finally {
        await first.close();
        await second.close();
      }
    });

    it(`${name}: a name whose opaque setting outlived its row is refused as a plain tag from the other`, async () => {
      const path = join(tempDir(), 'frond.db');
      const first = open(path);
      const second = open(path);
      try {
        const tag = randomTag();
        await first.addTag({ tag, step: 100, start: 1n }, opaque);
        assert.deepEqual((await first.advance(tag))?.kind, { opaque, format: null });
        byHand(path, (db) => db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag));
        await assert.rejects(
          second.addTag({ tag, step: 100, start: 1n }),
          (error) =>
            isFrondError(error, 'OPAQUE_TAG_FIXED') &&
            /setting remains in frond_tag_options/.test(error.message),
        );
        assert.equal(await second.tag(tag), undefined, 'no row was created');
        // Nor opaque again: the name served IDs (frond_high_water knows it) and its row is gone.
        await assert.rejects(second.addTag({ tag, step: 100, start: 1n }, opaque), (error) =>
          isFrondError(error, 'OPAQUE_TAG_FIXED'),
        );
        assert.equal((await second.listOpaque()).get(tag)?.domain, opaque.domain, 'the setting is as it was');
      } finally {
        await first.close();
        await second.close();
      }
    });
  }

  it('creates frond_high_water in a file of the previous version and serves its rows from their max_id', async () => {
    const path = join(tempDir(), 'frond.db');
    const plain = randomTag();
    const secret = randomTag();
    // The file as the previous version left it: Leaf's table and frond_tag_options, with rows.
    byHand(path, (db) => {
      db.pragma('journal_mode = WAL');
      db.exec(SQLITE_DDL);
      db.exec(SQLITE_FROND_DDL);
      db.prepare('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)').run(plain, 5000, 100);
      db.prepare('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)').run(
        secret,
        2n ** 60n,
        10,
      );
      db.prepare('INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check) VALUES (?, ?, ?)').run(
        secret,
        opaque.domain,
        opaque.keyCheck,
      );
    });
    const store = bare(new SqliteSegmentStore(path));
    try {
      // No record yet: the floor is max_id, as before.
      assert.deepEqual(await store.advance(plain), {
        maxId: 5100n,
        step: 100,
        tableStep: 100,
        kind: PLAIN_KIND,
      });
      assert.deepEqual(await store.advance(secret, 3), {
        maxId: 2n ** 60n + 3n,
        step: 3,
        tableStep: 10,
        kind: { opaque, format: null },
      });
      const records = byHand(path, (db) =>
        db.prepare('SELECT biz_tag, max_id FROM frond_high_water ORDER BY max_id').safeIntegers(true).all(),
      );
      assert.deepEqual(records, [
        { biz_tag: plain, max_id: 5100n },
        { biz_tag: secret, max_id: 2n ** 60n + 3n },
      ]);
    } finally {
      await store.close();
    }
  });

  it('refuses a range past 2^63 - 1 from the recorded floor, and leaves the row and the record as they were', async () => {
    const path = join(tempDir(), 'frond.db');
    const store = bare(new SqliteSegmentStore(path));
    try {
      const top = 2n ** 63n - 1n;
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: top - 15n });
      assert.equal((await store.advance(tag))?.maxId, top - 5n);
      // Put back low by hand: the floor is the record, 5 below the top, so 10 more do not fit.
      byHand(path, (db) => db.prepare('UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = ?').run(tag));
      await assert.rejects(
        store.advance(tag),
        (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED') && error.message.includes(`max_id ${top - 5n}`),
      );
      assert.equal((await store.tag(tag))?.maxId, 1n, 'the row is left as it was');
      assert.equal((await store.advance(tag, 5))?.maxId, top, 'what still fits is granted from the floor');
    } finally {
      await store.close();
    }
  });
});
