import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { GrpcLoadOptions, GrpcLoadResult } from './grpc-load.js';
import { frondDataDir } from './http.js';
import { type ChildServer, startFrondServer } from './lib/child-server.js';
import { cpuSeconds, withCpu } from './lib/cpu.js';
import { freePort } from './lib/free-port.js';
import { type Section, table } from './lib/markdown.js';
import { alternate } from './lib/rounds.js';
import { saturate } from './lib/saturate.js';
import { countDuplicateStrings, integer, median, ms, percent, si } from './lib/stats.js';

export interface GrpcBenchOptions {
  rounds: number;
  /** Seconds of each run. */
  runS: number;
  warmupS: number;
  /** autocannon connections for the HTTP targets. */
  connections: number;
  /** The gRPC load client's connections, and unary calls in flight on each. */
  channels: number;
  inFlight: number;
  /** Load client processes. */
  processes: number;
}

const BATCH = 1000;
const LOAD_CLIENT = new URL('grpc-load.ts', import.meta.url).pathname;

interface Run {
  callsPerSecond: number;
  idsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  duplicates: number;
  /** Cores of server CPU over the run (1 = one core busy). */
  cores: number;
}

interface Target {
  name: string;
  /** The HTTP/gRPC pair it is compared with shares a `pair`. */
  pair: string;
  protocol: 'HTTP' | 'gRPC';
  ids: number;
  run(server: ChildServer, grpcAddress: string, options: GrpcBenchOptions): Promise<Run>;
}

export interface GrpcBenchSummary {
  /** gRPC one-ID calls/s over HTTP one-ID requests/s (segment, `Next` vs `/api/segment/get`). */
  nextVsHttp: number;
  grpcNextCallsPerSecond: number;
  httpSegmentRps: number;
  /** Server CPU µs per ID, gRPC `Next` and HTTP `/api/segment/get`. */
  grpcNextCpuUsPerId: number;
  httpSegmentCpuUsPerId: number;
  batchVsHttp: number;
  duplicates: number;
  errors: number;
}

function httpTarget(name: string, pair: string, path: string, ids: number): Target {
  return {
    name,
    pair,
    protocol: 'HTTP',
    ids,
    async run(server, _address, options) {
      const { value, cores } = await withCpu(server.pid, () =>
        saturate(`${server.url}${path}`, { connections: options.connections, durationS: options.runS }),
      );
      return {
        callsPerSecond: value.requestsPerSecond,
        idsPerSecond: value.requestsPerSecond * ids,
        p50: value.latency.p50,
        p99: value.latency.p99,
        errors: value.errors,
        duplicates: 0,
        cores,
      };
    },
  };
}

function grpcTarget(
  name: string,
  pair: string,
  method: GrpcLoadOptions['method'],
  request: Record<string, unknown>,
  ids: number,
): Target {
  return {
    name,
    pair,
    protocol: 'gRPC',
    ids,
    async run(server, address, options) {
      const result = await grpcLoad(
        server.pid,
        {
          address,
          method,
          request,
          channels: options.channels,
          inFlight: options.inFlight,
          durationMs: options.runS * 1000,
          warmupMs: 0,
        },
        options.processes,
      );
      return {
        callsPerSecond: result.calls / result.seconds,
        idsPerSecond: result.ids / result.seconds,
        p50: result.latency.p50,
        p99: result.latency.p99,
        errors: result.errors,
        duplicates: result.duplicates,
        cores: result.cores,
      };
    },
  };
}

/**
 * `processes` load clients, each in its own process (bench/grpc-load.ts; grpc-js's client costs
 * more CPU a call than the server, so one JavaScript thread of it cannot keep the server busy).
 * They start together once all are connected; the server's CPU is read from then to the last result.
 */
