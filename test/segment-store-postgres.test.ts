import { after } from 'node:test';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';
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
  async holdHighWater(t, tag) {
    return (await database.open(t))?.hold(
      'SELECT max_id FROM frond_high_water WHERE biz_tag = $1 FOR UPDATE',
      [tag],
    );
  },
};

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
