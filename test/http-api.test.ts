import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { decomposeSnowflake, LEAF_LAYOUT } from '../src/core/snowflake-layout.js';
import { createApp } from '../src/server/http/app.js';
import { FROND_VERSION } from '../src/server/ops/version.js';
import type { ServeConfig } from '../src/server/start/serve-config.js';
import { type RunningServer, startServer } from '../src/server/start/start-server.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { tempDir } from './support/frond-process.js';
import { MemoryStore } from './support/memory-store.js';
import { randomTag } from './support/random-tag.js';
import { testServeConfig } from './support/serve-config.js';

function config(dataDir: string, overrides: Partial<ServeConfig> = {}): ServeConfig {
  return testServeConfig(dataDir, { workerId: 42, ...overrides });
}

interface Reply {
  status: number;
  type: string;
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

async function call(base: string, path: string, method = 'GET'): Promise<Reply> {
  const response = await fetch(base + path, { method });
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    body: await response.text(),
    headers: Object.fromEntries(response.headers),
  };
}

interface RangesBody {
  ranges: { start: string; end: string }[];
  count: number;
}

/** How many IDs the runs `[start, end)` of a grant hold; they must increase and be decimal strings. */
function runsSize(body: RangesBody): number {
  let total = 0n;
  let previous: bigint | undefined;
  for (const { start, end } of body.ranges) {
    assert.match(start, /^-?[0-9]+$/);
    assert.match(end, /^-?[0-9]+$/);
    assert.ok(BigInt(end) > BigInt(start));
    if (previous !== undefined) assert.ok(BigInt(start) >= previous);
    previous = BigInt(end);
    total += BigInt(end) - BigInt(start);
  }
  return Number(total);
}

async function maxIdOf(dataDir: string, tag: string): Promise<bigint | undefined> {
  const store = new SqliteSegmentStore(`${dataDir}/frond.db`);
  try {
    return (await store.tag(tag))?.maxId;
  } finally {
    await store.close();
  }
}

function errorOf(reply: Reply): { code: string; message: string } {
  assert.match(reply.type, /^application\/json/);
  return (JSON.parse(reply.body) as { error: { code: string; message: string } }).error;
}

