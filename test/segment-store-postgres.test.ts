import { after } from 'node:test';
import { openStore } from '../src/stores/store-registry.js';
import { describeSegmentStore } from './segment-store.suite.js';
import { testDatabase } from './support/test-database.js';

const database = testDatabase('postgres');
after(() => database.drop());

describeSegmentStore('PostgreSQL', async (t) => {
  const db = await database.open(t);
  return db && openStore(db.url);
});
