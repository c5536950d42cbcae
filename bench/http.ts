import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { OpaqueSecret } from '../src/server/opaque/opaque-keys.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { SNOWFLAKE_LIMIT } from './in-process.js';
import { type ChildServer, startFrondServer, startTsServer } from './lib/child-server.js';
import { withCpu } from './lib/cpu.js';
import { type Section, table } from './lib/markdown.js';
import { pacedLoad } from './lib/paced-load.js';
import { alternate } from './lib/rounds.js';
import { saturate } from './lib/saturate.js';
import { countDuplicateStrings, integer, median, ms, percent, si } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

export interface HttpOptions {
  rounds: number;
  /** Seconds of each saturation run. */
  runS: number;
  /** Requests per second of the fixed-rate runs. */
  fixedRate: number;
  fixedS: number;
  /** autocannon connections at saturation. */
  connections: number;
  warmupS: number;
  /** false: the one-ID tables only (bench/http-one-id.ts, for before/after runs); true when absent. */
  batches?: boolean;
}

/** The batch target of the issue: 5 M IDs/s with batches of 1000. */
export const BATCH_TARGET = 5_000_000;
const BATCH = 1000;

interface Target {
  name: string;
  server: ChildServer;
  path: string;
  /** IDs per answer. */
  ids: number;
}

interface Run {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  p999: number;
  max: number;
  errors: number;
  cores: number;
  duplicates: number;
}

export interface HttpSummary {
  bareRps: number;
  leafSegmentRps: number;
  leafSnowflakeRps: number;
  /** Bare's server CPU per request over frond's (1 = as cheap as bare). */
  leafSegmentCpuRatio: number;
  leafSnowflakeCpuRatio: number;
  /** `/v1/segment/bench`, one ID per request: requests/s and bare's CPU per request over its. */
  v1SegmentRps: number;
  v1SegmentCpuRatio: number;
  /** The opaque tag (`digits:11`) at one ID per request, and its requests/s over the plain tag's. */
  opaqueSegmentRps: number;
  opaqueVsPlain: number;
  /** Its server CPU per request over the plain tag's: the cost as the load generator cannot hide it. */
  opaqueCpuVsPlain: number;
  batchSegmentIdsPerSecond: number;
  batchOpaqueIdsPerSecond: number;
  batchSnowflakeIdsPerSecond: number;
  fixedRateDuplicates: number;
  errors: number;
}

/** A data dir with one tag, `bench`, Leaf's default step 1000 (it doubles as traffic comes). */
export async function frondDataDir(tags: string[] = ['bench'], step = 1000): Promise<string> {
  const dir = tempDir();
  const store = new SqliteSegmentStore(join(dir, 'frond.db'));
  for (const tag of tags) await store.addTag({ tag, step, start: 1n });
  await store.close();
  return dir;
}

/** A ratio to bare: `1.08×`. */
const times = (ratio: number) => `${ratio.toFixed(2)}×`;
const medianOf = (runs: readonly Run[], key: keyof Run) => median(runs.map((run) => run[key]));
/** Microseconds of server CPU per answer, the median over the runs. */
const cpuPerRequest = (runs: readonly Run[]) =>
  median(runs.map((run) => (run.cores * 1e6) / run.requestsPerSecond));

async function saturationRun(target: Target, options: HttpOptions): Promise<Run> {
  const { value, cores } = await withCpu(target.server.pid, () =>
    saturate(`${target.server.url}${target.path}`, {
      connections: options.connections,
      durationS: options.runS,
    }),
  );
  return {
    requestsPerSecond: value.requestsPerSecond,
    p50: value.latency.p50,
    p99: value.latency.p99,
    p999: value.latency.p999,
    max: value.latency.max,
    errors: value.errors,
    cores,
    duplicates: 0,
  };
}

async function fixedRun(target: Target, options: HttpOptions): Promise<Run> {
  const { value, cores } = await withCpu(target.server.pid, () =>
    pacedLoad(target.server.url, target.path, {
      rate: options.fixedRate,
      durationMs: options.fixedS * 1000,
      connections: 64,
      keepBodies: true,
    }),
  );
  return {
    requestsPerSecond: value.achievedRate,
    p50: value.latency.p50,
    p99: value.latency.p99,
    p999: value.latency.p999,
    max: value.latency.max,
    errors: value.errors,
    cores,
    duplicates: countDuplicateStrings(value.bodies),
  };
}

/**
 * frond (the real `frond serve`, one process) and a bare node:http server, each in its own process,
 * loaded from this process with autocannon on loopback; targets alternate in every round.
 */
