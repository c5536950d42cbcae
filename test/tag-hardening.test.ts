import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { LEAF_LAYOUT } from '../src/core/snowflake-layout.js';
import { createApp } from '../src/server/http/app.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';
import { type TestDatabase, testDatabase } from './support/test-database.js';

// Issue 16, items 1, 2 and 4, against real `frond serve` processes and real databases.

interface Reply {
  status: number;
  text: string;
  retryAfter: string | null;
}

async function call(url: string, init: RequestInit = {}): Promise<Reply> {
  const response = await fetch(url, init);
  return {
    status: response.status,
    text: await response.text(),
    retryAfter: response.headers.get('retry-after'),
  };
}

function addTag(node: FrondProcess, body: Record<string, unknown>): Promise<Reply> {
  return call(`${node.url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

function codeOf(reply: Reply): string | undefined {
  try {
    return (JSON.parse(reply.text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}

/** `n` IDs one at a time through frond's own route; the failures as they came. */
async function take(
  node: FrondProcess,
  tag: string,
  n: number,
): Promise<{ ids: bigint[]; failures: Reply[] }> {
  const ids: bigint[] = [];
  const failures: Reply[] = [];
  for (let i = 0; i < n; i++) {
    const reply = await call(`${node.url}/v1/segment/${tag}`);
    if (reply.status === 200) ids.push(...(JSON.parse(reply.text) as { ids: string[] }).ids.map(BigInt));
    else failures.push(reply);
  }
  return { ids, failures };
}

/**
 * Item 1: the tag's row is deleted by SQL and re-added with `start: 1`. Whatever the node answers
 * then, no ID at or below one it already served comes out; a refusal is 503 with Retry-After.
 */
async function dropAndReAdd(
  node: FrondProcess,
  tag: string,
  deleteRow: () => Promise<void>,
): Promise<bigint> {
  assert.equal((await addTag(node, { tag, step: 5, start: 1 })).status, 201);
  const first = await take(node, tag, 25);
  assert.deepEqual(first.failures, []);
  assert.deepEqual(
    first.ids,
    Array.from({ length: 25 }, (_, i) => BigInt(i + 1)),
  );
  await deleteRow();
  // Drain what the node holds until it finds the row gone (TAG_NOT_FOUND), then re-add it.
  for (let i = 0; i < 2_000; i++) {
    const reply = await call(`${node.url}/v1/segment/${tag}`);
    if (reply.status === 404) break;
    assert.equal(reply.status, 200, reply.text);
    first.ids.push(...(JSON.parse(reply.text) as { ids: string[] }).ids.map(BigInt));
  }
  let served = 0n;
  for (const id of first.ids) if (id > served) served = id;
  const readded = await addTag(node, { tag, step: 5, start: 1 });
  assert.equal(readded.status, 201, readded.text);
  // The node remembers a missing tag for a second (missingTagTtlMs); then it asks the store again.
  const again: { ids: bigint[]; failures: Reply[] } = { ids: [], failures: [] };
  for (let waited = 0; ; waited += 100) {
    const reply = await call(`${node.url}/v1/segment/${tag}`);
    if (reply.status === 404 && waited < 3_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    if (reply.status === 200)
      again.ids.push(...(JSON.parse(reply.text) as { ids: string[] }).ids.map(BigInt));
    else again.failures.push(reply);
    break;
  }
  const more = await take(node, tag, 30);
  again.ids.push(...more.ids);
  again.failures.push(...more.failures);
  for (const id of again.ids) assert.ok(id > served, `served ${id} again (already reached ${served})`);
  for (const failure of again.failures) {
    assert.equal(failure.status, 503, failure.text);
    assert.equal(codeOf(failure), 'SEGMENT_REGRESSED', failure.text);
    assert.equal(failure.retryAfter, '1');
  }
  let highest = served;
  for (const id of again.ids) if (id > highest) highest = id;
  return highest;
}

describe('a tag dropped by SQL and re-added with start 1 (issue 16 item 1)', () => {
  it('SQLite: the node never serves below what it served for the tag', async () => {
    const dir = tempDir();
    const file = join(dir, 'ids.db');
    const args = ['--port', '0', '--data-dir', dir, '--store', `sqlite:${file}`];
    const node = await startFrond(args);
    const tag = randomTag();
    const deleteRow = async () => {
      const db = new Database(file);
      try {
        db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag);
      } finally {
        db.close();
      }
    };
    let served: bigint;
    try {
      served = await dropAndReAdd(node, tag, deleteRow);
    } finally {
      await node.stop();
    }
    // Restarted on its data dir, the node still remembers what it served for the tag.
    const db = new Database(file);
    db.prepare('UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = ?').run(tag);
    db.close();
    const restarted = await startFrond(args);
    try {
      const { ids, failures } = await take(restarted, tag, 10);
      for (const failure of failures) assert.equal(failure.status, 503, failure.text);
      assert.ok(ids.length > 0, 'nothing served after the restart');
      for (const id of ids)
        assert.ok(id > served, `served ${id} after the restart (already reached ${served})`);
    } finally {
      await restarted.stop();
    }
  });

  it('a range below what the buffer reached is 503 SEGMENT_REGRESSED with Retry-After, never served', async () => {
    // Without the data dir's fence (a store handed to the core directly), the buffer's own check.
    const store = new MemoryStore();
    store.rows.set('lowered', { maxId: 1n, step: 2 });
    const segment = new SegmentAllocator(store, systemClock, silentLogger, {
      ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
      segmentWaitMs: 200,
    });
    const server = createServer(
      createApp({ segment, snowflake: undefined, layout: LEAF_LAYOUT, logger: silentLogger }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      assert.equal((await call(`${base}/api/segment/get/lowered`)).text, '1');
      assert.equal((await call(`${base}/api/segment/get/lowered`)).text, '2');
      (store.rows.get('lowered') as { maxId: bigint }).maxId = 1n;
      let refused: Reply | undefined;
      let highest = 2n;
      for (let i = 0; i < 40 && refused === undefined; i++) {
        const reply = await call(`${base}/v1/segment/lowered`);
        if (reply.status === 200) {
          // What the buffer loaded before the row was lowered is above; nothing at or below 2 again.
          const id = BigInt((JSON.parse(reply.text) as { ids: string[] }).ids[0] as string);
          assert.ok(id > highest, `served ${id} again`);
          highest = id;
        } else if (codeOf(reply) === 'SEGMENT_REGRESSED') refused = reply;
        else await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(refused !== undefined, 'no SEGMENT_REGRESSED');
      assert.equal(refused.status, 503, refused.text);
      assert.equal(refused.retryAfter, '1');
      // Leaf's route answers as Leaf did for a failed load: 500, Result{id=-3}.
      const leaf = await call(`${base}/api/segment/get/lowered`);
      assert.equal(leaf.status, 500);
      assert.match(leaf.text, /Result\{id=-3, status=EXCEPTION\}/);
    } finally {
      segment.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  const postgres = testDatabase('postgres');
  after(() => postgres.drop());
  it('PostgreSQL: the node never serves below what it served for the tag', async (t) => {
    const db = await postgres.open(t);
    if (db === undefined) return;
    const node = await startFrond(['--port', '0', '--data-dir', tempDir(), '--store', db.url]);
    try {
      const tag = randomTag();
      await dropAndReAdd(node, tag, async () => {
        await db.sql('DELETE FROM leaf_alloc WHERE biz_tag = $1', [tag]);
      });
    } finally {
      await node.stop();
    }
  });
});

describe('a plain tag dropped by SQL is never re-created opaque under its name', () => {
  // Its opaque IDs would be spread over the whole domain, where the plain IDs it served lie too.
  const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };

  it('SQLite: the node that served it answers 409 OPAQUE_TAG_FIXED and makes no row', async () => {
    const dir = tempDir();
    const file = join(dir, 'ids.db');
    const node = await startFrond(['--port', '0', '--data-dir', dir, '--store', `sqlite:${file}`], { env });
    try {
      const tag = randomTag();
      assert.equal((await addTag(node, { tag, step: 10 })).status, 201);
      assert.equal((await take(node, tag, 3)).ids.length, 3);
      const db = new Database(file);
      db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?').run(tag);
      db.close();
      const refused = await addTag(node, { tag, step: 10, opaque: 'bits:40' });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(codeOf(refused), 'OPAQUE_TAG_FIXED');
      assert.match(refused.text, /has served IDs before/);
      assert.equal((await call(`${node.url}/v1/tags/${tag}`)).status, 404);
      // A name never served is made opaque as before.
      assert.equal((await addTag(node, { tag: randomTag(), opaque: 'bits:40' })).status, 201);
    } finally {
      await node.stop();
    }
  });

  for (const dialect of ['postgres', 'mysql'] as const) {
    const database = testDatabase(dialect);
    after(() => database.drop());
    it(`${dialect === 'postgres' ? 'PostgreSQL' : 'MariaDB'}: frond tag add --opaque from anywhere is refused by frond_high_water in one line`, async (t) => {
      const db = await database.open(t);
      if (db === undefined) return;
      const tag = randomTag();
      const node = await startFrond(['--port', '0', '--data-dir', tempDir(), '--store', db.url], { env });
      try {
        assert.equal((await addTag(node, { tag, step: 10 })).status, 201);
        assert.equal((await take(node, tag, 3)).ids.length, 3);
      } finally {
        await node.stop();
      }
      await db.sql(`DELETE FROM leaf_alloc WHERE biz_tag = ${dialect === 'postgres' ? '$1' : '?'}`, [tag]);
      // Another machine, another data dir: only the database remembers the name.
      const added = await runFrond(['tag', 'add', tag, '--opaque', 'bits:40', '--store', db.url], { env });
      assert.equal(added.code, 1, added.stderr);
      assert.match(added.stderr, /^frond: tag .* has served IDs before .*use a new name \(store \S+\)\n$/);
      const rows = await db.sql(
        `SELECT COUNT(*) AS n FROM leaf_alloc WHERE biz_tag = ${dialect === 'postgres' ? '$1' : '?'}`,
        [tag],
      );
      assert.equal(Number(rows[0]?.n), 0);
      const options = await db.sql(
        `SELECT COUNT(*) AS n FROM frond_tag_options WHERE biz_tag = ${dialect === 'postgres' ? '$1' : '?'}`,
        [tag],
      );
      assert.equal(Number(options[0]?.n), 0);
      const fresh = await runFrond(['tag', 'add', randomTag(), '--opaque', 'bits:40', '--store', db.url], {
        env,
      });
      assert.equal(fresh.code, 0, fresh.stderr);
    });
  }
});

function variants(tag: string, n: number): string[] {
  const out = new Set<string>();
  for (let mask = 1; out.size < n; mask++) {
    let spelled = '';
    for (let i = 0; i < tag.length; i++) {
      const c = tag[i] as string;
      spelled += (mask >> i) & 1 ? c.toUpperCase() : c;
    }
    if (spelled !== tag) out.add(spelled);
  }
  return [...out];
}

describe('case variants of one tag on MariaDB (issue 16 item 2)', () => {
  const mysql = testDatabase('mysql');
  after(() => mysql.drop());

  async function maxIdOf(db: TestDatabase, tag: string): Promise<string> {
    const rows = await db.sql('SELECT max_id FROM leaf_alloc WHERE biz_tag = ? COLLATE utf8mb4_bin', [tag]);
    return String(rows[0]?.max_id);
  }

  it('500 case variants are TAG_NOT_FOUND and move no max_id; the exact spelling is served', async (t: TestContext) => {
    const db = await mysql.open(t);
    if (db === undefined) return;
    const node = await startFrond(['--port', '0', '--data-dir', tempDir(), '--store', db.url]);
    try {
      const tag = `case${randomBytes(4)
        .toString('hex')
        .replace(/[0-9]/g, (d) => 'ghijklmnop'[Number(d)] as string)}`;
      assert.equal((await addTag(node, { tag, step: 1000, start: 1 })).status, 201);
      assert.equal((await call(`${node.url}/api/segment/get/${tag}`)).text, '1');
      const before = await maxIdOf(db, tag);
      const spelled = variants(tag, 500);
      for (const variant of spelled) {
        const leaf = await call(`${node.url}/api/segment/get/${variant}`);
        assert.notEqual(leaf.status, 200, `${variant} was served ${leaf.text}`);
        const own = await call(`${node.url}/v1/segment/${variant}`);
        assert.equal(own.status, 404, own.text);
        assert.equal(codeOf(own), 'TAG_NOT_FOUND', own.text);
      }
      // A trailing space is the same key under MySQL's PAD SPACE collations: not the row either.
      for (const variant of [`${tag}%20`, `${tag.toUpperCase()}%20%20`]) {
        assert.equal(codeOf(await call(`${node.url}/v1/segment/${variant}`)), 'TAG_NOT_FOUND', variant);
      }
      // The admin API reads and changes the row of the exact spelling only.
      const upper = tag.toUpperCase();
      assert.equal((await call(`${node.url}/v1/tags/${upper}`)).status, 404);
      const patched = await call(`${node.url}/v1/tags/${upper}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ step: 7 }),
      });
      assert.equal(patched.status, 404, patched.text);
      const removed = await call(`${node.url}/v1/tags/${upper}`, { method: 'DELETE' });
      assert.equal(removed.status, 404, removed.text);
      assert.equal(codeOf(removed), 'TAG_NOT_FOUND', removed.text);
      assert.equal((await addTag(node, { tag: upper, step: 10 })).status, 409);
      assert.equal(await maxIdOf(db, tag), before, 'a case variant moved max_id');
      assert.equal(String((await db.sql('SELECT step FROM leaf_alloc'))[0]?.step), '1000');
      assert.equal((await call(`${node.url}/api/segment/get/${tag}`)).text, '2');
      const stats = JSON.parse((await call(`${node.url}/v1/stats`)).text) as { segments?: unknown[] };
      const text = JSON.stringify(stats);
      for (const variant of spelled.slice(0, 20))
        assert.ok(!text.includes(`"${variant}"`), `${variant} has a buffer`);
    } finally {
      await node.stop();
    }
  });
});

