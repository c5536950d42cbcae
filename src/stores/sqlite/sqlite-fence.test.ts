import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { tempDir } from '../../../test/support/frond-process.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { byHand, copy } from '../../../test/support/sqlite-by-hand.js';
import { unjournaled } from '../../../test/support/store-views.js';
import type { Allocation } from '../../core/segment-store.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { PLAIN_KIND } from '../../core/tag-kind.js';
import { servedStore } from '../fencing/served-store.js';
import { SqliteSegmentStore } from './sqlite-segment-store.js';

// A restored SQLite file is fenced like a restored PostgreSQL or MySQL database. Before, a process
// that found the file went back took its next range above what IT had been granted, which lands in
// a range another process on the file holds: two nodes on one file served 50 IDs twice, and
// `frond serve --workers 2` 1,000 (its workers are processes with a data dir each).

const SKIP = 1_000_000;
const STEP = 1_000;

function fenceRow(path: string): { epoch: number; identity: string } | undefined {
  return byHand(
    path,
    (db) =>
      db.prepare('SELECT epoch, identity FROM frond_fence WHERE id = 1').get() as
        | { epoch: number; identity: string }
        | undefined,
  );
}

/** Two processes on one file, each with its own data dir, as two nodes or two --workers processes. */
function nodes(path: string): [CataloguedStore, CataloguedStore] {
  const open = () => servedStore(new SqliteSegmentStore(path), { dataDir: tempDir(), fenceSkip: SKIP });
  return [open(), open()];
}

/** A fence by hand (`frond db fence`): a bare store, an epoch no row is above. */
async function fenceByHand(path: string): Promise<void> {
  const store = new SqliteSegmentStore(path);
  try {
    const outcome = await store.fence({
      observedEpoch: Number.MAX_SAFE_INTEGER,
      aboveEpoch: 0,
      skip: BigInt(SKIP),
      atLeast: new Map(),
    });
    assert.equal(outcome.fenced, true);
  } finally {
    await store.close();
  }
}

async function newFile(tag: string): Promise<string> {
  const path = join(tempDir(), 'frond.db');
  const store = new SqliteSegmentStore(path);
  try {
    await store.addTag({ tag, step: STEP, start: 1n });
  } finally {
    await store.close();
  }
  return path;
}

