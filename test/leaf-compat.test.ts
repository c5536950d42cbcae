// Leaf's answers are written in the server's time zone; fix it before any date is made.
process.env.TZ = 'Asia/Shanghai';

import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { systemClock } from '../src/core/clock.js';
import { type Logger, silentLogger } from '../src/core/logger.js';
import { type RunningServer, startServer } from '../src/server/start/start-server.js';
import { POSTGRES_DDL } from '../src/stores/postgres/postgres-segment-store.js';
import { SQLITE_DDL } from '../src/stores/sqlite/sqlite-database.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { testServeConfig } from './support/serve-config.js';
import { serviceMissing } from './support/service-gate.js';
import { createDatabase, SERVICE_NAME, type TestDatabase } from './support/test-database.js';

/**
 * Leaf compatibility, issue 12 items 1 (64-bit IDs), 2 (tags), 4 (errors on Leaf's endpoints) and
 * 8 (/decodeSnowflakeId, /cache, /db). A Leaf user's table: on MariaDB made with Leaf's own DDL,
 * word for word (scripts/leaf_alloc.sql in Meituan-Dianping/Leaf), on PostgreSQL and SQLite with its
 * translation (`frond db init --print`); rows are inserted with SQL, as a Leaf user does, and frond
 * serves them in-process over real HTTP. Each expected answer is written from Leaf's source, cited
 * where it is used.
 */

/** scripts/leaf_alloc.sql in Meituan-Dianping/Leaf, as it is. */
const LEAF_ALLOC_SQL = `DROP TABLE IF EXISTS \`leaf_alloc\`;

CREATE TABLE \`leaf_alloc\` (
  \`biz_tag\` varchar(128)  NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256)  DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB;`;

const TOP = 2n ** 63n - 1n;
/** leaf-server/pom.xml: Spring Boot 1.5.18 (Spring 4.3), whose JSON answers carry this type. */
const LEAF_JSON = 'application/json;charset=UTF-8';
/** exception/LeafServerException.java in leaf-server. */
const LEAF_SERVER_EXCEPTION = 'com.sankuai.inf.leaf.server.exception.LeafServerException';

interface Backend {
  name: string;
  /** The `--store` value, after the table is made; rejects when the service is missing. */
  open(): Promise<string>;
  insert(tag: string, maxId: bigint, step: number): Promise<void>;
  maxId(tag: string): Promise<bigint>;
  close(): Promise<void>;
}

function sqliteBackend(): Backend {
  const path = join(tempDir('frond-leaf-compat-'), 'leaf.db');
  const db = new Database(path);
  db.exec(SQLITE_DDL);
  return {
    name: 'SQLite',
    open: async () => `sqlite:${path}`,
    async insert(tag, maxId, step) {
      db.prepare('INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)').run(tag, maxId, step);
    },
    async maxId(tag) {
      const row = db.prepare('SELECT max_id FROM leaf_alloc WHERE biz_tag = ?').safeIntegers(true).get(tag);
      return (row as { max_id: bigint }).max_id;
    },
    async close() {
      db.close();
    },
  };
}

