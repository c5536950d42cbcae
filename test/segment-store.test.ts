import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FencedStore } from '../src/stores/fencing/fenced-store.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { describeSegmentStore } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';

const sqliteFile = join(mkdtempSync(join(tmpdir(), 'frond-store-')), 'frond.db');
describeSegmentStore('SQLite', async () => new SqliteSegmentStore(sqliteFile));

// What a node serves from: the same contract through the data dir's high-water.
describeSegmentStore(
  'SQLite, fenced',
  async () =>
    new FencedStore(new SqliteSegmentStore(sqliteFile), { dataDir: tempDir(), fenceSkip: 1_000_000_000 }),
);