async function grpcLoad(
  pid: number,
  options: GrpcLoadOptions,
  processes: number,
): Promise<GrpcLoadResult & { cores: number }> {
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, ['--import', 'tsx', LOAD_CLIENT, JSON.stringify(options)], {
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
  const timer = setTimeout(
    () => {
      for (const child of children) child.kill('SIGKILL');
    },
    options.durationMs + options.warmupMs + 90_000,
  );
  try {
    const ready: Promise<void>[] = [];
    const results = children.map((child) => {
      let stderr = '';
      child.stderr?.on('data', (chunk) => {
        stderr += chunk;
      });
      let markReady: () => void = () => {};
      ready.push(new Promise<void>((resolve) => (markReady = resolve)));
      return new Promise<GrpcLoadResult>((resolve, reject) => {
        createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
          if (line.includes('"ready"')) markReady();
          else resolve(JSON.parse(line) as GrpcLoadResult);
        });
        child.once('exit', (code) => reject(new Error(`a gRPC load client exited with ${code}:\n${stderr}`)));
      });
    });
    // A client that dies before it is ready fails the run rather than hang it.
    await Promise.race([Promise.all(ready), Promise.all(results)]);
    const cpuStart = cpuSeconds(pid);
    const wallStart = performance.now();
    for (const child of children) child.stdin?.write('go\n');
    const all = await Promise.all(results);
    const cores = (cpuSeconds(pid) - cpuStart) / ((performance.now() - wallStart) / 1000);
    const sum = (key: 'calls' | 'ids' | 'errors') => all.reduce((total, one) => total + one[key], 0);
    return {
      calls: sum('calls'),
      ids: sum('ids'),
      errors: sum('errors'),
      // Across all the processes: every ID any of them received.
      duplicates: countDuplicateStrings(all.flatMap((one) => one.seen)),
      seen: [],
      seconds: Math.max(...all.map((one) => one.seconds)),
      latency: (all[0] as GrpcLoadResult).latency,
      cores,
    };
  } finally {
    clearTimeout(timer);
  }
}

const medianOf = (runs: readonly Run[], key: keyof Run) => median(runs.map((run) => run[key]));
/** Microseconds of server CPU per ID, the median over the runs. */
const cpuPerId = (runs: readonly Run[]) => median(runs.map((run) => (run.cores * 1e6) / run.idsPerSecond));

/**
 * One `frond serve` with `--grpc-port`, loaded over HTTP (autocannon, from this process) and over
 * gRPC (load clients in processes of their own) in alternation: the same tag, the same issuer, the same
 * run, so the ratio shows what the protocol costs.
 */
