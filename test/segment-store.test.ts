import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { describeSegmentStore } from './segment-store.suite.js';

const sqliteFile = join(mkdtempSync(join(tmpdir(), 'frond-store-')), 'frond.db');
describeSegmentStore('SQLite', async () => new SqliteSegmentStore(sqliteFile));