describe('starts that can never be served (issue 16 item 4)', () => {
  it('refuses them at creation, and serves every start it accepts', async () => {
    const dir = tempDir();
    const node = await startFrond(['--port', '0', '--data-dir', dir]);
    try {
      const safe = randomTag();
      assert.equal((await addTag(node, { tag: safe, start: 9007199254740991, step: 1 })).status, 201);
      assert.deepEqual(JSON.parse((await call(`${node.url}/v1/segment/${safe}`)).text).ids, [
        '9007199254740991',
      ]);
      assert.equal((await call(`${node.url}/api/segment/get/${safe}`)).text, '9007199254740992');

      // The last start that is served: [2^63 - 2, 2^63 - 1) with step 1.
      const last = randomTag();
      assert.equal((await addTag(node, { tag: last, start: '9223372036854775806', step: 1 })).status, 201);
      assert.deepEqual(JSON.parse((await call(`${node.url}/v1/segment/${last}`)).text).ids, [
        '9223372036854775806',
      ]);
      const exhausted = await call(`${node.url}/v1/segment/${last}`);
      assert.equal(codeOf(exhausted), 'ID_RANGE_EXHAUSTED', exhausted.text);

      const near = randomTag();
      assert.equal((await addTag(node, { tag: near, start: '9223372036854774807', step: 1000 })).status, 201);
      assert.equal((await call(`${node.url}/api/segment/get/${near}`)).text, '9223372036854774807');

      for (const [start, step] of [
        ['9223372036854775807', 1],
        ['9223372036854775807', 1000],
        ['9223372036854774808', 1000],
        ['9223372036854775808', 1],
      ] as const) {
        const refused = await addTag(node, { tag: randomTag(), start, step });
        assert.equal(refused.status, 400, `${start} step ${step}: ${refused.text}`);
        assert.equal(codeOf(refused), 'INVALID_ARGUMENT');
      }
    } finally {
      await node.stop();
    }
  });
});

