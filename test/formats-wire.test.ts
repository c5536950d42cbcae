// Formatted tags on every route of one in-process node (SQLite), its wall clock set by the test:
// creation and its refusals, Leaf's route, /v1/segment, /v1/ranges, the admin API, the SDK, RESP and
// gRPC. The black-box tests through real processes and midnights are test/formats-*.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createClient } from '../packages/client/src/index.js';
import { type Clock, systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { type RunningServer, startServer } from '../src/server/start/start-server.js';
import { runFrond, tempDir } from './support/frond-process.js';
import { freePort, GrpcTestClient } from './support/grpc-client.js';
import { randomTag } from './support/random-tag.js';
import { testServeConfig } from './support/serve-config.js';

/** The wall clock as the test sets it; timers are real ones. */
class SetClock implements Clock {
  constructor(public time: number) {}
  now(): number {
    return this.time;
  }
  schedule(fn: () => void, ms: number): () => void {
    return systemClock.schedule(fn, ms);
  }
}

async function call(base: string, path: string, init: RequestInit = {}) {
  const response = await fetch(base + path, init);
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {}
  const code = (json.error as { code?: string } | undefined)?.code;
  return { status: response.status, text, json, code, headers: response.headers };
}

const post = (body: unknown): RequestInit => ({
  method: 'POST',
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

describe('formatted tags on every route (in-process, SQLite, a set clock)', () => {
  const clock = new SetClock(Date.parse('2026-12-01T08:00:00Z'));
  let server: RunningServer;
  let base: string;
  let respPort: number;
  let grpcPort: number;
  const numeric = randomTag('numeric');
  const text = randomTag('text');

  before(async () => {
    respPort = await freePort();
    grpcPort = await freePort();
    const dataDir = tempDir();
    server = await startServer(
      testServeConfig(dataDir, { store: `sqlite:${dataDir}/formats.db`, respPort, grpcPort, workerId: 3 }),
      silentLogger,
      clock,
    );
    base = server.url;
    const made = await call(
      base,
      '/v1/tags',
      post({ tag: numeric, format: '{yyyy}{MM}{dd}{seq:6}', timeZone: 'asia/shanghai', step: 50 }),
    );
    assert.equal(made.status, 201, made.text);
    assert.equal(made.json.format, '{yyyy}{MM}{dd}{seq:6}');
    assert.equal(made.json.timeZone, 'Asia/Shanghai', 'the zone in its canonical spelling');
    const second = await call(base, '/v1/tags', post({ tag: text, format: 'ORD-"{yy}"-{seq}' }));
    assert.equal(second.status, 201, second.text);
    assert.equal(second.json.timeZone, 'UTC');
  });

  after(() => server?.close());

  it('refuses bad formats, zones, format with opaque or start, and too long a name: 400 with one line, nothing created', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ format: 'ORD-{yyyy}' }, /\{seq/],
      [{ format: '{yyyy}{ss}{seq:3}' }, /\{ss\}/],
      [{ format: '{yyyy}{seq:6}', timeZone: 'Mars/Olympus' }, /Mars\/Olympus/],
      [{ format: '{yyyy}{seq:6}', opaque: 'bits:40' }, /opaque/],
      [{ format: '{yyyy}{seq:6}', start: 5 }, /start/],
      [{ timeZone: 'UTC' }, /format/],
      [{ format: '{yyyy}{seq:6}', tag: 'x'.repeat(118) }, /117/],
    ];
    for (const [body, message] of cases) {
      const tag = randomTag('bad');
      const refused = await call(base, '/v1/tags', post({ tag, ...body }));
      assert.equal(refused.status, 400, refused.text);
      assert.match((refused.json.error as { message: string }).message, message);
      assert.equal((await call(base, `/v1/tags/${encodeURIComponent(tag)}`)).status, 404);
    }
  });

  it("serves text on Leaf's route, JSON strings on /v1/segment, refuses /v1/ranges with 409 FORMAT_NO_RANGES and decoding with 400", async () => {
    const leaf = await call(base, `/api/segment/get/${numeric}`);
    assert.equal(leaf.status, 200);
    assert.equal(leaf.text, '20261201000001', 'Asia/Shanghai is at 16:00 on 1 December');
    assert.match(leaf.headers.get('content-type') ?? '', /^text\/plain/);
    const batch = await call(base, `/v1/segment/${numeric}?count=3`);
    assert.deepEqual(batch.json, { ids: ['20261201000002', '20261201000003', '20261201000004'] });
    assert.deepEqual((await call(base, `/v1/segment/${numeric}`)).json, { ids: ['20261201000005'] });
    const quoted = await call(base, `/v1/segment/${text}?count=2`);
    assert.deepEqual(quoted.json, { ids: ['ORD-"26"-1', 'ORD-"26"-2'] });
    assert.equal((await call(base, `/api/segment/get/${text}`)).text, 'ORD-"26"-3');
    const ranges = await call(base, `/v1/ranges/${numeric}?count=10`);
    assert.equal(ranges.status, 409, ranges.text);
    assert.equal(ranges.code, 'FORMAT_NO_RANGES');
    const decode = await call(base, `/v1/opaque/decode/${numeric}?id=20261201000001`);
    assert.equal(decode.status, 400, decode.text);
    assert.match(decode.text, /formatted/);
  });

  it('a period used up answers 503 ID_RANGE_EXHAUSTED with Retry-After, Leaf its error; the next hour serves from 1', async () => {
    const tag = randomTag('hourly');
    assert.equal(
      (await call(base, '/v1/tags', post({ tag, format: 'H{yyyy}{MM}{dd}{HH}-{seq:1}', step: 100 }))).status,
      201,
    );
    clock.time = Date.parse('2026-12-01T09:59:30Z');
    assert.deepEqual((await call(base, `/v1/segment/${tag}?count=9`)).json.ids, [
      'H2026120109-1',
      'H2026120109-2',
      'H2026120109-3',
      'H2026120109-4',
      'H2026120109-5',
      'H2026120109-6',
      'H2026120109-7',
      'H2026120109-8',
      'H2026120109-9',
    ]);
    const refused = await call(base, `/v1/segment/${tag}`);
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.code, 'ID_RANGE_EXHAUSTED');
    assert.equal(refused.headers.get('retry-after'), '30');
    const leaf = await call(base, `/api/segment/get/${tag}`);
    assert.equal(leaf.status, 500, leaf.text);
    clock.time = Date.parse('2026-12-01T10:00:00Z');
    assert.equal((await call(base, `/api/segment/get/${tag}`)).text, 'H2026120110-1');
    clock.time = Date.parse('2026-12-01T08:00:00Z');
  });

  it('GET /v1/tags shows the format, zone and counter count and hides the counters', async () => {
    await call(base, `/v1/segment/${numeric}`);
    const listed = await call(base, '/v1/tags');
    const tags = listed.json.tags as { tag: string; format?: string; timeZone?: string; counters?: number }[];
    assert.ok(
      tags.every((row) => !row.tag.includes('\u001f')),
      listed.text.slice(0, 400),
    );
    const row = tags.find((one) => one.tag === numeric);
    assert.deepEqual(
      { format: row?.format, timeZone: row?.timeZone, counters: row?.counters },
      { format: '{yyyy}{MM}{dd}{seq:6}', timeZone: 'Asia/Shanghai', counters: 1 },
    );
    const one = await call(base, `/v1/tags/${numeric}`);
    assert.equal(one.json.format, '{yyyy}{MM}{dd}{seq:6}');
  });

  it("Leaf's /cache and /db pages and /v1/stats leave the counters out", async () => {
    await call(base, `/v1/segment/${numeric}`);
    for (const path of ['/cache', '/db', '/v1/stats']) {
      const page = await call(base, path);
      assert.equal(page.status, 200, path);
      assert.ok(
        !page.text.includes('\u001f') && !page.text.includes('\\u001f'),
        `${path}: ${page.text.slice(0, 300)}`,
      );
    }
    assert.match((await call(base, '/db')).text, new RegExp(numeric));
  });

  it('frond tag add refuses bad formats in one line with exit 2; tag list shows formats and hides counters', async () => {
    const store = `sqlite:${tempDir()}/cli.db`;
    assert.equal((await runFrond(['db', 'init', '--store', store])).code, 0);
    for (const [args, message] of [
      [['--format', '{yyyy}{dd}{seq:3}'], /\{MM\}/],
      [['--format', '{seq:4}', '--time-zone', 'Mars/Olympus'], /Mars\/Olympus/],
      [['--format', '{seq:4}', '--opaque', 'bits:40'], /opaque/],
      [['--time-zone', 'UTC'], /--format/],
    ] as const) {
      const result = await runFrond(['tag', 'add', randomTag('cli'), ...args, '--store', store]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /^frond: /);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, message);
    }
    const tag = randomTag('cli');
    const added = await runFrond([
      'tag',
      'add',
      tag,
      '--format',
      'C{yyyy}-{seq:3}',
      '--time-zone',
      'Europe/Paris',
      '--store',
      store,
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /added formatted tag .*C\{yyyy\}-\{seq:3\} in Europe\/Paris/);
    const listed = await runFrond(['tag', 'list', '--json', '--store', store]);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as { tag: string; format: unknown }[];
    assert.deepEqual(rows.find((row) => row.tag === tag)?.format, {
      format: 'C{yyyy}-{seq:3}',
      timeZone: 'Europe/Paris',
      counters: 0,
    });
    const table = await runFrond(['tag', 'list', '--store', store]);
    assert.match(table.stdout, /FORMAT +ZONE +COUNTERS/);
  });

  it('the SDK answers strings for a formatted tag, falling back from ranges to lists', async () => {
    const tag = randomTag('sdk');
    assert.equal((await call(base, '/v1/tags', post({ tag, format: 'S{yyyy}-{seq:4}' }))).status, 201);
    const ids = createClient({ urls: [base] });
    try {
      const first = (await ids.nextId(tag)) as unknown;
      assert.equal(first, 'S2026-0001');
      const more = (await ids.nextIds(tag, 5)) as unknown[];
      assert.deepEqual(more, ['S2026-0002', 'S2026-0003', 'S2026-0004', 'S2026-0005', 'S2026-0006']);
    } finally {
      ids.close();
    }
  });

  it('RESP answers bulk strings on GET and INCR, an array of them on IDS, and refuses RANGES', async () => {
    const tag = randomTag('resp');
    assert.equal((await call(base, '/v1/tags', post({ tag, format: 'R-{seq:3}' }))).status, 201);
    const redis = new Redis({
      host: '127.0.0.1',
      port: respPort,
      maxRetriesPerRequest: 0,
      lazyConnect: true,
    });
    try {
      await redis.connect();
      assert.equal(await redis.get(tag), 'R-001');
      assert.equal(await redis.call('INCR', tag), 'R-002');
      assert.deepEqual(await redis.call('IDS', tag, '3'), ['R-003', 'R-004', 'R-005']);
      await assert.rejects(redis.call('RANGES', tag, '3'), /^ReplyError: FORMAT_NO_RANGES /);
    } finally {
      redis.disconnect();
    }
  });

  it('gRPC fills text on Next and texts on Batch (ids empty), and refuses Ranges with FORMAT_NO_RANGES', async () => {
    const tag = randomTag('grpc');
    assert.equal((await call(base, '/v1/tags', post({ tag, format: '{yy}{seq:4}' }))).status, 201);
    const client = new GrpcTestClient(`127.0.0.1:${grpcPort}`);
    try {
      const next = await client.ok<{ id: string; text: string }>('Next', { tag });
      assert.deepEqual(next, { id: '0', text: '260001' });
      const batch = await client.ok<{ ids: string[]; texts: string[] }>('Batch', { tag, count: 2 });
      assert.deepEqual(batch, { ids: [], texts: ['260002', '260003'] });
      const ranges = await client.call('Ranges', { tag, count: 2 });
      assert.equal(ranges.frondCode, 'FORMAT_NO_RANGES');
      // A year of {seq:1} used up: UNAVAILABLE (HTTP's 503), the seconds to 2027 in retry-after.
      const small = randomTag('grpc-small');
      assert.equal(
        (await call(base, '/v1/tags', post({ tag: small, format: 'G{yyyy}-{seq:1}' }))).status,
        201,
      );
      assert.equal((await client.ok<{ texts: string[] }>('Batch', { tag: small, count: 9 })).texts.length, 9);
      const used = await client.call('Next', { tag: small });
      assert.equal(used.frondCode, 'ID_RANGE_EXHAUSTED');
      assert.equal(used.error?.code, 14, 'UNAVAILABLE');
      const seconds = (Date.parse('2027-01-01T00:00:00Z') - clock.time) / 1000;
      assert.equal(used.error?.metadata.get('retry-after')[0], String(seconds));
    } finally {
      client.close();
    }
  });
});
