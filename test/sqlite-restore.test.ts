import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet, idsOf } from './support/http-get.js';
import { copy } from './support/sqlite-by-hand.js';

// The SQLite file restored from a backup while `frond serve --workers 2` runs on it. Each worker is
// a process with a data dir of its own; before the fence of SQLite, the worker that found the file
// went back took the next range above what IT had been granted, which was the other worker's:
// 1,000 IDs served twice out of 6,060. Now every tag is raised past what any process holds.

/** A new connection per request (as curl makes), so the primary hands them to both workers. */
const fresh = new Agent({ keepAlive: false });

async function ids(url: string): Promise<number[]> {
  const answer = await httpGet(url, { agent: fresh });
  assert.equal(answer.status, 200, answer.body);
  return idsOf(answer);
}

function duplicates(all: number[]): number {
  return all.length - new Set(all).size;
}

describe('SQLite restored under frond serve --workers 2', () => {
  it('serves no ID twice after the file is put back to a copy taken before the node served', async () => {
    const dataDir = tempDir();
    const file = join(dataDir, 'frond.db');
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const added = await runFrond([
      'tag',
      'add',
      't',
      '--step',
      '1000',
      '--start',
      '1',
      '--data-dir',
      dataDir,
    ]);
    assert.equal(added.code, 0, added.stderr);
    const backup = join(tempDir(), 'backup.db');
    await copy(file, backup);

    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--workers', '2', '--no-snowflake']);
    const served: number[] = [];
    try {
      for (let i = 0; i < 60; i++) served.push(...(await ids(`${node.url}/api/segment/get/t`)));
      // Both workers hold a segment of their own: the case that served IDs twice.
      const loaders = new Set(
        node.logs
          .filter((line) => line.includes('"segment.loaded"'))
          .map((line) => (JSON.parse(line) as { worker: number }).worker),
      );
      assert.equal(loaders.size, 2, `segments loaded by workers ${[...loaders].join(', ')}`);

      await copy(backup, file); // leaf_alloc and frond_high_water back to max_id 1, no fence row

      for (let i = 0; i < 6; i++) served.push(...(await ids(`${node.url}/v1/segment/t?count=1000`)));
      assert.equal(served.length, 6_060);
      assert.equal(duplicates(served), 0, `${duplicates(served)} IDs served twice`);
      assert.ok(
        node.logs.some((line) => line.includes('"segment.fenced"')),
        'the worker that found the file restored fenced it',
      );
    } finally {
      await node.stop();
    }
  });

  it('frond db fence raises every tag of a restored file, a file without the fence row included', async () => {
    const dataDir = tempDir();
    const file = join(dataDir, 'frond.db');
    const store = `sqlite:${file}`;
    assert.equal((await runFrond(['db', 'init', '--store', store])).code, 0);
    for (const tag of ['a', 'b']) {
      const added = await runFrond(['tag', 'add', tag, '--step', '10', '--store', store]);
      assert.equal(added.code, 0, added.stderr);
    }
    // No fence row yet (no node served): the command makes it and still raises, as after a restore.
    const first = await runFrond(['db', 'fence', '--yes', '--store', store, '--fence-skip', '1000']);
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      /^fenced sqlite:.*: 2 tags raised by 1000 \(and the records of removed tags and of new names\), epoch 2 on [0-9a-f-]{36}\n$/,
    );
    const second = await runFrond(['db', 'fence', '--yes', '--store', store, '--fence-skip', '1000']);
    assert.match(
      second.stdout,
      /: 2 tags raised by 1000 \(and the records of removed tags and of new names\), epoch 3 on /,
    );
    const db = new Database(file, { readonly: true });
    try {
      assert.deepEqual(db.prepare('SELECT biz_tag, max_id FROM leaf_alloc ORDER BY biz_tag').all(), [
        { biz_tag: 'a', max_id: 2_001 },
        { biz_tag: 'b', max_id: 2_001 },
      ]);
    } finally {
      db.close();
    }
  });
});
