import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { describeHandBack } from './hand-back.suite.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';
import { byHand } from './support/sqlite-by-hand.js';
import { bare, fenceByHand } from './support/store-views.js';

const sqliteFile = join(mkdtempSync(join(tmpdir(), 'frond-store-')), 'frond.db');

const raw: RawTable = {
  async deleteRow(_t, tag) {
    byHand(sqliteFile, (db) => db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag));
  },
  async insertRow(_t, tag, maxId, step) {
    byHand(sqliteFile, (db) =>
      db.prepare('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)').run(tag, maxId, step),
    );
  },
  async forget(_t, tag) {
    byHand(sqliteFile, (db) => {
      for (const table of ['leaf_alloc', 'frond_high_water', 'frond_tag_options', 'frond_tag_formats'])
        db.prepare(`DELETE FROM ${table} WHERE biz_tag = ?`).run(tag);
    });
  },
  async deleteFormat(_t, tag) {
    byHand(sqliteFile, (db) => db.prepare('DELETE FROM frond_tag_formats WHERE biz_tag = ?').run(tag));
  },
  async hasFormat(_t, tag) {
    return byHand(
      sqliteFile,
      (db) => db.prepare('SELECT 1 FROM frond_tag_formats WHERE biz_tag = ?').get(tag) !== undefined,
    );
  },
  async fence(_t, skip) {
    await fenceByHand(new SqliteSegmentStore(sqliteFile), skip);
  },
};

describeSegmentStore('SQLite', async () => bare(new SqliteSegmentStore(sqliteFile)), raw);

// What a node serves from: the same contract through the data dir's high-water.
describeSegmentStore(
  'SQLite, fenced',
  async () =>
    servedStore(new SqliteSegmentStore(sqliteFile), { dataDir: tempDir(), fenceSkip: 1_000_000_000 }),
  raw,
);

describeHandBack('SQLite', async () => new SqliteSegmentStore(sqliteFile), {
  async setMaxId(_t, tag, maxId) {
    byHand(sqliteFile, (db) =>
      db.prepare('UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ?').run(maxId, tag),
    );
  },
  deleteRow: raw.deleteRow,
  fence: raw.fence as NonNullable<RawTable['fence']>,
  forget: raw.forget as NonNullable<RawTable['forget']>,
});
