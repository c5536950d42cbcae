import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { FencedStore } from '../src/stores/fencing/fenced-store.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';

const sqliteFile = join(mkdtempSync(join(tmpdir(), 'frond-store-')), 'frond.db');

/** SQL by hand on the same file, as an operator's `sqlite3 frond.db` would. */
function byHand(text: string, ...values: unknown[]): void {
  const db = new Database(sqliteFile);
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(text).run(...values);
  } finally {
    db.close();
  }
}
const raw: RawTable = {
  async deleteRow(_t, tag) {
    byHand('DELETE FROM leaf_alloc WHERE biz_tag = ?', tag);
  },
  async insertRow(_t, tag, maxId, step) {
    byHand('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)', tag, maxId, step);
  },
};

describeSegmentStore('SQLite', async () => new SqliteSegmentStore(sqliteFile), raw);

// What a node serves from: the same contract through the data dir's high-water.
describeSegmentStore(
  'SQLite, fenced',
  async () =>
    new FencedStore(new SqliteSegmentStore(sqliteFile), { dataDir: tempDir(), fenceSkip: 1_000_000_000 }),
  raw,
);