/** Every grant is a range of its own: no ID of one is in another. */
function assertDisjoint(grants: Allocation[]): void {
  const ranges = grants
    .map((grant) => [grant.maxId - BigInt(grant.step), grant.maxId] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  for (let i = 1; i < ranges.length; i++) {
    const [before, after] = [ranges[i - 1], ranges[i]] as [
      readonly [bigint, bigint],
      readonly [bigint, bigint],
    ];
    assert.ok(after[0] >= before[1], `[${before[0]}, ${before[1]}) and [${after[0]}, ${after[1]}) overlap`);
  }
}

async function grant(store: CataloguedStore, tag: string): Promise<Allocation> {
  const allocation = await store.advance(tag);
  assert.ok(allocation !== undefined, `${tag} has a row`);
  return allocation;
}

describe('SQLite: a restored file is fenced', () => {
  it('a copy taken before frond_fence had its row: the first process back makes the row and fences past every process', async () => {
    const tag = randomTag();
    const path = await newFile(tag);
    const before = join(tempDir(), 'before.db');
    await copy(path, before); // as the attack's backup: taken before any node served
    const [a, b] = nodes(path);
    try {
      const a1 = await grant(a, tag); // A holds [1, 1001)
      const b1 = await grant(b, tag); // B holds [1001, 2001)
      assert.deepEqual([a1.maxId, b1.maxId], [1_001n, 2_001n]);
      const made = fenceRow(path);
      assert.ok(made !== undefined, 'the first advance made the fence row');
      assert.match(made.identity, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);

      await copy(before, path); // restored under both open stores: leaf_alloc back to max_id 1, no row
      assert.equal(fenceRow(path), undefined);

      // A: no row, so it makes one (nothing raised); then its grant [1, 1001) is below what it was
      // granted, so it is thrown away and A fences: every tag up by the skip from its floor, 1001
      // (the grant thrown away is in frond_high_water).
      const a2 = await grant(a, tag);
      assert.equal(a2.maxId, 1_001n + BigInt(SKIP) + BigInt(STEP));
      const b2 = await grant(b, tag);
      assert.equal(b2.maxId, a2.maxId + BigInt(STEP), 'B finds the fence done and goes on above it');
      assertDisjoint([a1, b1, a2, b2]);
      const after = fenceRow(path);
      assert.notEqual(after?.identity, made.identity, 'a new row, a new identity');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a copy with the fence row (same identity, same epoch): the grant below the high-water fences', async () => {
    const tag = randomTag();
    const other = randomTag();
    const path = await newFile(tag);
    const [a, b] = nodes(path);
    const before = join(tempDir(), 'before.db');
    try {
      await a.addTag({ tag: other, step: STEP, start: 1n });
      await grant(a, other); // makes the fence row, epoch 1
      const epochBefore = fenceRow(path)?.epoch;
      await copy(path, before);
      const a1 = await grant(a, tag);
      const b1 = await grant(b, tag);
      const b2 = await grant(b, tag); // B holds [2001, 3001) as well
      await copy(before, path);
      assert.equal(fenceRow(path)?.epoch, epochBefore, 'the restored row is the one A and B saw');

      const a2 = await grant(a, tag);
      assert.ok(a2.maxId - BigInt(STEP) >= b2.maxId, `A's ${a2.maxId} is above B's ${b2.maxId}`);
      const b3 = await grant(b, tag);
      assertDisjoint([a1, b1, b2, a2, b3]);
      // Every tag was raised, the one A never lost too: a process that served only it goes on above.
      const o2 = await grant(b, other);
      assert.ok(o2.maxId > BigInt(SKIP), `${other} was raised by the fence (${o2.maxId})`);
      assert.equal(fenceRow(path)?.epoch, (epochBefore as number) + 1, 'one fence, by A');
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a copy from before a fence (same identity, older epoch): the epoch that went back fences', async () => {
    const tag = randomTag();
    const path = await newFile(tag);
    const [a, b] = nodes(path);
    const before = join(tempDir(), 'before.db');
    try {
      const a1 = await grant(a, tag); // makes the row, epoch 1
      await copy(path, before);
      await fenceByHand(path); // epoch 2, every tag up by the skip
      const a2 = await grant(a, tag);
      const b1 = await grant(b, tag); // both saw epoch 2
      await copy(before, path); // epoch 1 again, leaf_alloc at 1001

      // The epoch went back from 2 to 1: one fence lost, and its skip with it, so A raises by two
      // skips from the floor, 2001 (the restored 1001 and the grant A threw away): one skip would
      // land at 1,002,001, in B's range.
      const a3 = await grant(a, tag);
      assert.equal(a3.maxId, 2_001n + 2n * BigInt(SKIP) + BigInt(STEP));
      assert.ok(a3.maxId - BigInt(STEP) >= b1.maxId, `A's ${a3.maxId} is above B's ${b1.maxId}`);
      const b2 = await grant(b, tag);
      assertDisjoint([a1, a2, b1, a3, b2]);
      assert.equal(fenceRow(path)?.epoch, 3);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a row made again under an older epoch and another identity is fenced, not refused as a split brain', async () => {
    const tag = randomTag();
    const path = await newFile(tag);
    const before = join(tempDir(), 'before.db');
    await copy(path, before); // no fence row
    const [a, b] = nodes(path);
    try {
      const a1 = await grant(a, tag); // makes the row (X, 1)
      for (let i = 0; i < 3; i++) await fenceByHand(path); // (X, 4)
      const b1 = await grant(b, tag); // B saw epoch 4 on X; A only 1
      await copy(before, path);
      // A makes the row again, (Y, 2), and fences it to (Y, 3): below what B saw, on another
      // identity. On a network store that is an old primary still alive; on one file it is the
      // file restored, and B fences too (refusing it would refuse it until B's data dir is gone).
      const a2 = await grant(a, tag);
      const b2 = await grant(b, tag);
      assertDisjoint([a1, b1, a2, b2]);
      assert.ok(b2.maxId - BigInt(STEP) >= b1.maxId);
      assert.equal(fenceRow(path)?.epoch, 5);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('SQLite fence operations', () => {
  it('makes the row without raising anything, then raises every tag by the skip (to 2^63 - 1 at most, to atLeast)', async () => {
    const path = join(tempDir(), 'frond.db');
    const store = new SqliteSegmentStore(path);
    const [plain, top, behind, text] = [randomTag(), randomTag(), randomTag(), randomTag()];
    const max = 2n ** 63n - 1n;
    try {
      await store.addTag({ tag: plain, step: 10, start: 100n });
      await store.addTag({ tag: top, step: 10, start: max - 50n });
      await store.addTag({ tag: behind, step: 10, start: 1n });
      await store.addTag({ tag: text, step: 10, start: 1n });
      byHand(path, (db) => db.prepare("UPDATE leaf_alloc SET max_id = 'x' WHERE biz_tag = ?").run(text));
      assert.deepEqual(await store.advance(plain), { kind: 'unfenced', epoch: 0, identity: '' });
      assert.equal((await store.tag(plain))?.maxId, 100n, 'nothing reserved without the row');

      const request = { observedEpoch: 0, aboveEpoch: 6, skip: 1000n, atLeast: new Map<string, bigint>() };
      const made = await store.fence(request);
      assert.equal(made.fenced, false);
      assert.equal(made.tags, 0);
      assert.equal(made.epoch, 7, 'above the epoch the caller saw');
      assert.equal((await store.tag(plain))?.maxId, 100n, 'a new row raises nothing');

      assert.deepEqual(await store.advance(plain), {
        kind: 'granted',
        allocation: { maxId: 110n, step: 10, tableStep: 10, kind: PLAIN_KIND },
        epoch: 7,
        identity: made.identity,
      });

      // Another process fenced since the caller read epoch 6: nothing is done.
      const found = await store.fence({ ...request, observedEpoch: 6 });
      assert.deepEqual(found, { epoch: 7, identity: made.identity, fenced: false, tags: 0 });

      const fenced = await store.fence({
        observedEpoch: 7,
        aboveEpoch: 3,
        skip: 1000n,
        atLeast: new Map([[behind, 5_000n]]),
      });
      assert.deepEqual(fenced, { epoch: 8, identity: made.identity, fenced: true, tags: 3 });
      assert.equal((await store.tag(plain))?.maxId, 1_110n);
      assert.equal((await store.tag(top))?.maxId, max, 'used up, not past 2^63 - 1');
      assert.equal((await store.tag(behind))?.maxId, 5_000n, 'to what the caller was granted');
      const left = byHand(path, (db) =>
        db.prepare('SELECT max_id FROM leaf_alloc WHERE biz_tag = ?').get(text),
      ) as { max_id: unknown };
      assert.equal(left.max_id, 'x', 'a row that is not an integer is left for its owner');
    } finally {
      await store.close();
    }
  });

  it('raises a tag from frond_high_water when its row was put back lower', async () => {
    const path = join(tempDir(), 'frond.db');
    const store = new SqliteSegmentStore(path);
    const tag = randomTag();
    try {
      await store.addTag({ tag, step: 10, start: 1n });
      assert.equal((await unjournaled(store).advance(tag, 490))?.maxId, 491n);
      byHand(path, (db) => db.prepare('UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = ?').run(tag));
      await store.fence({ observedEpoch: 0, aboveEpoch: 0, skip: 1n, atLeast: new Map() });
      await store.fence({ observedEpoch: 1, aboveEpoch: 0, skip: 1000n, atLeast: new Map() });
      assert.equal((await store.tag(tag))?.maxId, 1_491n);
    } finally {
      await store.close();
    }
  });
});