describe('HTTP API (real server, SQLite store)', () => {
  let server: RunningServer;
  let base: string;
  let dataDir: string;
  const tag = randomTag();

  before(async () => {
    dataDir = tempDir();
    const store = new SqliteSegmentStore(`${dataDir}/frond.db`);
    await store.addTag({ tag, step: 100, start: 1000n, description: 'orders' });
    await store.close();
    server = await startServer(config(dataDir), silentLogger, systemClock);
    base = server.url;
  });

  after(() => server.close());

  it("answers Leaf's segment endpoint with the bare ID as text/plain, 1000 first", async () => {
    const first = await call(base, `/api/segment/get/${tag}`);
    assert.equal(first.status, 200);
    assert.equal(first.type, 'text/plain;charset=UTF-8');
    assert.equal(first.body, '1000');
    // Any method, and a trailing slash, as Leaf (Spring MVC) routes them.
    assert.equal((await call(base, `/api/segment/get/${tag}/`, 'POST')).body, '1001');
  });

  it('answers 404 TAG_NOT_FOUND for a tag without a row, and 400 INVALID_TAG only for what cannot be a tag', async () => {
    const missing = await call(base, `/v1/segment/${randomTag()}`);
    assert.equal(missing.status, 404);
    assert.equal(errorOf(missing).code, 'TAG_NOT_FOUND');
    // Any name a varchar(128) holds is a tag: these have no row, so they are 404, not 400.
    for (const name of ['a%20b', 'caf%C3%A9', 'a/b', 'order@v2', 'a~b', 'a,b']) {
      const reply = await call(base, `/v1/segment/${name}`);
      assert.equal(reply.status, 404, name);
      assert.equal(errorOf(reply).code, 'TAG_NOT_FOUND');
    }
    for (const bad of ['x'.repeat(129), '%00', 'a%09b', '%ZZ', '%C3%28', '%E8%AE']) {
      const reply = await call(base, `/v1/segment/${bad}`);
      assert.equal(reply.status, 400, bad);
      assert.equal(errorOf(reply).code, 'INVALID_TAG');
    }
    // Leaf's endpoint answers a tag it does not know as Leaf did: 500, Result{id=-2}.
    const leaf = await call(base, `/api/segment/get/${randomTag()}`);
    assert.equal(leaf.status, 500);
    assert.match(leaf.body, /"message":"Result\{id=-2, status=EXCEPTION\}"/);
    const empty = await call(base, '/api/segment/get/');
    assert.equal(empty.status, 404);
  });

  it("answers Leaf's snowflake endpoint with a 19-digit ID, the key ignored", async () => {
    const reply = await call(base, '/api/snowflake/get/anything');
    assert.equal(reply.status, 200);
    assert.match(reply.body, /^[0-9]{19}$/);
    const parts = decomposeSnowflake(BigInt(reply.body));
    assert.equal(parts.workerId, 42);
    assert.ok(Math.abs(parts.timestamp - Date.now()) < 10_000);
    assert.equal((await call(base, '/api/snowflake/get/')).status, 404);
  });

  it("decodes like Leaf's /decodeSnowflakeId: string values, 200 errorMsg for a non-number, 400 when missing", async () => {
    const id = (await call(base, '/api/snowflake/get/x')).body;
    const reply = await call(base, `/decodeSnowflakeId?snowflakeId=${id}`);
    assert.equal(reply.status, 200);
    const body = JSON.parse(reply.body) as Record<string, string>;
    assert.equal(body.workerId, '42');
    assert.match(body.timestamp ?? '', /^[0-9]{13}\([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8}\.[0-9]{3}\)$/);
    assert.match(body.sequenceId ?? '', /^[0-9]+$/);
    const bad = await call(base, '/decodeSnowflakeId?snowflakeId=abc');
    assert.equal(bad.status, 200);
    assert.ok('errorMsg' in JSON.parse(bad.body));
    assert.equal((await call(base, '/decodeSnowflakeId')).status, 400);
  });

  it('hands out batches of 1 to 10,000 increasing decimal strings, and 400 for any other count', async () => {
    // One ID, buffered or not, is the batch of one: the same bytes and headers either way.
    const first = await call(base, `/v1/segment/${tag}`);
    assert.match(first.body, /^\{"ids":\["[0-9]+"\]\}$/);
    assert.equal(first.type, 'application/json; charset=utf-8');
    assert.equal(first.headers['content-length'], String(first.body.length));
    const flake = await call(base, '/v1/snowflake');
    assert.match(flake.body, /^\{"ids":\["[0-9]+"\]\}$/);
    assert.equal(flake.type, 'application/json; charset=utf-8');
    assert.equal(flake.headers['content-length'], String(flake.body.length));
    const one = JSON.parse((await call(base, `/v1/segment/${tag}`)).body) as { ids: string[] };
    assert.equal(one.ids.length, 1);
    assert.ok(Number(one.ids[0]) > Number((JSON.parse(first.body) as { ids: string[] }).ids[0]));
    const big = JSON.parse((await call(base, `/v1/segment/${tag}?count=10000`)).body) as { ids: string[] };
    assert.equal(big.ids.length, 10_000);
    const values = big.ids.map(Number);
    for (let i = 1; i < values.length; i++) assert.ok((values[i] as number) > (values[i - 1] as number));
    assert.ok((values[0] as number) > Number(one.ids[0]));
    const flakes = JSON.parse((await call(base, '/v1/snowflake?count=10000')).body) as { ids: string[] };
    const bigints = flakes.ids.map(BigInt);
    for (let i = 1; i < bigints.length; i++) assert.ok((bigints[i] as bigint) > (bigints[i - 1] as bigint));
    for (const count of ['0', '10001', '-1', 'abc', '1.5', '', '99999999999']) {
      const reply = await call(base, `/v1/segment/${tag}?count=${count}`);
      assert.equal(reply.status, 400, count);
      assert.equal(errorOf(reply).code, 'INVALID_COUNT');
      assert.equal((await call(base, `/v1/snowflake?count=${count}`)).status, 400);
    }
  });

  it('grants runs of consecutive IDs with /v1/ranges/{tag}, from the buffer or in one advance for millions', async () => {
    const small = JSON.parse((await call(base, `/v1/ranges/${tag}?count=5`)).body) as RangesBody;
    assert.equal(small.count, 5);
    assert.equal(runsSize(small), 5);
    const big = JSON.parse((await call(base, `/v1/ranges/${tag}?count=5000000`)).body) as RangesBody;
    assert.equal(runsSize(big), 5_000_000);
    assert.ok(BigInt(big.ranges[0]?.start ?? '0') >= BigInt(small.ranges.at(-1)?.end ?? 'x'));
    // Per node, in order: the one-ID routes go on above the grant.
    const after = BigInt((await call(base, `/api/segment/get/${tag}`)).body);
    assert.ok(after >= BigInt(big.ranges.at(-1)?.end ?? 'x'), String(after));
    const one = JSON.parse((await call(base, `/v1/ranges/${tag}`)).body) as RangesBody;
    assert.equal(runsSize(one), 1);
    assert.ok(BigInt(one.ranges[0]?.start ?? '0') > after);
  });

  it('refuses a grant above 100,000,000 with 400, so no client drains a tag, and leaves max_id alone', async () => {
    const before = await maxIdOf(dataDir, tag);
    for (const count of ['100000001', '9223372036854775807', '0', '-5', 'lots', '1e9']) {
      const reply = await call(base, `/v1/ranges/${tag}?count=${count}`);
      assert.equal(reply.status, 400, count);
      assert.equal(errorOf(reply).code, 'INVALID_COUNT');
    }
    assert.equal(await maxIdOf(dataDir, tag), before);
    const limit = JSON.parse((await call(base, `/v1/ranges/${tag}?count=100000000`)).body) as RangesBody;
    assert.equal(runsSize(limit), 100_000_000);
    assert.equal(errorOf(await call(base, '/v1/ranges/no-such-tag?count=5')).code, 'TAG_NOT_FOUND');
  });

  it('decodes with /v1/snowflake/decode/{id} and rejects a bad ID with 400', async () => {
    const id = (await call(base, '/api/snowflake/get/x')).body;
    const body = JSON.parse((await call(base, `/v1/snowflake/decode/${id}`)).body) as Record<string, unknown>;
    assert.equal(body.id, id);
    assert.equal(body.workerId, 42);
    assert.equal(typeof body.timestamp, 'number');
    assert.equal(errorOf(await call(base, '/v1/snowflake/decode/12x')).code, 'INVALID_ID');
  });

  it('serves /healthz, and /cache and /db as HTML with the tag', async () => {
    const health = JSON.parse((await call(base, '/healthz')).body) as {
      status: string;
      version: string;
      snowflake: { workerId: number };
    };
    assert.equal(health.status, 'ok');
    assert.equal(health.version, FROND_VERSION);
    assert.equal(health.snowflake.workerId, 42);
    for (const page of ['/cache', '/db']) {
      const reply = await call(base, page);
      assert.equal(reply.status, 200);
      assert.match(reply.type, /^text\/html/);
      assert.ok(reply.body.includes(tag), page);
    }
  });

  it('answers JSON 404 for an unknown route of its own and 405 for other methods on its own routes', async () => {
    assert.equal(errorOf(await call(base, '/v1/nope')).code, 'NOT_FOUND');
    // Outside frond's API a path is Leaf's server's: Spring Boot's 404 (test/leaf-compat.test.ts).
    const leaf = JSON.parse((await call(base, '/nope')).body) as { status: number; path: string };
    assert.deepEqual([leaf.status, leaf.path], [404, '/nope']);
    const reply = await call(base, '/v1/snowflake', 'POST');
    assert.equal(reply.status, 405);
    assert.equal(errorOf(reply).code, 'METHOD_NOT_ALLOWED');
  });

  it('uses up no ID on HEAD or OPTIONS of the ID routes (issue 16, item 3)', async () => {
    const own = randomTag();
    const store = new SqliteSegmentStore(`${dataDir}/frond.db`);
    await store.addTag({ tag: own, step: 100, start: 1n, description: null });
    await store.close();
    assert.equal((await call(base, `/api/segment/get/${own}`)).body, '1');
    for (const method of ['HEAD', 'OPTIONS', 'HEAD', 'OPTIONS']) {
      const reply = await call(base, `/api/segment/get/${own}`, method);
      assert.equal(reply.status, method === 'HEAD' ? 405 : 204, method);
      assert.match(String(reply.headers.allow), /^GET, POST, PUT, PATCH, DELETE, OPTIONS$/);
    }
    assert.equal((await call(base, `/api/segment/get/${own}`)).body, '2', 'HEAD and OPTIONS took no ID');
    const issued = (await call(base, '/api/snowflake/get/x')).body;
    assert.equal((await call(base, '/api/snowflake/get/x', 'OPTIONS')).status, 204);
    assert.equal((await call(base, '/api/snowflake/get/x', 'HEAD')).status, 405);
    assert.ok(BigInt((await call(base, '/api/snowflake/get/x')).body) > BigInt(issued));
  });

  it('refuses an unknown query parameter with 400 naming it, as an unknown JSON field (item 18)', async () => {
    const reply = await call(base, `/v1/segment/${tag}?cnt=2`);
    assert.equal(reply.status, 400);
    assert.equal(errorOf(reply).code, 'INVALID_ARGUMENT');
    assert.match(errorOf(reply).message, /unknown query parameter "cnt"; this route takes: count, token/);
    assert.equal((await call(base, `/v1/segment/${tag}?count=2`)).status, 200);
    assert.equal((await call(base, '/healthz?x')).status, 400);
  });

  it('answers a malformed request with 400 and keeps serving', async () => {
    const port = new URL(base).port;
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk;
      });
      socket.on('close', () => resolve(text));
    });
    assert.match(answer, /^HTTP\/1\.1 400/);
    assert.equal((await call(base, '/healthz')).status, 200);
  });
});

