import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openStore } from '../src/stores/store-registry.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { httpGet, idsOf, quantile } from './support/http-get.js';
import { TcpProxy } from './support/tcp-proxy.js';
import {
  SERVICE_NAME,
  type ServerDialect,
  type TestDatabase,
  testDatabase,
} from './support/test-database.js';

const SERVER_PORT: Record<ServerDialect, number> = { postgres: 5432, mysql: 3306 };

/**
 * The table as Leaf's users have it. MySQL: Leaf's README DDL, character for character. PostgreSQL
 * has no Leaf DDL; this is a hand-made port, with a plain TIMESTAMP where frond would create a
 * TIMESTAMPTZ, to show that frond takes a table as it finds it.
 */
const LEAF_TABLE: Record<ServerDialect, string> = {
  mysql: `CREATE TABLE \`leaf_alloc\` (
  \`biz_tag\` varchar(128)  NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256)  DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
  postgres: `CREATE TABLE leaf_alloc (
  biz_tag varchar(128) NOT NULL DEFAULT '' PRIMARY KEY,
  max_id bigint NOT NULL DEFAULT 1,
  step int NOT NULL,
  description varchar(256) DEFAULT NULL,
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP
)`,
};

/** The table's definition as the server reports it, to show that frond changed nothing. */
async function tableDefinition(db: TestDatabase): Promise<string> {
  const rows =
    db.dialect === 'mysql'
      ? await db.sql('SHOW CREATE TABLE leaf_alloc')
      : await db.sql(
          `SELECT column_name, data_type, column_default, is_nullable FROM information_schema.columns
           WHERE table_name = 'leaf_alloc' ORDER BY ordinal_position`,
        );
  return JSON.stringify(rows);
}

async function maxIds(db: TestDatabase): Promise<Map<string, number>> {
  const rows = await db.sql('SELECT biz_tag, max_id FROM leaf_alloc');
  return new Map(rows.map((row) => [String(row.biz_tag), Number(row.max_id)]));
}

function insertTag(db: TestDatabase, tag: string, maxId: number, step: number): Promise<unknown> {
  const placeholders = db.dialect === 'mysql' ? '?, ?, ?' : '$1, $2, $3';
  return db.sql(`INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (${placeholders})`, [
    tag,
    maxId,
    step,
  ]);
}

/** Every ID at most once per tag; returns how many were checked. */
function assertUnique(idsByTag: Map<string, number[]>): number {
  let checked = 0;
  for (const [tag, ids] of idsByTag) {
    const seen = new Set<number>();
    for (const id of ids) {
      assert.ok(!seen.has(id), `tag ${tag}: ID ${id} was handed out twice`);
      seen.add(id);
    }
    checked += ids.length;
  }
  return checked;
}

function append(map: Map<string, number[]>, key: string, ids: readonly number[]): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [...ids]);
  else for (const id of ids) list.push(id);
}

/** Polls `url` until it answers 200, for at most `timeoutMs`; resolves with the answer and the wait. */
async function until200(url: string, timeoutMs: number): Promise<{ ids: number[]; waitedMs: number }> {
  const started = performance.now();
  let last = '';
  while (performance.now() - started < timeoutMs) {
    const answer = await httpGet(url, { timeoutMs: 5_000 }).catch((error: Error) => ({
      status: 0,
      body: error.message,
    }));
    if (answer.status === 200) return { ids: idsOf(answer), waitedMs: performance.now() - started };
    last = `${answer.status} ${answer.body}`;
    await sleep(50);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms; last: ${last}`);
}

function nodeArgs(dataDir: string, store: string, extra: string[] = []): string[] {
  return ['--port', '0', '--data-dir', dataDir, '--no-snowflake', '--store', store, ...extra];
}

function loadLines(node: FrondProcess): string[] {
  return node.logs.filter((line) => line.includes('"event":"segment.loaded"'));
}

function errorLines(node: FrondProcess): string[] {
  return [...node.logs.filter((line) => line.includes('"level":"error"')), ...node.stderr];
}

/**
 * Real `frond serve` processes on one real database: many nodes under load with kills, an outage
 * through a TCP proxy, and a database 50 ms away. Written once, run for PostgreSQL and MariaDB.
 */
