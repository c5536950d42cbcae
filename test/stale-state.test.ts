// The duplicate paths found by attack (issue 27), each as a user hit it: state one process keeps
// while another process, the CLI or an operator's SQL changes it. Each asserts what matters: no ID
// is handed out twice, and a refused change is refused with its code.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
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

function post(url: string, body: unknown): Promise<{ status: number; body: string }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    // A connection of its own each time: under --workers each may reach another process.
    const req = request(
      url,
      { method: 'POST', agent: false, timeout: 10_000, headers: { 'content-type': 'application/json' } },
      (res) => {
        let answer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          answer += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: answer }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`POST ${url} got no answer in time`)));
    req.on('error', reject);
    req.end(text);
  });
}

function duplicates(ids: readonly string[]): number {
  return ids.length - new Set(ids).size;
}

function sqlite(dir: string, text: string, ...values: unknown[]): void {
  const db = new Database(join(dir, 'frond.db'));
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare(text).run(...values);
  } finally {
    db.close();
  }
}

describe('no ID twice when another process, the CLI or SQL changes a tag', () => {
  it('SQLite, the CLI: a name that served plain IDs is not re-created opaque after its row is deleted', async () => {
    const dir = tempDir('frond-stale-');
    const env = secret();
    const node = await startFrond(['--port', '0', '--data-dir', dir, '--no-snowflake'], { env });
    try {
      const added = await runFrond(['tag', 'add', 't1', '--data-dir', dir], { env });
      assert.equal(added.code, 0, added.stderr);
      const plain = await take(node, 't1', 10_000);
      sqlite(dir, 'DELETE FROM leaf_alloc WHERE biz_tag = ?', 't1');
      const opaque = await runFrond(['tag', 'add', 't1', '--opaque', 'bits:20', '--data-dir', dir], { env });
      assert.notEqual(opaque.code, 0, `the CLI re-created t1 opaque: ${opaque.stdout}`);
      assert.match(opaque.stderr, /OPAQUE_TAG_FIXED/);
      assert.equal(duplicates(plain), 0);
    } finally {
      await node.stop();
    }
  });

  it('SQLite, --workers 2: no worker re-creates a served name opaque, and a row re-added lower goes on above', async () => {
    const dir = tempDir('frond-stale-');
    const env = secret();
    const node = await startFrond(['--port', '0', '--data-dir', dir, '--no-snowflake', '--workers', '2'], {
      env,
      timeoutMs: 40_000,
    });
    try {
      const created = await post(`${node.url}/v1/tags`, { tag: 't2', step: 1000 });
      assert.equal(created.status, 201, created.body);
      // One keep-alive connection: one worker serves all of these.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const before = await take(node, 't2', 15_000, agent);
      agent.destroy();
      sqlite(dir, 'DELETE FROM leaf_alloc WHERE biz_tag = ?', 't2');
      // New connections, spread over both workers: each must refuse.
      for (let i = 0; i < 6; i++) {
        const opaque = await post(`${node.url}/v1/tags`, { tag: 't2', opaque: 'bits:20' });
        assert.equal(opaque.status, 409, opaque.body);
        assert.match(opaque.body, /OPAQUE_TAG_FIXED/);
      }
      const again = await post(`${node.url}/v1/tags`, { tag: 't2', step: 1000, start: 1 });
      assert.equal(again.status, 201, again.body);
      const afterwards: string[] = [];
      // A connection per request: both workers answer some.
      const fresh = new Agent({ keepAlive: false });
      for (let i = 0; i < 10; i++) {
        const answer = await httpGet(`${node.url}/v1/segment/t2?count=500`, { agent: fresh });
        assert.equal(answer.status, 200, answer.body);
        afterwards.push(...(JSON.parse(answer.body) as { ids: string[] }).ids);
      }
      const all = [...before, ...afterwards];
      assert.equal(duplicates(all), 0, 'an ID of t2 was handed out twice');
      const highest = Math.max(...before.map(Number));
      assert.ok(
        afterwards.every((id) => Number(id) > highest),
        `after the row came back at 1, IDs went on above ${highest}`,
      );
    } finally {
      await node.stop();
    }
  });

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
