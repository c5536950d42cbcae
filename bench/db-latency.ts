// Request latency of one `frond serve` node on PostgreSQL and on MariaDB, with the database direct
// and 50 ms away (a TCP proxy adds 50 ms to every round trip). Run from the repository root after
// `npm run build`: `node --import tsx bench/db-latency.ts [seconds]`. Needs the machine's PostgreSQL
// and MariaDB (DEVELOPERS.md); creates and drops a database of its own on each.
//
// Closed loop: CLIENTS keep-alive connections, each sending the next GET /api/segment/get/TAG as soon
// as the last one is answered, so the node runs as fast as this machine lets it and segments run
// out quickly. The tag starts with Leaf's usual step, 1000; the dynamic step then grows. A request
// that waited for a load would be one that got one of the first IDs of a segment (the last column);
// slow requests elsewhere are the machine being busy.
import { existsSync } from 'node:fs';
import { Agent } from 'node:http';
import { cpus } from 'node:os';
import { openStore } from '../src/stores/store-registry.js';
import { startFrond, tempDir } from '../test/support/frond-process.js';
import { httpGet, quantile } from '../test/support/http-get.js';
import { TcpProxy } from '../test/support/tcp-proxy.js';
import { createDatabase, SERVICE_NAME, type ServerDialect } from '../test/support/test-database.js';

const SECONDS = Number(process.argv[2] ?? 5);
const CLIENTS = 8;
const TABLE_STEP = 1_000;
const TAG = 'bench-latency';
const SERVER_PORT: Record<ServerDialect, number> = { postgres: 5432, mysql: 3306 };

interface Row {
  database: string;
  latencyMs: number;
  requests: number;
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  loads: number;
  loadMs: string;
  /** Requests that took at least the added latency: ones that may have waited for the database. */
  slow: number;
  /** Requests that got one of the first CLIENTS IDs of a segment: the only ones a load could stall. */
  atSwitch: number;
  /** Of those, how many took at least the added latency. */
  slowAtSwitch: number;
}

async function run(dialect: ServerDialect, latencyMs: number): Promise<Row> {
  const db = await createDatabase(dialect);
  const proxy = await TcpProxy.start({ port: SERVER_PORT[dialect] });
  proxy.latencyMs = latencyMs;
  const store = openStore(db.url);
  await store.addTag({ tag: TAG, step: TABLE_STEP, start: 1n });
  await store.close();
  const node = await startFrond([
    '--port',
    '0',
    '--data-dir',
    tempDir('frond-db-latency-'),
    '--no-snowflake',
    '--store',
    db.urlVia(proxy.port),
  ]);
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const url = `${node.url}/api/segment/get/${TAG}`;
  try {
    // The first request waits for the first load; it is not part of the figures.
    await httpGet(url, { agent });
    const loadLines = () => node.logs.filter((line) => line.includes('"event":"segment.loaded"'));
    const loadsBefore = loadLines().length;
    const latencies: number[] = [];
    const answered: { id: number; ms: number }[] = [];
    const started = performance.now();
    const stopAt = started + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        // Bounded by time and by count (at most 2 million requests per client).
        for (let i = 0; i < 2_000_000 && performance.now() < stopAt; i++) {
          const sent = performance.now();
          const answer = await httpGet(url, { agent });
          if (answer.status !== 200) throw new Error(`${answer.status} ${answer.body}`);
          const ms = performance.now() - sent;
          latencies.push(ms);
          answered.push({ id: Number(answer.body), ms });
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const loaded = loadLines()
      .slice(loadsBefore)
      .map((line) => JSON.parse(line) as { ms: number; start: number });
    const loadMs = loaded.map((load) => load.ms);
    const switchIds = new Set(
      loaded.flatMap((load) => Array.from({ length: CLIENTS }, (_, k) => load.start + k)),
    );
    const atSwitch = answered.filter((request) => switchIds.has(request.id));
    return {
      database: SERVICE_NAME[dialect],
      latencyMs,
      requests: latencies.length,
      perSecond: Math.round(latencies.length / elapsed),
      p50: quantile(latencies, 0.5),
      p90: quantile(latencies, 0.9),
      p99: quantile(latencies, 0.99),
      p999: quantile(latencies, 0.999),
      max: latencies.at(-1) ?? Number.NaN,
      loads: loadMs.length,
      loadMs: loadMs.length === 0 ? '-' : `${Math.min(...loadMs)}–${Math.max(...loadMs)}`,
      slow: latencyMs === 0 ? 0 : latencies.filter((ms) => ms >= latencyMs).length,
      atSwitch: atSwitch.length,
      slowAtSwitch: latencyMs === 0 ? 0 : atSwitch.filter((request) => request.ms >= latencyMs).length,
    };
  } finally {
    agent.destroy();
    await node.stop('SIGTERM');
    await proxy.close();
    await db.drop();
  }
}

async function main(): Promise<void> {
  if (!existsSync(new URL('../dist/cli/main.js', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run build` first');
  }
  const rows: Row[] = [];
  for (const dialect of ['postgres', 'mysql'] as const) {
    for (const latencyMs of [0, 50]) rows.push(await run(dialect, latencyMs));
  }
  const ms = (value: number) => value.toFixed(2);
  console.log(
    `frond serve, 1 node, ${CLIENTS} closed-loop clients, ${SECONDS} s per row, table step ${TABLE_STEP}; ` +
      `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Node ${process.version}\n`,
  );
  console.log(
    '| database | added latency | requests | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | segment loads | load ms | requests ≥ added latency | at a segment switch: ≥ added latency, of all |',
  );
  console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const r of rows) {
    console.log(
      `| ${r.database} | ${r.latencyMs} ms | ${r.requests} | ${r.perSecond} | ${ms(r.p50)} | ${ms(r.p90)} | ${ms(r.p99)} | ${ms(r.p999)} | ${ms(r.max)} | ${r.loads} | ${r.loadMs} | ${r.latencyMs === 0 ? '-' : r.slow} | ${r.latencyMs === 0 ? '-' : `${r.slowAtSwitch} of ${r.atSwitch}`} |`,
    );
  }
}

await main();