export function describeDatabaseNodes(dialect: ServerDialect): void {
  const name = SERVICE_NAME[dialect];
  const leafDatabase = testDatabase(dialect);
  const freshDatabase = testDatabase(dialect);
  const brokenDatabase = testDatabase(dialect);
  after(() => Promise.all([leafDatabase.drop(), freshDatabase.drop(), brokenDatabase.drop()]));

  describe(`frond nodes on ${name}`, () => {
    it(`creates the table with 'frond db init', and 'frond tag' adds, lists and changes tags in ${name}`, async (t) => {
      const db = await freshDatabase.open(t);
      if (db === undefined) return;
      // --print needs no connection: port 1 has nothing listening.
      const printed = await runFrond(['db', 'init', '--print', '--store', db.urlVia(1)]);
      assert.equal(printed.code, 0, printed.stderr);
      assert.match(printed.stdout, /CREATE TABLE IF NOT EXISTS .?leaf_alloc/);
      const created = await runFrond(['db', 'init', '--store', db.url]);
      assert.equal(created.code, 0, created.stderr);
      assert.match(created.stdout, /^created leaf_alloc in /);
      const again = await runFrond(['db', 'init', '--store', db.url]);
      assert.match(again.stdout, /left as it was/);

      const added = await runFrond([
        'tag',
        'add',
        'cli-orders',
        '--step',
        '10',
        '--start',
        '9007199254740000',
        '--description',
        'orders',
        '--store',
        db.url,
      ]);
      assert.equal(added.code, 0, added.stderr);
      const twice = await runFrond(['tag', 'add', 'cli-orders', '--store', db.url]);
      assert.equal(twice.code, 1);
      assert.match(twice.stderr, /already exists/);
      const stepped = await runFrond(['tag', 'set-step', 'cli-orders', '20', '--store', db.url]);
      assert.equal(stepped.code, 0, stepped.stderr);
      const listed = await runFrond(['tag', 'list', '--json', '--store', db.url]);
      const rows = JSON.parse(listed.stdout) as {
        tag: string;
        maxId: string;
        step: number;
        description: string;
      }[];
      assert.deepEqual(
        rows.map(({ tag, maxId, step, description }) => ({ tag, maxId, step, description })),
        [{ tag: 'cli-orders', maxId: '9007199254740000', step: 20, description: 'orders' }],
      );
    });

    it(`reports a leaf_alloc without a column it needs in ${name}, and leaves the table alone`, async (t) => {
      const db = await brokenDatabase.open(t);
      if (db === undefined) return;
      await db.sql(
        'CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL PRIMARY KEY, max_id bigint NOT NULL)',
      );
      const before = await tableDefinition(db);
      const listed = await runFrond(['tag', 'list', '--store', db.url]);
      assert.equal(listed.code, 2);
      assert.match(listed.stderr, /leaf_alloc lacks a column .*never alters a table/);
      assert.equal(await tableDefinition(db), before);
    });

    it(`never hands out an ID twice from 3 nodes on Leaf's own table in ${name}, with 2 nodes killed and restarted under load`, async (t) => {
      const db = await leafDatabase.open(t);
      if (db === undefined) return;
      await db.sql(LEAF_TABLE[dialect]);
      // Leaf's sample row as Leaf left it after two segments of 2000: frond goes on from 4001.
      await insertTag(db, 'leaf-segment-test', 4001, 2000);
      // Small steps, capped by --max-step, so that segments run out and load all the time.
      const tags = ['leaf-segment-test', 'orders', 'users', 'events'];
      await insertTag(db, 'orders', 1, 50);
      await insertTag(db, 'users', 1_000_000, 100);
      await insertTag(db, 'events', 1, 200);
      const definition = await tableDefinition(db);

      const NODES = 3;
      const CLIENTS_PER_NODE = 3;
      const LOAD_MS = 4_000;
      const BATCH = 20;
      const dirs = Array.from({ length: NODES }, () => tempDir('frond-node-'));
      const args = (i: number) => nodeArgs(dirs[i] as string, db.url, ['--max-step', '400']);
      const slots = await Promise.all(
        Array.from({ length: NODES }, async (_, i) => ({
          node: await startFrond(args(i)),
          agent: new Agent({ keepAlive: true, maxSockets: CLIENTS_PER_NODE }),
          down: false,
          generation: 0,
          retired: [] as FrondProcess[],
        })),
      );
      const idsByTag = new Map<string, number[]>();
      const failures: string[] = [];
      let requests = 0;
      let orderChecks = 0;
      const stopAt = performance.now() + LOAD_MS;

      const client = async (nodeIndex: number, clientIndex: number) => {
        const slot = slots[nodeIndex] as (typeof slots)[number];
        const last = new Map<string, number>();
        // Bounded in time and in count.
        for (let k = clientIndex; performance.now() < stopAt && k < 100_000; k++) {
          if (slot.down) {
            await sleep(10);
            continue;
          }
          const tag = tags[k % tags.length] as string;
          const path = k % 2 === 0 ? `/api/segment/get/${tag}` : `/v1/segment/${tag}?count=${BATCH}`;
          const generation = slot.generation;
          let ids: number[];
          try {
            const answer = await httpGet(`${slot.node.url}${path}`, { agent: slot.agent, timeoutMs: 5_000 });
            requests++;
            if (answer.status !== 200) {
              failures.push(`node ${nodeIndex}: ${path} answered ${answer.status} ${answer.body}`);
              continue;
            }
            ids = idsOf(answer);
          } catch (error) {
            // A request cut by the SIGKILL is expected; any other failure of a live node is not.
            if (!slot.down && slot.generation === generation)
              failures.push(`node ${nodeIndex}: ${path}: ${(error as Error).message}`);
            continue;
          }
          // Each client sees a tag's IDs strictly increasing, across the restart of its node too.
          for (const id of ids) {
            const previous = last.get(tag) ?? Number.NEGATIVE_INFINITY;
            if (!(id > previous))
              failures.push(`node ${nodeIndex}, client ${clientIndex}: ${tag} ${id} after ${previous}`);
            last.set(tag, id);
            orderChecks++;
          }
          append(idsByTag, tag, ids);
        }
      };

      const killAndRestart = async (nodeIndex: number) => {
        const slot = slots[nodeIndex] as (typeof slots)[number];
        slot.down = true;
        slot.generation++;
        slot.retired.push(slot.node);
        await slot.node.stop('SIGKILL');
        slot.agent.destroy();
        // The same data dir: the pid file the killed process left is taken over.
        slot.node = await startFrond(args(nodeIndex));
        slot.agent = new Agent({ keepAlive: true, maxSockets: CLIENTS_PER_NODE });
        slot.down = false;
      };

      const clients = slots.flatMap((_, n) =>
        Array.from({ length: CLIENTS_PER_NODE }, (_, c) => client(n, c)),
      );
      const kills = (async () => {
        await sleep(LOAD_MS * 0.3);
        await killAndRestart(1);
        await sleep(LOAD_MS * 0.3);
        await killAndRestart(2);
      })();
      let loads = 0;
      try {
        await Promise.all([...clients, kills]);

        // A row inserted by hand is served by every node on its first request (no 60 s wait as in Leaf).
        await insertTag(db, 'by-hand', 7_000, 100);
        const byHand = await httpGet(`${slots[0]?.node.url}/api/segment/get/by-hand`);
        assert.equal(byHand.body, '7000');
        assert.equal((await httpGet(`${slots[2]?.node.url}/api/segment/get/by-hand`)).body, '7100');

        loads = slots
          .flatMap((slot) => [...slot.retired, slot.node])
          .reduce((sum, node) => sum + loadLines(node).length, 0);
        const live = slots.map((slot) => slot.node);
        for (const node of live) assert.deepEqual(errorLines(node), []);
        for (const slot of slots) slot.agent.destroy();
        const exits = await Promise.all(live.map((node) => node.stop('SIGTERM')));
        assert.deepEqual(exits, [0, 0, 0]);
      } finally {
        // Nothing outlives the test, whatever failed above (a no-op for nodes that have stopped).
        await Promise.all(slots.map((slot) => slot.node.stop('SIGKILL')));
      }

      assert.deepEqual(failures.slice(0, 5), []);
      const checked = assertUnique(idsByTag);
      const final = await maxIds(db);
      for (const [tag, ids] of idsByTag) {
        const maxId = final.get(tag) as number;
        for (const id of ids) assert.ok(id < maxId, `${tag}: ID ${id} is not below max_id ${maxId}`);
      }
      for (const id of idsByTag.get('leaf-segment-test') ?? [])
        assert.ok(id >= 4001, 'IDs continue above Leaf’s');
      assert.equal(await tableDefinition(db), definition, 'frond left Leaf’s table as it was');
      // Floors that prove traffic reached every node and segments switched under load, not speeds: a
      // machine with both cores busy checked 4,477 to 11,072 IDs in the 4 s of load (load average 13
      // to 26), and gave 41-58 loads where a quiet one gives 53-78 (a MySQL load is 7 round trips).
      assert.ok(checked > 2_000, `only ${checked} IDs were checked`);
      assert.ok(loads > 25, `only ${loads} segment loads happened`);
      t.diagnostic(
        `${name}: ${checked} IDs on ${tags.length} tags checked unique, ${orderChecks} order checks, ${requests} requests, ${loads} segment loads, ${NODES} nodes, 2 SIGKILLs and restarts, ${LOAD_MS} ms of load`,
      );
    });

    it(`serves buffered IDs while ${name} is away, answers 503 at once for a tag with none, and recovers without a restart`, async (t) => {
      const db = await freshDatabase.open(t);
      if (db === undefined) return;
      const store = openStore(db.url);
      try {
        for (const tag of ['warm', 'cold', 'hung']) await store.addTag({ tag, step: 500, start: 1n });
      } finally {
        await store.close();
      }
      const proxy = await TcpProxy.start({ port: SERVER_PORT[dialect] });
      t.after(() => proxy.close());
      const WAIT_MS = 300;
      const node = await startFrond(
        nodeArgs(
          tempDir('frond-outage-'),
          db.urlVia(proxy.port, 'connect_timeout_ms=1000&query_timeout_ms=1000'),
          ['--segment-wait-ms', String(WAIT_MS), '--max-step', '500'],
        ),
      );
      const served = new Map<string, number[]>();
      try {
        // 100 of the first 500 IDs: past the 10% mark, so the next 500 load in the background.
        append(served, 'warm', (await until200(`${node.url}/v1/segment/warm?count=100`, 5_000)).ids);
        const started = performance.now();
        while (
          !/<td>warm<\/td><td>true<\/td><td>true<\/td>/.test((await httpGet(`${node.url}/cache`)).body)
        ) {
          assert.ok(performance.now() - started < 5_000, 'the next segment of warm did not load');
          await sleep(20);
        }

        proxy.cut();
        const cutAt = performance.now();
        const cold = await httpGet(`${node.url}/v1/segment/cold`);
        const coldMs = performance.now() - cutAt;
        assert.equal(cold.status, 503);
        assert.match(cold.body, /"code":"SEGMENT_UNAVAILABLE"/);
        assert.ok(coldMs < WAIT_MS + 1_000, `a tag with nothing buffered took ${coldMs} ms to answer`);
        // Leaf's endpoint answers it as Leaf did: both segments not ready (SegmentIDGenImpl), -3.
        const leafCold = await httpGet(`${node.url}/api/segment/get/cold`);
        assert.equal(leafCold.status, 500);
        assert.match(leafCold.body, /"message":"Result\{id=-3, status=EXCEPTION\}"/);

        // 10 IDs every 20 ms (500 IDs/s), until the buffered 400 + 500 run out; bounded to 10 s.
        let outageIds = 0;
        let lastStatus = 200;
        let servedForMs = 0;
        for (let round = 0; round < 500 && performance.now() - cutAt < 10_000; round++) {
          const tick = performance.now();
          const answer = await httpGet(`${node.url}/v1/segment/warm?count=10`);
          lastStatus = answer.status;
          if (answer.status !== 200) break;
          const ids = idsOf(answer);
          append(served, 'warm', ids);
          outageIds += ids.length;
          servedForMs = performance.now() - cutAt;
          await sleep(Math.max(0, 20 - (performance.now() - tick)));
        }
        assert.equal(lastStatus, 503);
        assert.equal(outageIds, 900, 'every buffered ID is served during the outage');

        // A database that hangs instead of refusing: the request still ends, after --segment-wait-ms.
        proxy.blackhole();
        const hungAt = performance.now();
        const hung = await httpGet(`${node.url}/v1/segment/hung`);
        const hungMs = performance.now() - hungAt;
        assert.equal(hung.status, 503);
        assert.ok(
          hungMs >= WAIT_MS - 50 && hungMs < WAIT_MS + 1_000,
          `the hung load answered after ${hungMs} ms`,
        );

        proxy.restore();
        const restoredAt = performance.now();
        const recovered = await Promise.all(
          ['warm', 'cold', 'hung'].map(async (tag) => {
            const { ids, waitedMs } = await until200(`${node.url}/v1/segment/${tag}?count=10`, 10_000);
            append(served, tag, ids);
            return waitedMs;
          }),
        );
        const recoveredMs = performance.now() - restoredAt;
        assert.equal(node.child.exitCode, null, 'the node recovered without a restart');
        assert.deepEqual(errorLines(node), []);
        assertUnique(served);
        const warm = served.get('warm') ?? [];
        assert.ok((warm.at(-1) as number) > 1_000, 'after the outage warm goes on above what it handed out');
        t.diagnostic(
          `${name} outage: step 500 at 500 IDs/s, ${outageIds} buffered IDs served for ${Math.round(servedForMs)} ms after the cut; ` +
            `tag with nothing buffered: 503 in ${Math.round(coldMs)} ms (refused), ${Math.round(hungMs)} ms (hung, --segment-wait-ms ${WAIT_MS}); ` +
            `all tags served again ${Math.round(recoveredMs)} ms after the database came back (slowest tag ${Math.round(Math.max(...recovered))} ms)`,
        );
      } finally {
        await node.stop('SIGTERM');
      }
    });

    it(`does not stall requests while the next segment loads from ${name} 50 ms away`, async (t) => {
      const db = await freshDatabase.open(t);
      if (db === undefined) return;
      const store = openStore(db.url);
      try {
        await store.addTag({ tag: 'slow', step: 300, start: 1n });
      } finally {
        await store.close();
      }
      const proxy = await TcpProxy.start({ port: SERVER_PORT[dialect] });
      t.after(() => proxy.close());
      // The step stays 300, so the 10% preload leaves 270 IDs, about 540 ms at 500 IDs/s, for a load:
      // a fenced load is one round trip on PostgreSQL and 7 on MySQL (prepared statements, one value
      // each; no multi-statement batch), about 350 ms at 50 ms a round trip.
      const node = await startFrond(
        nodeArgs(tempDir('frond-slow-'), db.urlVia(proxy.port), ['--max-step', '300']),
      );
      const agent = new Agent({ keepAlive: true, maxSockets: 2 });
      try {
        await until200(`${node.url}/api/segment/get/slow`, 5_000);
        const measure = async (latencyMs: number, durationMs: number) => {
          proxy.latencyMs = latencyMs;
          const loadsBefore = loadLines(node).length;
          const latencies: number[] = [];
          /** Latencies of the requests that got one of the first 2 IDs of a segment. */
          const atSwitch: number[] = [];
          const stopAt = performance.now() + durationMs;
          // 2 clients, one request each every 4 ms: 500 IDs/s, 1.7 segment loads a second.
          await Promise.all(
            [0, 1].map(async () => {
              for (let i = 0; i < 2_000 && performance.now() < stopAt; i++) {
                const sent = performance.now();
                const answer = await httpGet(`${node.url}/api/segment/get/slow`, { agent });
                const took = performance.now() - sent;
                assert.equal(answer.status, 200, answer.body);
                latencies.push(took);
                // Segments are [1, 301), [301, 601), …: only this node loads, and the step stays 300.
                if ((Number(answer.body) - 1) % 300 < 2) atSwitch.push(took);
                await sleep(Math.max(0, 4 - took));
              }
            }),
          );
          latencies.sort((a, b) => a - b);
          const loadMs = loadLines(node)
            .slice(loadsBefore)
            .map((line) => (JSON.parse(line) as { ms: number }).ms);
          return { latencies, atSwitch, loadMs };
        };
        const fast = await measure(0, 1_000);
        const slow = await measure(50, 5_000);
        const loadMs = slow.loadMs;
        assert.ok(loadMs.length >= 4, `only ${loadMs.length} segment loads in 5 s`);
        assert.ok(Math.min(...loadMs) >= 50, 'the loads crossed the 50 ms proxy');
        // Had a request waited for a load, it would be one of those that start a segment, and it
        // would take a 50 ms round trip. One such request may be slow for another reason (a busy
        // machine); a stall would make every one of them slow.
        const stalled = slow.atSwitch.filter((ms) => ms >= 50).length;
        assert.ok(slow.atSwitch.length >= 8, `only ${slow.atSwitch.length} requests started a segment`);
        assert.ok(
          stalled <= 1,
          `${stalled} of ${slow.atSwitch.length} requests at a segment switch took 50 ms or more`,
        );
        const slowRequests = slow.latencies.filter((ms) => ms >= 50).length;
        const figures = (label: string, latencies: number[]) =>
          `${label}: p50 ${quantile(latencies, 0.5).toFixed(2)} ms, p99 ${quantile(latencies, 0.99).toFixed(2)} ms, max ${(latencies.at(-1) ?? 0).toFixed(2)} ms over ${latencies.length} requests`;
        t.diagnostic(
          `${name}: ${figures('direct', fast.latencies)}; ${figures('+50 ms', slow.latencies)}, ${loadMs.length} loads of ${Math.min(...loadMs)}–${Math.max(...loadMs)} ms in the background; ` +
            `${stalled} of ${slow.atSwitch.length} requests at a segment switch and ${slowRequests} in all took 50 ms or more`,
        );
      } finally {
        agent.destroy();
        await node.stop('SIGTERM');
      }
    });
  });
}