export async function runHttp(options: HttpOptions): Promise<{ sections: Section[]; summary: HttpSummary }> {
  const dataDir = await frondDataDir();
  // An opaque tag beside the plain one, under a secret made for this run.
  const secretHex = randomBytes(32).toString('hex');
  const secret = OpaqueSecret.fromText(secretHex, 'bench');
  const domain = { kind: 'digits', digits: 11 } as const;
  const opaqueStore = new SqliteSegmentStore(join(dataDir, 'frond.db'));
  await opaqueStore.addTag(
    { tag: 'bench-opaque', step: 1000, start: 1n },
    { domain: 'digits:11', keyCheck: secret.keyCheck('bench-opaque', domain) },
  );
  await opaqueStore.close();
  const bare = await startTsServer('bare node:http', 'servers/bare-server.ts');
  const frond = await startFrondServer('frond', ['--port', '0', '--data-dir', dataDir], {
    FROND_OPAQUE_SECRET: secretHex,
  });
  const withBatches = options.batches !== false;
  try {
    const baseline: Target = {
      name: 'bare node:http server (`res.end(String(++n))`)',
      server: bare,
      path: '/',
      ids: 1,
    };
    const single: Target[] = [
      baseline,
      {
        name: 'frond `/api/segment/get/bench` (Leaf)',
        server: frond,
        path: '/api/segment/get/bench',
        ids: 1,
      },
      {
        name: 'frond `/api/snowflake/get/bench` (Leaf)',
        server: frond,
        path: '/api/snowflake/get/bench',
        ids: 1,
      },
      {
        name: 'frond `/api/segment/get/bench-opaque` (Leaf, opaque `digits:11`)',
        server: frond,
        path: '/api/segment/get/bench-opaque',
        ids: 1,
      },
      { name: 'frond `/v1/segment/bench` (one ID)', server: frond, path: '/v1/segment/bench', ids: 1 },
    ];
    const batch: Target[] = [
      baseline,
      {
        name: `frond \`/v1/segment/bench?count=${BATCH}\``,
        server: frond,
        path: `/v1/segment/bench?count=${BATCH}`,
        ids: BATCH,
      },
      {
        name: `frond \`/v1/snowflake?count=${BATCH}\``,
        server: frond,
        path: `/v1/snowflake?count=${BATCH}`,
        ids: BATCH,
      },
      {
        name: `frond \`/v1/segment/bench-opaque?count=${BATCH}\` (opaque)`,
        server: frond,
        path: `/v1/segment/bench-opaque?count=${BATCH}`,
        ids: BATCH,
      },
    ];
    // Warm-up: JIT, connection pools, and the segment step's doubling from 1000 (thrown away).
    if (options.warmupS > 0)
      for (const target of [...single, ...(withBatches ? batch.slice(1) : [])])
        await saturate(`${target.server.url}${target.path}`, {
          connections: options.connections,
          durationS: options.warmupS,
        });

    const saturated = await alternate(single, options.rounds, (target) => saturationRun(target, options));
    const batched = withBatches
      ? await alternate(batch, options.rounds, (target) => saturationRun(target, options))
      : new Map<Target, Run[]>();
    const fixed = await alternate(single, options.rounds, (target) => fixedRun(target, options));

    const rps = (runs: Map<Target, Run[]>, target: Target) =>
      medianOf(runs.get(target) ?? [], 'requestsPerSecond');
    const bareRps = rps(saturated, baseline);
    const errors = [...saturated.values(), ...batched.values(), ...fixed.values()]
      .flat()
      .reduce((sum, run) => sum + run.errors, 0);
    const summary: HttpSummary = {
      bareRps,
      leafSegmentRps: rps(saturated, single[1] as Target),
      leafSnowflakeRps: rps(saturated, single[2] as Target),
      leafSegmentCpuRatio:
        cpuPerRequest(saturated.get(baseline) ?? []) /
        cpuPerRequest(saturated.get(single[1] as Target) ?? []),
      leafSnowflakeCpuRatio:
        cpuPerRequest(saturated.get(baseline) ?? []) /
        cpuPerRequest(saturated.get(single[2] as Target) ?? []),
      v1SegmentRps: rps(saturated, single[4] as Target),
      v1SegmentCpuRatio:
        cpuPerRequest(saturated.get(baseline) ?? []) /
        cpuPerRequest(saturated.get(single[4] as Target) ?? []),
      opaqueSegmentRps: rps(saturated, single[3] as Target),
      opaqueVsPlain: rps(saturated, single[3] as Target) / rps(saturated, single[1] as Target),
      opaqueCpuVsPlain:
        cpuPerRequest(saturated.get(single[3] as Target) ?? []) /
        cpuPerRequest(saturated.get(single[1] as Target) ?? []),
      batchSegmentIdsPerSecond: rps(batched, batch[1] as Target) * BATCH,
      batchOpaqueIdsPerSecond: rps(batched, batch[3] as Target) * BATCH,
      batchSnowflakeIdsPerSecond: rps(batched, batch[2] as Target) * BATCH,
      fixedRateDuplicates: [
        ...(fixed.get(single[1] as Target) ?? []),
        ...(fixed.get(single[2] as Target) ?? []),
        ...(fixed.get(single[3] as Target) ?? []),
        ...(fixed.get(single[4] as Target) ?? []),
      ].reduce((sum, run) => sum + run.duplicates, 0),
      errors,
    };
    const latencyCells = (runs: readonly Run[]) => [
      ms(medianOf(runs, 'p50')),
      ms(medianOf(runs, 'p99')),
      ms(medianOf(runs, 'p999')),
    ];
    const method = `Servers in their own processes, load from the bench process on loopback (2 cores: one for the server, one for the load generator; other processes on the machine share them). Targets alternate in each of ${options.rounds} rounds; each figure is the median over the rounds. Latencies in ms.`;
    const sections: Section[] = [
      {
        title: 'HTTP, one ID per request, at saturation',
        method: `${method} autocannon, ${options.connections} connections, no pipelining, ${options.runS} s per run.`,
        table: table(
          [
            'Target',
            ' Requests/s',
            ' req/s ×bare',
            ' p50',
            ' p99',
            ' p99.9',
            ' Errors',
            ' Server CPU',
            ' CPU µs/request',
            ' CPU per request ×bare',
          ],
          single.map((target) => {
            const runs = saturated.get(target) ?? [];
            return [
              target.name,
              si(medianOf(runs, 'requestsPerSecond')),
              times(medianOf(runs, 'requestsPerSecond') / bareRps),
              ...latencyCells(runs),
              integer(runs.reduce((sum, run) => sum + run.errors, 0)),
              percent(medianOf(runs, 'cores')),
              cpuPerRequest(runs).toFixed(1),
              times(cpuPerRequest(runs) / cpuPerRequest(saturated.get(baseline) ?? [])),
            ];
          }),
        ),
        notes: [
          "Server CPU is the server process's CPU time over the run's wall time (100 % = one core). Below 100 %, the load generator (one JavaScript thread, like the server) set the pace, and requests/s understate the server; CPU µs/request, the server's CPU time per answer, compares the servers whatever the pace (its `×bare` is this one's cost over bare's: 1.00× = as cheap as bare; req/s ×bare is this one's requests/s over bare's).",
        ],
      },
      {
        title: `HTTP, batches of ${BATCH}, at saturation`,
        method: `${method} autocannon, ${options.connections} connections, ${options.runS} s per run. IDs are JSON strings: \`{"ids":["1","2",…]}\`.`,
        table: table(
          [
            'Target',
            ' Requests/s',
            ' IDs/s',
            ' vs 5 M IDs/s',
            ' vs 4,096,000/s',
            ' p50',
            ' p99',
            ' p99.9',
            ' Errors',
            ' Server CPU',
          ],
          batch.map((target) => {
            const runs = batched.get(target) ?? [];
            const idsPerSecond = medianOf(runs, 'requestsPerSecond') * target.ids;
            return [
              target.name,
              si(medianOf(runs, 'requestsPerSecond')),
              si(idsPerSecond),
              percent(idsPerSecond / BATCH_TARGET),
              target.path.startsWith('/v1/snowflake') ? percent(idsPerSecond / SNOWFLAKE_LIMIT) : '–',
              ...latencyCells(runs),
              integer(runs.reduce((sum, run) => sum + run.errors, 0)),
              percent(medianOf(runs, 'cores')),
            ];
          }),
        ),
        notes: [
          'A snowflake worker cannot pass 4,096,000 IDs/s (4096 per ms); `--workers N` gives N worker IDs.',
        ],
      },
      {
        title: `HTTP, one ID per request, at a fixed ${integer(options.fixedRate)} requests/s`,
        method: `${method} An open-loop generator over 64 keep-alive sockets (bench/lib/paced-load.ts): every millisecond it sends the requests due by then (request i at start + i/rate), and a request that finds all 64 connections busy waits with its clock running, so a stall is charged to every request it held up. ${options.fixedS} s per run. Duplicates: among the IDs answered in each run.`,
        table: table(
          [
            'Target',
            ' Achieved req/s',
            ' p50',
            ' p99',
            ' p99.9',
            ' max',
            ' Errors',
            ' Duplicates',
            ' Server CPU',
            ' CPU µs/request',
            ' CPU per request ×bare',
          ],
          single.map((target) => {
            const runs = fixed.get(target) ?? [];
            return [
              target.name,
              si(medianOf(runs, 'requestsPerSecond')),
              ...latencyCells(runs),
              ms(medianOf(runs, 'max')),
              integer(runs.reduce((sum, run) => sum + run.errors, 0)),
              target === baseline ? '–' : integer(runs.reduce((sum, run) => sum + run.duplicates, 0)),
              percent(medianOf(runs, 'cores')),
              cpuPerRequest(runs).toFixed(1),
              times(cpuPerRequest(runs) / cpuPerRequest(fixed.get(baseline) ?? [])),
            ];
          }),
        ),
        notes: [
          'At a fixed rate every server answers the same requests, so CPU µs/request (server CPU time over answers, median of the rounds) is the fair comparison; its ×bare is over bare in the same rounds.',
        ],
      },
    ];
    return { sections: withBatches ? sections : [sections[0] as Section, sections[2] as Section], summary };
  } finally {
    await Promise.all([bare.stop(), frond.stop()]);
  }
}