export async function runGrpc(
  options: GrpcBenchOptions,
): Promise<{ section: Section; summary: GrpcBenchSummary }> {
  const dataDir = await frondDataDir();
  const grpcPort = await freePort();
  const frond = await startFrondServer('frond', [
    '--port',
    '0',
    '--host',
    '127.0.0.1',
    '--grpc-port',
    String(grpcPort),
    '--data-dir',
    dataDir,
  ]);
  const address = `127.0.0.1:${grpcPort}`;
  const targets: Target[] = [
    httpTarget('HTTP `/api/segment/get/bench` (Leaf)', 'segment', '/api/segment/get/bench', 1),
    grpcTarget('gRPC `Next{tag: bench}`', 'segment', 'Next', { tag: 'bench' }, 1),
    httpTarget('HTTP `/api/snowflake/get/bench` (Leaf)', 'snowflake', '/api/snowflake/get/bench', 1),
    grpcTarget('gRPC `Snowflake{count: 1}`', 'snowflake', 'Snowflake', { count: 1 }, 1),
    httpTarget(
      `HTTP \`/v1/segment/bench?count=${BATCH}\``,
      'batch',
      `/v1/segment/bench?count=${BATCH}`,
      BATCH,
    ),
    grpcTarget(
      `gRPC \`Batch{tag: bench, count: ${BATCH}}\``,
      'batch',
      'Batch',
      { tag: 'bench', count: BATCH },
      BATCH,
    ),
  ];
  try {
    // Warm-up: JIT, and the segment step's doubling from 1000 (thrown away).
    if (options.warmupS > 0)
      for (const target of targets) await target.run(frond, address, { ...options, runS: options.warmupS });
    const results = await alternate(targets, options.rounds, (target) => target.run(frond, address, options));
    const runsOf = (target: Target) => results.get(target) ?? [];
    const partner = (target: Target) =>
      targets.find((other) => other.pair === target.pair && other.protocol === 'HTTP') as Target;
    const [httpSegment, grpcNext, , , httpBatch, grpcBatch] = targets as [
      Target,
      Target,
      Target,
      Target,
      Target,
      Target,
    ];
    const all = [...results.values()].flat();
    const summary: GrpcBenchSummary = {
      nextVsHttp:
        medianOf(runsOf(grpcNext), 'callsPerSecond') / medianOf(runsOf(httpSegment), 'callsPerSecond'),
      grpcNextCallsPerSecond: medianOf(runsOf(grpcNext), 'callsPerSecond'),
      httpSegmentRps: medianOf(runsOf(httpSegment), 'callsPerSecond'),
      grpcNextCpuUsPerId: cpuPerId(runsOf(grpcNext)),
      httpSegmentCpuUsPerId: cpuPerId(runsOf(httpSegment)),
      batchVsHttp: medianOf(runsOf(grpcBatch), 'idsPerSecond') / medianOf(runsOf(httpBatch), 'idsPerSecond'),
      duplicates: all.reduce((sum, run) => sum + run.duplicates, 0),
      errors: all.reduce((sum, run) => sum + run.errors, 0),
    };
    const section: Section = {
      title: 'gRPC against HTTP, the same node',
      method: `One \`frond serve --grpc-port\` process; HTTP loaded with autocannon from the bench process (${options.connections} connections, no pipelining), gRPC by bench/grpc-load.ts in ${options.processes} processes of their own, started together (each ${options.channels} connections × ${options.inFlight} unary calls in flight, \`@grpc/grpc-js\`; latencies are the first process's). Targets alternate in each of ${options.rounds} rounds of ${options.runS} s; each figure is the median over the rounds. Latencies in ms.`,
      table: table(
        [
          'Target',
          ' Calls/s',
          ' IDs/s',
          ' vs HTTP',
          ' p50',
          ' p99',
          ' Errors',
          ' Duplicates',
          ' Server CPU',
          ' CPU µs/ID',
          ' CPU vs HTTP',
        ],
        targets.map((target) => {
          const runs = runsOf(target);
          const http = runsOf(partner(target));
          return [
            target.name,
            si(medianOf(runs, 'callsPerSecond')),
            si(medianOf(runs, 'idsPerSecond')),
            target.protocol === 'HTTP'
              ? '–'
              : `${(medianOf(runs, 'idsPerSecond') / medianOf(http, 'idsPerSecond')).toFixed(2)}×`,
            ms(medianOf(runs, 'p50')),
            ms(medianOf(runs, 'p99')),
            integer(runs.reduce((sum, run) => sum + run.errors, 0)),
            target.protocol === 'HTTP' ? '–' : integer(runs.reduce((sum, run) => sum + run.duplicates, 0)),
            percent(medianOf(runs, 'cores')),
            cpuPerId(runs).toFixed(target.ids > 1 ? 3 : 1),
            target.protocol === 'HTTP' ? '–' : `${(cpuPerId(runs) / cpuPerId(http)).toFixed(2)}×`,
          ];
        }),
      ),
      notes: [
        "Server CPU is the frond process's CPU time over the run's wall time (100 % = one core); below 100 %, the load generator set the pace. CPU µs/ID, the server's CPU time per ID, compares the protocols whatever the pace; CPU vs HTTP is gRPC's cost per ID over HTTP's (below 1× = cheaper).",
        'Duplicates: among the IDs the gRPC load client received in each run (it keeps them all).',
      ],
    };
    return { section, summary };
  } finally {
    await frond.stop();
  }
}
