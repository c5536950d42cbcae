import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import type { OpenedStore } from '../src/stores/store-backend.js';
import { openStore } from '../src/stores/store-registry.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { unjournaled } from './support/store-views.js';
import { testDatabase } from './support/test-database.js';

// `frond tag remove` (issue 25, item 9): a removed name never comes back below what it served.

const postgres = testDatabase('postgres');
const mysql = testDatabase('mysql');
after(() => Promise.all([postgres.drop(), mysql.drop()]));

const BACKENDS: { name: string; spec(t: TestContext): Promise<string | undefined> }[] = [
  { name: 'SQLite', spec: async () => `sqlite:${join(tempDir(), 'frond.db')}` },
  { name: 'PostgreSQL', spec: async (t) => (await postgres.open(t))?.url },
  { name: 'MariaDB', spec: async (t) => (await mysql.open(t))?.url },
];

/** `frond db fence`: an epoch no row is above, so the fence runs (after creating the row if need be). */
async function fence(store: OpenedStore, skip: bigint, atLeast = new Map<string, bigint>()): Promise<void> {
  const request = { observedEpoch: Number.MAX_SAFE_INTEGER, aboveEpoch: 0, skip, atLeast };
  let outcome = await store.fence(request);
  if (!outcome.fenced) outcome = await store.fence({ ...request, aboveEpoch: outcome.epoch });
  assert.equal(outcome.fenced, true);
}

for (const backend of BACKENDS) {
  describe(`a removed tag and the fence: ${backend.name}`, () => {
    // A removal on a database that lost commits (a failover to a replica that was behind, a
    // restore) and was not fenced yet keeps a high-water below what nodes were granted. The fence
    // that follows raises every row past that; it raises the removed names' records too, or the
    // tag added again would start among IDs already served.
    it("raises a removed tag's high-water by the skip and to the floors it is given", async (t) => {
      const spec = await backend.spec(t);
      if (spec === undefined) return;
      const store = openStore(spec);
      const grants = unjournaled(store);
      try {
        const [removed, floored, present] = [randomTag(), randomTag(), randomTag()];
        for (const tag of [removed, floored, present]) {
          await store.addTag({ tag, step: 10, start: 1n });
          assert.equal((await grants.advance(tag))?.maxId, 11n);
        }
        assert.equal(await store.removeTag(removed), 11n);
        assert.equal(await store.removeTag(floored), 11n);
        await fence(store, 1000n, new Map([[floored, 50_000n]]));
        assert.equal((await store.tag(present))?.maxId, 1011n, 'a row is raised by the skip');
        await store.addTag({ tag: removed, step: 10, start: 1n });
        assert.equal((await store.tag(removed))?.maxId, 1011n, 'so is a removed name');
        await store.addTag({ tag: floored, step: 10, start: 1n });
        assert.equal((await store.tag(floored))?.maxId, 50_000n, 'and to the floor a node knows');
        assert.equal((await grants.advance(floored))?.maxId, 50_010n);
      } finally {
        await store.close();
      }
    });
  });
}
