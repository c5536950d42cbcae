import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { byHand } from './support/sqlite-by-hand.js';

// On SQLite the database file keeps frond_high_water, as PostgreSQL and MySQL do: `frond tag add`
// (no data dir of its own) and each `--workers` process (a data dir each) see what any of them was
// granted. Before, only the data dir of the node that served a name knew it: a plain tag that served
// 10,000 IDs, deleted by SQL and re-added opaque from the CLI, served 496 of them again.

const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };

function rowsOf(file: string, tag: string): { leaf: number; options: number } {
  return byHand(file, (db) => ({
    leaf: (db.prepare('SELECT COUNT(*) AS n FROM leaf_alloc WHERE biz_tag = ?').get(tag) as { n: number }).n,
    options: (
      db.prepare('SELECT COUNT(*) AS n FROM frond_tag_options WHERE biz_tag = ?').get(tag) as { n: number }
    ).n,
  }));
}

/** `rounds` batches of 20 IDs from 8 clients at once (so both workers answer); the other answers' codes. */
async function take(
  node: FrondProcess,
  tag: string,
  rounds: number,
): Promise<{ ids: bigint[]; codes: string[] }> {
  const ids: bigint[] = [];
  const codes: string[] = [];
  const client = async () => {
    for (let i = 0; i < rounds; i++) {
      const response = await fetch(`${node.url}/v1/segment/${tag}?count=20`);
      const body = (await response.json()) as { ids?: string[]; error?: { code: string } };
      if (response.status === 200) ids.push(...(body.ids ?? []).map(BigInt));
      else codes.push(`${response.status} ${body.error?.code}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, client));
  return { ids, codes };
}

function highest(ids: bigint[]): bigint {
  let top = 0n;
  for (const id of ids) if (id > top) top = id;
  return top;
}

describe('SQLite: the database file remembers the names that served IDs', () => {
  it('frond tag add --opaque from the CLI refuses a plain name whose row was deleted; a plain re-add goes on above it', async () => {
    const dir = tempDir();
    const file = join(dir, 'frond.db');
    const store = `sqlite:${file}`;
    const tag = randomTag();
    assert.equal((await runFrond(['db', 'init', '--store', store])).code, 0);
    assert.equal((await runFrond(['tag', 'add', tag, '--step', '100', '--store', store])).code, 0);
    const node = await startFrond(['--port', '0', '--data-dir', dir], { env });
    let served: bigint[];
    try {
      const first = await take(node, tag, 10);
      assert.deepEqual(first.codes, []);
      served = first.ids;
      assert.equal(served.length, 1_600);
    } finally {
      await node.stop();
    }
    byHand(file, (db) => db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag));

    // The CLI opens the file directly, with no data dir of the node's: the file's record refuses it.
    const opaque = await runFrond(['tag', 'add', tag, '--opaque', 'bits:20', '--store', store], { env });
    assert.equal(opaque.code, 1, opaque.stderr);
    assert.match(
      opaque.stderr,
      /^frond: tag .* has served IDs before .*use a new name \(store sqlite:\S+\)\n$/,
    );
    assert.deepEqual(rowsOf(file, tag), { leaf: 0, options: 0 });

    // Plain, from 1 again: a node with a fresh data dir serves above everything served before.
    assert.equal(
      (await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--store', store])).code,
      0,
    );
    const fresh = await startFrond(['--port', '0', '--data-dir', tempDir(), '--store', store], { env });
    try {
      const again = await take(fresh, tag, 5);
      assert.deepEqual(again.codes, []);
      const top = highest(served);
      for (const id of again.ids) assert.ok(id > top, `served ${id} again (already reached ${top})`);
    } finally {
      await fresh.stop();
    }
  });

  it('--workers 2: a row deleted and re-added lower through either worker repeats no ID, and is refused opaque', async () => {
    const dir = tempDir();
    const file = join(dir, 'frond.db');
    const tag = randomTag();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dir])).code, 0);
    assert.equal((await runFrond(['tag', 'add', tag, '--step', '50', '--data-dir', dir])).code, 0);
    const node = await startFrond(['--port', '0', '--data-dir', dir, '--workers', '2'], { env });
    try {
      const before = await take(node, tag, 20);
      assert.deepEqual(before.codes, []);
      const loadedBy = new Set(
        node.logs
          .filter((line) => line.includes('"segment.loaded"'))
          .map((line) => (JSON.parse(line) as { worker: number }).worker),
      );
      assert.deepEqual([...loadedBy].sort(), [0, 1], 'both workers loaded segments of the tag');
      byHand(file, (db) => db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag));

      // Eight requests on their own connections reach both workers: each refuses it.
      const opaque = await Promise.all(
        Array.from({ length: 8 }, () =>
          fetch(`${node.url}/v1/tags`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', connection: 'close' },
            body: JSON.stringify({ tag, step: 50, opaque: 'bits:20' }),
          }).then(async (response) => `${response.status} ${await response.text()}`),
        ),
      );
      for (const reply of opaque) assert.match(reply, /^409 .*OPAQUE_TAG_FIXED/);
      assert.deepEqual(rowsOf(file, tag), { leaf: 0, options: 0 });

      const added = await fetch(`${node.url}/v1/tags`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ tag, step: 50, start: 1 }),
      });
      assert.equal(added.status, 201, await added.text());
      // Each worker drains what it holds, finds the row gone or back (a missing tag is remembered
      // for a second), and loads again: from the file's record, whichever worker served below it.
      const after: bigint[] = [];
      const deadline = Date.now() + 10_000;
      while (after.length < 2_000 && Date.now() < deadline) {
        const more = await take(node, tag, 5);
        for (const code of more.codes) assert.match(code, /^(404 TAG_NOT_FOUND|503 SEGMENT_REGRESSED)$/);
        after.push(...more.ids);
        if (more.ids.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(after.length >= 2_000, `only ${after.length} IDs after the re-add`);
      const all = [...before.ids, ...after];
      assert.equal(new Set(all).size, all.length, 'an ID was handed out twice');
    } finally {
      const code = await node.stop();
      assert.equal(code, 0, [...node.logs, ...node.stderr].join('\n'));
    }
  });
});