describe('one percent-decoding rule on every tag route (issue 16 item 5)', () => {
  it('reads a%3Ab as a:b and a%253Ab as a%3Ab on the Leaf, v1, ranges and admin routes', async () => {
    const node = await startFrond(['--port', '0', '--data-dir', tempDir()]);
    try {
      assert.equal((await addTag(node, { tag: 'a:b', step: 1000, start: 1 })).status, 201);
      assert.equal((await addTag(node, { tag: 'a%3Ab', step: 1000, start: 1_000_000 })).status, 201);
      const idOf = async (path: string): Promise<bigint> => {
        const reply = await call(`${node.url}${path}`);
        assert.equal(reply.status, 200, `${path}: ${reply.text}`);
        if (!reply.text.startsWith('{')) return BigInt(reply.text);
        const body = JSON.parse(reply.text) as { ids?: string[]; ranges?: { start: string }[] };
        return BigInt(body.ids?.[0] ?? (body.ranges?.[0]?.start as string));
      };
      for (const spelled of ['a:b', 'a%3Ab', 'a%3ab']) {
        assert.ok((await idOf(`/api/segment/get/${spelled}`)) < 1_000_000n, spelled);
        assert.ok((await idOf(`/v1/segment/${spelled}`)) < 1_000_000n, spelled);
        assert.ok((await idOf(`/v1/ranges/${spelled}?count=1`)) < 1_000_000n, spelled);
        const row = await call(`${node.url}/v1/tags/${spelled}`);
        assert.equal((JSON.parse(row.text) as { tag: string }).tag, 'a:b', spelled);
      }
      assert.ok((await idOf('/api/segment/get/a%253Ab')) >= 1_000_000n);
      assert.ok((await idOf('/v1/segment/a%253Ab')) >= 1_000_000n);
      assert.ok((await idOf('/v1/ranges/a%253Ab?count=1')) >= 1_000_000n);
      assert.equal(
        (JSON.parse((await call(`${node.url}/v1/tags/a%253Ab`)).text) as { tag: string }).tag,
        'a%3Ab',
      );
      for (const route of ['/api/segment/get/', '/v1/segment/', '/v1/ranges/', '/v1/tags/']) {
        const bad = await call(`${node.url}${route}a%E8b`);
        assert.notEqual(bad.status, 200, route);
        if (!route.startsWith('/api')) assert.equal(codeOf(bad), 'INVALID_TAG', `${route}: ${bad.text}`);
      }
    } finally {
      await node.stop();
    }
  });
});