function serverBackend(dialect: 'postgres' | 'mysql'): Backend {
  let db: TestDatabase | undefined;
  const mark = (n: number) => (dialect === 'postgres' ? `$${n}` : '?');
  return {
    name: SERVICE_NAME[dialect],
    async open() {
      const opened = await createDatabase(dialect);
      db = opened;
      if (dialect === 'mysql') {
        await opened.sql(`ALTER DATABASE ${opened.name} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
        for (const statement of LEAF_ALLOC_SQL.split(';').map((s) => s.trim()))
          if (statement !== '') await opened.sql(statement);
      } else {
        await opened.sql(POSTGRES_DDL);
      }
      return opened.url;
    },
    async insert(tag, maxId, step) {
      await db?.sql(
        `INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (${mark(1)}, ${mark(2)}, ${mark(3)})`,
        [tag, maxId.toString(), step],
      );
    },
    async maxId(tag) {
      const rows = (await db?.sql(`SELECT max_id FROM leaf_alloc WHERE biz_tag = ${mark(1)}`, [tag])) ?? [];
      return BigInt(String(rows[0]?.max_id));
    },
    close: async () => {
      await db?.drop();
    },
  };
}

interface Reply {
  status: number;
  type: string;
  body: string;
}

async function get(url: string): Promise<Reply> {
  const response = await fetch(url);
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    body: await response.text(),
  };
}

/**
 * Spring Boot 1.5's DefaultErrorAttributes: timestamp, status, error, exception, message, path, in
 * that order (the keys of the body are compared in order, not only as a set).
 */
function assertSpringError(
  reply: Reply,
  expected: { status: number; error: string; exception?: string; message: string | RegExp; path: string },
): void {
  assert.equal(reply.status, expected.status, reply.body);
  assert.equal(reply.type, LEAF_JSON);
  const body = JSON.parse(reply.body) as Record<string, unknown>;
  const keys = [
    'timestamp',
    'status',
    'error',
    ...(expected.exception ? ['exception'] : []),
    'message',
    'path',
  ];
  assert.deepEqual(Object.keys(body), keys);
  assert.equal(typeof body.timestamp, 'number');
  assert.ok(Math.abs((body.timestamp as number) - Date.now()) < 60_000);
  assert.equal(body.status, expected.status);
  assert.equal(body.error, expected.error);
  if (expected.exception) assert.equal(body.exception, expected.exception);
  if (typeof expected.message === 'string') assert.equal(body.message, expected.message);
  else assert.match(String(body.message), expected.message);
  assert.equal(body.path, expected.path);
}

/** The cells of the `/cache` or `/db` row whose first cell is `tag`. */
function rowOf(html: string, tag: string): string[] | undefined {
  for (const row of html.match(/<tr>.*?<\/tr>/g) ?? []) {
    const cells = [...row.matchAll(/<td>(.*?)<\/td>/g)].map((m) => m[1] as string);
    if (cells[0] === tag) return cells;
  }
  return undefined;
}

const warnings: { event: string; fields: Record<string, unknown> | undefined }[] = [];
const logger: Logger = {
  log(level, event, fields) {
    if (level === 'warn') warnings.push({ event, fields });
  },
};

for (const make of [sqliteBackend, () => serverBackend('postgres'), () => serverBackend('mysql')]) {
  const backend = make();
  describe(`Leaf compatibility on ${backend.name}, Leaf's table`, () => {
    let server: RunningServer | undefined;
    let base = '';
    const tags = {
      big: randomTag('big'),
      high: randomTag('high'),
      top: randomTag('top'),
      negative: randomTag('neg'),
      cache: randomTag('cache'),
      db: randomTag('db'),
    };
    // Item 2: every name Leaf serves (Spring URL-decodes the path; biz_tag is varchar(128)).
    const named = ['订单', 'order tag', 'order@v2', 'a~b', 'a,b', 'a:b', 'a/b', 'é'.repeat(128)].map(
      (name, i) => `${name}${i}`.slice(0, 128),
    );
    const unservable = `bad\t${randomTag()}`;

    let missing: string | undefined;

    before(async () => {
      let store: string;
      try {
        store = await backend.open();
      } catch (error) {
        // Each test then fails in CI, or is skipped on a laptop (service-gate.ts).
        missing = (error as Error).message;
        return;
      }
      await backend.insert(tags.big, 10n ** 16n, 1000);
      await backend.insert(tags.high, 2n ** 62n + 5n, 100);
      await backend.insert(tags.top, TOP - 15n, 10);
      await backend.insert(tags.negative, -1000n, 10);
      await backend.insert(tags.cache, 1n, 10);
      await backend.insert(tags.db, 7n, 10);
      for (const [i, name] of named.entries()) await backend.insert(name, BigInt(100 * (i + 1)), 10);
      await backend.insert(unservable, 1n, 10);
      server = await startServer(
        { ...testServeConfig(tempDir(), { workerId: 39 }), store, segmentWaitMs: 500 },
        logger,
        systemClock,
      );
      base = server.url;
    });

    after(async () => {
      await server?.close();
      await backend.close();
    });

    const live = async (t: TestContext) => {
      if (missing !== undefined) serviceMissing(t, backend.name, missing);
      return server !== undefined;
    };

    it('item 1: serves IDs above 2^53 exactly, as Leaf (a Java long, String.valueOf in LeafController)', async (t) => {
      if (!(await live(t))) return;
      const first = await get(`${base}/api/segment/get/${tags.big}`);
      assert.equal(first.status, 200);
      assert.equal(first.type, 'text/plain;charset=UTF-8');
      assert.equal(first.body, '10000000000000000');
      const batch = JSON.parse((await get(`${base}/v1/segment/${tags.big}?count=3`)).body) as {
        ids: string[];
      };
      assert.deepEqual(batch.ids, ['10000000000000001', '10000000000000002', '10000000000000003']);
      const high = await get(`${base}/api/segment/get/${tags.high}`);
      assert.equal(high.body, (2n ** 62n + 5n).toString());
      const negative = await get(`${base}/api/segment/get/${tags.negative}`);
      assert.equal(negative.body, '-1000');
    });

    it('item 1: near 2^63 - 1 serves the last IDs, then refuses without consuming the table', async (t) => {
      if (!(await live(t))) return;
      // [TOP - 15, TOP - 5): ten IDs; the next range of 10 would pass TOP.
      for (let i = 15n; i > 5n; i--) {
        assert.equal((await get(`${base}/api/segment/get/${tags.top}`)).body, (TOP - i).toString());
      }
      for (let i = 0; i < 3; i++) {
        // Leaf: the UPDATE fails ("BIGINT value is out of range"), both segments stay empty: -3.
        assertSpringError(await get(`${base}/api/segment/get/${tags.top}`), {
          status: 500,
          error: 'Internal Server Error',
          exception: LEAF_SERVER_EXCEPTION,
          message: 'Result{id=-3, status=EXCEPTION}',
          path: `/api/segment/get/${tags.top}`,
        });
      }
      const v1 = await get(`${base}/v1/segment/${tags.top}`);
      assert.equal(v1.status, 500);
      assert.equal((JSON.parse(v1.body) as { error: { code: string } }).error.code, 'ID_RANGE_EXHAUSTED');
      assert.equal(await backend.maxId(tags.top), TOP - 5n, 'every refused try left max_id as it was');
    });

    it('item 2: serves every tag Leaf serves, percent-decoded from the path, on both APIs', async (t) => {
      if (!(await live(t))) return;
      for (const [i, name] of named.entries()) {
        const leaf = await get(`${base}/api/segment/get/${encodeURIComponent(name)}`);
        assert.equal(leaf.status, 200, `${name}: ${leaf.body}`);
        assert.equal(leaf.body, String(100 * (i + 1)), name);
        const v1 = JSON.parse((await get(`${base}/v1/segment/${encodeURIComponent(name)}?count=2`)).body);
        assert.deepEqual(v1.ids, [String(100 * (i + 1) + 1), String(100 * (i + 1) + 2)], name);
      }
      // The issue's own spellings: %E8%AE%A2%E5%8D%95 is 订单, %20 a space.
      assert.equal((await get(`${base}/api/segment/get/%E8%AE%A2%E5%8D%950`)).body, '103');
      assert.equal((await get(`${base}/api/segment/get/order%20tag1`)).body, '203');
      assert.equal((await get(`${base}/api/segment/get/order@v22`)).body, '303');
    });

    it('item 2: refuses only what cannot be a tag (400 INVALID_TAG on /v1), and names a bad row at load', async (t) => {
      if (!(await live(t))) return;
      for (const bad of ['x'.repeat(129), '%00', 'a%09b', '%ZZ', '%C3%28']) {
        const reply = await get(`${base}/v1/segment/${bad}`);
        assert.equal(reply.status, 400, bad);
        assert.equal((JSON.parse(reply.body) as { error: { code: string } }).error.code, 'INVALID_TAG');
      }
      const reported = warnings.filter(
        (w) => w.event === 'segment.tag_unservable' && w.fields?.tag === unservable,
      );
      assert.equal(reported.length, 1, 'the row with a tab in its tag is named once, when the list loads');
    });

    it("item 4: answers an unknown tag as Leaf: 500, Result{id=-2, status=EXCEPTION} in Spring Boot's error", async (t) => {
      if (!(await live(t))) return;
      // SegmentIDGenImpl.get: a key not in the cache is EXCEPTION_ID_KEY_NOT_EXISTS (-2);
      // LeafController.get throws LeafServerException(result.toString()).
      const tag = randomTag('missing');
      assertSpringError(await get(`${base}/api/segment/get/${tag}`), {
        status: 500,
        error: 'Internal Server Error',
        exception: LEAF_SERVER_EXCEPTION,
        message: 'Result{id=-2, status=EXCEPTION}',
        path: `/api/segment/get/${tag}`,
      });
      // A name no row can have is a key Leaf's cache does not hold either: -2, the path as sent.
      assertSpringError(await get(`${base}/api/segment/get/a%09b`), {
        status: 500,
        error: 'Internal Server Error',
        exception: LEAF_SERVER_EXCEPTION,
        message: 'Result{id=-2, status=EXCEPTION}',
        path: '/api/segment/get/a%09b',
      });
      // No key: Spring routes nothing, 404 with Spring's default message and no exception.
      assertSpringError(await get(`${base}/api/segment/get/`), {
        status: 404,
        error: 'Not Found',
        message: 'No message available',
        path: '/api/segment/get/',
      });
      // frond's own API keeps frond's errors.
      const v1 = await get(`${base}/v1/segment/${tag}`);
      assert.equal(v1.status, 404);
      assert.deepEqual(Object.keys(JSON.parse(v1.body)), ['error']);
    });

    it('item 8: /decodeSnowflakeId byte for byte as LeafMonitorController.decodeSnowflakeId', async (t) => {
      if (!(await live(t))) return;
      // The controller's own example: 1567733700834(2019-09-06 09:35:00.834), worker 39, sequence
      // 3448 (Asia/Shanghai); keys in the order its HashMap serializes them.
      const id = ((1567733700834n - 1288834974657n) << 22n) | (39n << 12n) | 3448n;
      const expected =
        '{"workerId":"39","sequenceId":"3448","timestamp":"1567733700834(2019-09-06 09:35:00.834)"}';
      for (const text of [id.toString(), `000${id}`, `%2B${id}`]) {
        const reply = await get(`${base}/decodeSnowflakeId?snowflakeId=${text}`);
        assert.equal(reply.status, 200);
        assert.equal(reply.type, LEAF_JSON);
        assert.equal(reply.body, expected, text);
      }
      // Long.parseLong("-5") = -5; Java's >> is arithmetic: (-5 >> 22) + epoch, workerId 1023, sequence 4091.
      assert.equal(
        (await get(`${base}/decodeSnowflakeId?snowflakeId=-5`)).body,
        '{"workerId":"1023","sequenceId":"4091","timestamp":"1288834974656(2010-11-04 09:42:54.656)"}',
      );
      // NumberFormatException: 200 with errorMsg. `+5` in a query is " 5" (a plus is a space there).
      for (const text of ['abc', '', '+5', '9223372036854775808', '1e3', '5%20']) {
        const reply = await get(`${base}/decodeSnowflakeId?snowflakeId=${text}`);
        assert.equal(reply.status, 200, text);
        assert.equal(reply.type, LEAF_JSON);
        assert.equal(reply.body, '{"errorMsg":"snowflake Id反解析发生异常!"}', text);
      }
      // @RequestParam("snowflakeId") is required: Spring's 400.
      assertSpringError(await get(`${base}/decodeSnowflakeId`), {
        status: 400,
        error: 'Bad Request',
        exception: 'org.springframework.web.bind.MissingServletRequestParameterException',
        message: "Required String parameter 'snowflakeId' is not present",
        path: '/decodeSnowflakeId',
      });
    });

    it("item 8: /cache shows Leaf's columns first and pos as Leaf's SegmentBuffer.currentPos", async (t) => {
      if (!(await live(t))) return;
      // templates/segment.ftl: name init next pos value0 max0 step0 value1 max1 step1.
      const headers = [...(await get(`${base}/cache`)).body.matchAll(/<th>(.*?)<\/th>/g)].map((m) => m[1]);
      assert.deepEqual(headers.slice(0, 10), [
        'name',
        'init',
        'next',
        'pos',
        'value0',
        'max0',
        'step0',
        'value1',
        'max1',
        'step1',
      ]);
      // Before its first request a tag of the table shows Leaf's empty buffer.
      assert.deepEqual(rowOf((await get(`${base}/cache`)).body, tags.cache)?.slice(0, 10), [
        tags.cache,
        'false',
        'false',
        '0',
        '0',
        '0',
        '0',
        '0',
        '0',
        '0',
      ]);
      // 15 IDs of step 10: [1, 11) filled slot 0, [11, 21) slot 1, now in use (pos 1); at 10 % of
      // it the third segment (step 20: used in under 15 minutes) loads into slot 0.
      for (let i = 1; i <= 15; i++)
        assert.equal((await get(`${base}/api/segment/get/${tags.cache}`)).body, String(i));
      let row: string[] | undefined;
      for (let wait = 0; wait < 50; wait++) {
        row = rowOf((await get(`${base}/cache`)).body, tags.cache);
        if (row?.[2] === 'true') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.deepEqual(row?.slice(0, 10), [
        tags.cache,
        'true',
        'true',
        '1',
        '21',
        '41',
        '20',
        '16',
        '21',
        '10',
      ]);
      // IDs above 2^53 are shown exactly.
      const high = rowOf((await get(`${base}/cache`)).body, tags.high);
      assert.equal(high?.[5], (2n ** 62n + 105n).toString());
    });

    it("item 8: /db shows update_time as Leaf (Connector/J 5.1's Timestamp.toString)", async (t) => {
      if (!(await live(t))) return;
      const html = (await get(`${base}/db`)).body;
      // templates/db.ftl: tag max step update.
      assert.deepEqual(
        [...html.matchAll(/<th>(.*?)<\/th>/g)].map((m) => m[1]),
        ['tag', 'max', 'step', 'update'],
      );
      const row = rowOf(html, tags.db);
      assert.equal(row?.[1], '7');
      assert.equal(row?.[2], '10');
      assert.match(row?.[3] ?? '', /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{1,3}$/);
      // update_time is seconds in MariaDB and SQLite: `.0`, as java.sql.Timestamp writes it.
      if (backend.name !== 'PostgreSQL') assert.match(row?.[3] ?? '', /\.0$/);
      const top = rowOf(html, tags.top);
      assert.equal(top?.[1], (TOP - 5n).toString());
    });
  });
}

describe("Leaf's error body and the node's clock", () => {
  it("stamps Spring Boot's `timestamp` with the clock the node runs on, not the system's", async (t) => {
    // A clock a day ahead of the system's: the body must follow it, as the node's IDs do.
    const DAY_MS = 86_400_000;
    const ahead = { ...systemClock, now: () => Date.now() + DAY_MS };
    const server = await startServer(testServeConfig(tempDir()), silentLogger, ahead);
    t.after(() => server.close());
    const reply = await get(`${server.url}/api/segment/get/${randomTag()}`);
    assert.equal(reply.status, 500, reply.body);
    const { timestamp } = JSON.parse(reply.body) as { timestamp: number };
    assert.ok(Math.abs(timestamp - (Date.now() + DAY_MS)) < 60_000, `timestamp ${timestamp}`);
  });
});

/** One request of any method, TRACE included (fetch refuses to send TRACE), with its headers. */
function send(method: string, url: string): Promise<Reply & { headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          type: String(res.headers['content-type'] ?? ''),
          body,
          headers: res.headers,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe("Leaf's paths as Spring MVC 4.3 on Tomcat 8.5 matched them", () => {
  // leaf-server/pom.xml: Spring Boot 1.5.18, which brings Spring 4.3.21 and Tomcat 8.5.35.
  // LeafController: @RequestMapping("/api/segment/get/{key}") and ("/api/snowflake/get/{key}");
  // LeafMonitorController: @RequestMapping "cache", "db" and "decodeSnowflakeId". None names a method.
  const backend = sqliteBackend();
  const tags = { order: randomTag('order'), short: randomTag('p'), semicolon: '' };
  tags.semicolon = `${tags.short};v2`;
  let server: RunningServer;
  let base = '';

  before(async () => {
    const store = await backend.open();
    await backend.insert(tags.order, 100n, 10);
    await backend.insert(tags.short, 500n, 10);
    await backend.insert(tags.semicolon, 900n, 10);
    server = await startServer(
      { ...testServeConfig(tempDir(), { workerId: 7 }), store },
      silentLogger,
      systemClock,
    );
    base = server.url;
  });

  after(async () => {
    await server?.close();
    await backend.close();
  });

  it('ignores a trailing slash on every Leaf route (PatternsRequestCondition, useTrailingSlashMatch)', async () => {
    assert.equal((await get(`${base}/api/segment/get/${tags.order}/`)).body, '100');
    for (const path of ['/cache/', '/db/']) {
      const reply = await get(`${base}${path}`);
      assert.equal(reply.status, 200, path);
      assert.equal(reply.type, 'text/html; charset=utf-8', path);
      assert.match(reply.body, /<table/, path);
    }
    const decoded = await get(`${base}/decodeSnowflakeId/?snowflakeId=5`);
    assert.equal(decoded.status, 200);
    assert.equal(decoded.body, (await get(`${base}/decodeSnowflakeId?snowflakeId=5`)).body);
    // `//` is one `/` (UrlPathHelper.getSanitizedPath).
    assert.equal((await get(`${base}//api/segment/get//${tags.order}`)).body, '101');
    assert.equal((await get(`${base}//cache//`)).status, 200);
  });

  it('drops ;path parameters before matching, as UrlPathHelper.removeSemicolonContent: a;b is the tag a', async () => {
    assert.equal((await get(`${base}/api/segment/get/${tags.order};jsessionid=1`)).body, '102');
    // @PathVariable("key") of /api/segment/get/P;v2 is P: the `;v2` never reaches the controller.
    assert.equal((await get(`${base}/api/segment/get/${tags.semicolon}`)).body, '500');
    assert.equal((await get(`${base}/api/segment/get/${tags.short};a=1;b=2/`)).body, '501');
    // An encoded %3B is not a path parameter: the tag with a `;` in it.
    assert.equal((await get(`${base}/api/segment/get/${encodeURIComponent(tags.semicolon)}`)).body, '900');
    assert.equal((await get(`${base}/cache;jsessionid=0123`)).status, 200);
    assert.equal((await get(`${base}/decodeSnowflakeId;x?snowflakeId=5`)).status, 200);
    // Only a path parameter left: no key, Spring's 404 with the path as it was sent.
    assertSpringError(await get(`${base}/api/segment/get/;jsessionid=1`), {
      status: 404,
      error: 'Not Found',
      message: 'No message available',
      path: '/api/segment/get/;jsessionid=1',
    });
  });

  it('takes one path segment as the key, as AntPathMatcher matches {key}: /a/b is a 404', async () => {
    for (const path of [`/api/segment/get/${tags.order}/x`, '/api/snowflake/get/a/b', '/cache/x']) {
      assertSpringError(await get(`${base}${path}`), {
        status: 404,
        error: 'Not Found',
        message: 'No message available',
        path,
      });
    }
  });

  it("refuses TRACE as Tomcat 8.5 (allowTrace=false): 405, the servlet's methods in Allow, no body, no ID used", async () => {
    // CoyoteAdapter.postParseRequest answers before any servlet: no Spring body, no content type.
    for (const path of [`/api/segment/get/${tags.order}`, '/api/snowflake/get/a', '/cache', '/nope']) {
      const reply = await send('TRACE', `${base}${path}`);
      assert.equal(reply.status, 405, path);
      assert.equal(reply.headers.allow, 'HEAD, DELETE, POST, GET, OPTIONS, PUT', path);
      assert.equal(reply.headers['content-length'], '0', path);
      assert.equal(reply.headers['content-type'], undefined, path);
      assert.equal(reply.body, '', path);
    }
    assert.equal((await get(`${base}/api/segment/get/${tags.order}`)).body, '103', 'TRACE used up no ID');
    // frond's own API answers its own 405.
    const own = await send('TRACE', `${base}/v1/segment/${tags.order}`);
    assert.equal(own.status, 405);
    assert.equal((JSON.parse(own.body) as { error: { code: string } }).error.code, 'METHOD_NOT_ALLOWED');
  });

  it("answers a path outside frond's API with Spring Boot's 404 (BasicErrorController), frond's JSON under /v1 and its operator paths", async () => {
    // Spring Boot's `/**` resource handler answers 404 before it looks at the method
    // (ResourceHttpRequestHandler.handleRequest), so POST and DELETE get the same body.
    for (const [method, path] of [
      ['GET', '/x'],
      ['POST', '/x'],
      ['DELETE', '/api/segment'],
      ['GET', '/'],
      ['GET', '/metricsx'],
    ] as const) {
      const reply = await send(method, `${base}${path}`);
      assertSpringError(reply, {
        status: 404,
        error: 'Not Found',
        message: 'No message available',
        path,
      });
    }
    for (const path of ['/v1/nope', '/v1', '/healthz/x', '/readyz/', '/metrics/x', '/dashboard/x']) {
      const reply = await get(`${base}${path}`);
      assert.equal(reply.status, 404, path);
      assert.equal((JSON.parse(reply.body) as { error: { code: string } }).error.code, 'NOT_FOUND', path);
    }
  });
});
