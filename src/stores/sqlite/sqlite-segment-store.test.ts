import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { runNode, tempDir } from '../../../test/support/frond-process.js';
import { randomTag } from '../../../test/support/random-tag.js';
import { unjournaled } from '../../../test/support/store-views.js';
import { isFrondError } from '../../core/errors.js';
import { PLAIN_KIND } from '../../core/tag-kind.js';
import { SqliteSegmentStore } from './sqlite-segment-store.js';

// The store contract itself runs in test/segment-store.test.ts; these are the worker thread's own
// promises: the event loop goes on while a call waits in SQLite, errors keep their class and code,
// and a worker that dies fails its calls instead of leaving them waiting.

/** A store on a fresh file and a second connection to it, as another process (`frond tag add`) would hold. */
async function storeAndOther(): Promise<{ store: SqliteSegmentStore; other: Database.Database }> {
  const path = join(tempDir(), 'frond.db');
  const store = new SqliteSegmentStore(path);
  await store.listTags(); // the worker has opened the file and created the tables
  return { store, other: new Database(path) };
}

/** Resolves after `count` turns of a 5 ms timer: only an event loop that is free runs them. */
async function timerTurns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('SQLite store in its worker thread', () => {
  it('keeps the event loop running while a segment load waits for a write lock another connection holds', async () => {
    const { store, other } = await storeAndOther();
    try {
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: 1n });
      other.exec('BEGIN IMMEDIATE');
      let settled = false;
      const load = unjournaled(store)
        .advance(tag)
        .finally(() => {
          settled = true;
        });
      // Within busy_timeout (5 s) the load waits for the lock. On the event loop (better-sqlite3
      // called in this thread) it would hold these timers for the whole 5 s and then fail
      // SQLITE_BUSY, because the lock could never be released while it waited.
      await timerTurns(20);
      assert.equal(settled, false, 'the load waits for the lock while the timers run');
      other.exec('ROLLBACK');
      assert.deepEqual(await load, { maxId: 11n, step: 10, tableStep: 10, kind: PLAIN_KIND });
    } finally {
      other.close();
      await store.close();
    }
  });

  it('answers SQLite errors and FrondErrors with their own class and code', async () => {
    const { store, other } = await storeAndOther();
    try {
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: 1n });
      await assert.rejects(store.addTag({ tag, step: 10, start: 1n }), (error) =>
        isFrondError(error, 'TAG_EXISTS'),
      );
      other.exec('DROP TABLE leaf_alloc');
      await assert.rejects(
        unjournaled(store).advance(tag),
        (error) =>
          error instanceof Database.SqliteError &&
          error.code === 'SQLITE_ERROR' &&
          /no such table: leaf_alloc/.test(error.message),
      );
    } finally {
      other.close();
      await store.close();
    }
    await assert.rejects(store.listTags(), {
      name: 'TypeError',
      message: 'The database connection is not open',
    });
  });

  it('answers SQLITE_BUSY when another connection holds the write lock past busy_timeout (5 s)', async () => {
    const { store, other } = await storeAndOther();
    try {
      const tag = randomTag();
      await store.addTag({ tag, step: 10, start: 1n });
      other.exec('BEGIN IMMEDIATE');
      await assert.rejects(
        unjournaled(store).advance(tag),
        (error) => error instanceof Database.SqliteError && error.code === 'SQLITE_BUSY',
      );
      other.exec('ROLLBACK');
      assert.equal((await store.tag(tag))?.maxId, 1n, 'the refused load changed nothing');
    } finally {
      other.close();
      await store.close();
    }
  });

  it('fails the calls of a worker that dies with STORE_UNAVAILABLE, and serves again from a new worker', async () => {
    const path = join(tempDir(), 'frond.db');
    const setup = new SqliteSegmentStore(path);
    const tag = randomTag();
    await setup.addTag({ tag, step: 10, start: 1n });
    await setup.close();
    const store = new SqliteSegmentStore(path);
    try {
      // Both calls are posted while the new worker is still loading its modules (tens of ms), and it
      // is ended before it reads them: the worker is private, a test reaches it to end it as a crash
      // (an exit, a fatal error) would.
      const calls = [unjournaled(store).advance(tag), store.tag(tag)];
      void (store as unknown as { worker: Worker }).worker.terminate();
      for (const call of calls) {
        await assert.rejects(
          call,
          (error) =>
            isFrondError(error, 'STORE_UNAVAILABLE') && /SQLite worker thread stopped/.test(error.message),
        );
      }
      // The next call starts a new worker; the load that was never read consumed nothing.
      assert.deepEqual(await unjournaled(store).advance(tag), {
        maxId: 11n,
        step: 10,
        tableStep: 10,
        kind: PLAIN_KIND,
      });
    } finally {
      await store.close();
    }
  });

  it('lets the process exit with a store opened and never called or closed (a start that failed right after it)', async () => {
    const dir = tempDir();
    const script = join(dir, 'open-only.mts');
    writeFileSync(
      script,
      `import { SqliteSegmentStore } from ${JSON.stringify(new URL('./sqlite-segment-store.ts', import.meta.url).href)};
new SqliteSegmentStore(process.argv[2]);
console.log('opened');
`,
    );
    // Its worker thread is idle: the process ends when its own work does (it hung for good when the
    // worker was unref'd before its 'message' listener, which refs it again).
    const result = await runNode(['--import', 'tsx', script, join(dir, 'frond.db')], { timeoutMs: 20_000 });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, 'opened\n');
  });

  it('refuses a file that is not a database at open, in one error, and leaves no thread behind', async () => {
    const path = join(tempDir(), 'frond.db');
    writeFileSync(path, 'not a database, but long enough to have a header: '.repeat(20));
    assert.throws(
      () => new SqliteSegmentStore(path),
      (error) => error instanceof Database.SqliteError && error.code === 'SQLITE_NOTADB',
    );
  });

  it('closes in any state: twice at once, after its worker died, and before any call', async () => {
    const path = join(tempDir(), 'frond.db');
    const twice = new SqliteSegmentStore(path);
    await twice.listTags();
    await Promise.all([twice.close(), twice.close()]);
    await twice.close();

    const died = new SqliteSegmentStore(path);
    await (died as unknown as { worker: Worker }).worker.terminate();
    await died.close();
    await assert.rejects(died.listTags(), { name: 'TypeError' });

    // The close is posted while the new worker is still loading its modules.
    await new SqliteSegmentStore(path).close();
  });
});
