// The duplicate paths found by attack (issue 27), each as a user hit it: state one process keeps
// while another process, the CLI or an operator's SQL changes it (SQLite's CLI and --workers paths:
// test/sqlite-high-water.test.ts). Each asserts what matters: no ID
// is handed out twice, and a refused change is refused with its code.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Agent } from 'node:http';
import { after, describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import { type ServerDialect, testDatabase } from './support/test-database.js';

const secret = () => ({ FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') });

/** `count` IDs of `tag` in batches of 1,000 through `/v1/segment`, as strings. */
async function take(node: FrondProcess, tag: string, count: number, agent?: Agent): Promise<string[]> {
  const ids: string[] = [];
  for (let round = 0; ids.length < count && round < count / 100; round++) {
    const answer = await httpGet(
      `${node.url}/v1/segment/${tag}?count=${Math.min(1000, count - ids.length)}`,
      agent === undefined ? {} : { agent },
    );
    assert.equal(answer.status, 200, answer.body);
    ids.push(...(JSON.parse(answer.body) as { ids: string[] }).ids);
  }
  return ids;
}

function duplicates(ids: readonly string[]): number {
  return ids.length - new Set(ids).size;
}

describe('no ID twice when another process, the CLI or SQL changes a tag', () => {
  for (const dialect of ['postgres', 'mysql'] satisfies ServerDialect[]) {
    const database = testDatabase(dialect);
    after(() => database.drop());

    it(`${dialect}: a node that remembered a tag as plain never serves it plain once it was re-created opaque`, async (t) => {
      const db = await database.open(t);
      if (db === undefined) return;
      const env = secret();
      const tag = `t3-${randomBytes(3).toString('hex')}`;
      const added = await runFrond(['tag', 'add', tag, '--store', db.url], { env });
      assert.equal(added.code, 0, added.stderr);
      const args = () => [
        '--port',
        '0',
        '--data-dir',
        tempDir('frond-node-'),
        '--no-snowflake',
        '--store',
        db.url,
      ];
      const a = await startFrond(args(), { env });
      let b: FrondProcess | undefined;
      try {
        // A listed the tag as plain at start; it never served it, so it may be created again.
        await db.sql(`DELETE FROM leaf_alloc WHERE biz_tag = ${dialect === 'postgres' ? '$1' : '?'}`, [tag]);
        const opaque = await runFrond(['tag', 'add', tag, '--opaque', 'bits:20', '--store', db.url], { env });
        assert.equal(opaque.code, 0, opaque.stderr);
        b = await startFrond(args(), { env });
        const ids: string[] = [];
        const fromA: string[] = [];
        for (let round = 0; round < 10; round++) {
          fromA.push(...(await take(a, tag, 2_000)));
          ids.push(...(await take(b, tag, 2_000)));
        }
        ids.push(...fromA);
        assert.equal(duplicates(ids), 0, `${duplicates(ids)} duplicates in ${ids.length} IDs`);
        // A serves the tag opaque too: its IDs are not the segment IDs 1, 2, 3 …
        const highest = Math.max(...fromA.map(Number));
        assert.ok(highest > 100_000, 'A answered plain IDs');
      } finally {
        await Promise.all([a.stop(), b?.stop()]);
      }
    });
  }
});