describe('HTTP API with a mode switched off', () => {
  it('answers 404 MODE_DISABLED instead of Leaf\'s silent "0"', async () => {
    const dataDir = tempDir();
    const server = await startServer(config(dataDir, { segment: false }), silentLogger, systemClock);
    try {
      const reply = await call(server.url, '/v1/segment/abc');
      assert.equal(reply.status, 404);
      assert.equal(errorOf(reply).code, 'MODE_DISABLED');
      // Leaf's endpoint: the same status, in Spring Boot's error shape.
      const leaf = await call(server.url, '/api/segment/get/abc');
      assert.equal(leaf.status, 404);
      assert.match(leaf.body, /"message":"segment mode is off on this node/);
      assert.equal((await call(server.url, '/api/snowflake/get/abc')).status, 200);
    } finally {
      await server.close();
    }
  });
});

describe('HTTP API when the store does not answer', () => {
  it('answers 503 SEGMENT_UNAVAILABLE with Retry-After within the bounded wait, never hangs', async () => {
    const store = new MemoryStore(true);
    store.rows.set('slow', { maxId: 1n, step: 10 });
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
      const started = Date.now();
      const reply = await call(base, '/v1/segment/slow');
      const elapsed = Date.now() - started;
      assert.equal(reply.status, 503);
      assert.equal(reply.headers['retry-after'], '1');
      assert.equal(errorOf(reply).code, 'SEGMENT_UNAVAILABLE');
      assert.ok(elapsed >= 190 && elapsed < 5000, `answered after ${elapsed} ms`);
      // Leaf's endpoint after the same wait: Leaf's "both segments not ready", 500 Result{id=-3}.
      const leaf = await call(base, '/api/segment/get/slow');
      assert.equal(leaf.status, 500);
      assert.match(leaf.body, /"message":"Result\{id=-3, status=EXCEPTION\}"/);
      store.release();
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal((await call(base, '/api/segment/get/slow')).body, '1');
    } finally {
      segment.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
