// `npm run bench`: every benchmark, then bench/RESULTS.md. `npm run bench -- --quick` runs each one
// briefly (seconds, for CI) and prints the report instead of writing it.
//   --quick           small runs; writes nothing unless --out is given
//   --out FILE        where the markdown goes (default bench/RESULTS.md; with --quick, stdout only)
//   --json FILE       the figures as JSON as well (the quick-mode test reads it)
//   --only a,b        some of: in-process, http, boundary, scale, workers, client, scrape, opaque, grpc, resp
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { OPAQUE_CHUNK } from '../src/server/opaque/opaque-tags.js';
import { runBoundary } from './boundary.js';
import { runClient } from './client.js';
import { runGrpc } from './grpc.js';
import { runHttp } from './http.js';
import { runInProcess, SNOWFLAKE_LIMIT } from './in-process.js';
import { describeMachine } from './lib/machine.js';
import { renderSection, type Section, table } from './lib/markdown.js';
import { integer, percent, si } from './lib/stats.js';
import { runOpaqueBatch } from './opaque-batch.js';
import { runResp } from './resp.js';
import { runScale } from './scale.js';
import { runScrape } from './scrape.js';
import { runWorkers } from './workers.js';

const BIOME = new URL('../node_modules/.bin/biome', import.meta.url).pathname;
const SUITES = [
  'in-process',
  'http',
  'boundary',
  'scale',
  'workers',
  'client',
  'scrape',
  'opaque',
  'grpc',
  'resp',
] as const;
type Suite = (typeof SUITES)[number];

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
    json: { type: 'string' },
    only: { type: 'string' },
  },
});
const quick = values.quick === true;
const only = new Set((values.only?.split(',') ?? SUITES) as Suite[]);
for (const name of only) if (!SUITES.includes(name)) throw new Error(`--only: unknown benchmark ${name}`);
const out = values.out ?? (quick ? undefined : new URL('RESULTS.md', import.meta.url).pathname);

/** Full runs take about four minutes on 2 cores; quick ones about twenty seconds. */
const plan = quick
  ? {
      inProcess: { runs: 1, runMs: 60, sampleSize: 100_000 },
      // autocannon reports once a second, so a run takes at least 1 s whatever its duration.
      http: { rounds: 1, runS: 1, fixedRate: 5_000, fixedS: 0.5, connections: 10, warmupS: 0 },
      boundary: {
        rounds: 1,
        fixedRate: 5_000,
        runS: 1,
        latencyMs: 50,
        step: 1000,
        connections: 10,
        warmupS: 0,
      },
      scale: { tags: 500, concurrency: 32 },
      workers: { rounds: 1, runS: 1, connections: 10, warmupS: 0, endpoints: 1 },
      client: { rounds: 1, runMs: 200, warmupMs: 200 },
      scrape: { tagCounts: [500], rate: 1_000, phaseMs: 1_000, rounds: 1, scrapeEveryMs: 250 },
      opaque: {
        runs: Number(process.env.OPQ_RUNS ?? 1),
        runMs: Number(process.env.OPQ_MS ?? 50),
        chunkSamples: 20,
      },
      grpc: { rounds: 1, runS: 1, warmupS: 0, connections: 10, channels: 2, inFlight: 4, processes: 1 },
      resp: {
        rounds: 1,
        requests: 2_000,
        pipelinedRequests: 8_000,
        connections: 10,
        httpS: 1,
        warmupRequests: 2_000,
      },
    }
  : {
      inProcess: { runs: 5, runMs: 500, sampleSize: 2_000_000 },
      http: { rounds: 5, runS: 2, fixedRate: 10_000, fixedS: 2, connections: 10, warmupS: 1 },
      boundary: {
        // p99.9 of 30,000 requests is the 30th slowest: one stall of another process moves it, so 5 rounds.
        rounds: 5,
        fixedRate: 10_000,
        runS: 3,
        latencyMs: 50,
        step: 1000,
        connections: 10,
        warmupS: 1,
      },
      scale: { tags: 10_000, concurrency: 32 },
      workers: { rounds: 3, runS: 2, connections: 10, warmupS: 1, endpoints: 3 },
      client: { rounds: 3, runMs: 2_000, warmupMs: 1_000 },
      // About 75 s: per tag count, a warm-up second and 3 × (5 s without + 5 s with the scraper).
      scrape: { tagCounts: [10_000, 50_000], rate: 2_000, phaseMs: 5_000, rounds: 3, scrapeEveryMs: 1_000 },
      // About 40 s: 5 cases × 2 (with and without JSON) × 6 runs of 500 ms, then the chunk timings.
      opaque: { runs: 5, runMs: 500, chunkSamples: 500 },
      // About 2 minutes: six targets × (1 s warm-up + 3 rounds of 2 s), and the load clients' start each.
      grpc: { rounds: 3, runS: 2, warmupS: 1, connections: 10, channels: 2, inFlight: 32, processes: 2 },
      // About 40 s: per round 2 × 200,000 INCRs unpipelined, 2 × 1,000,000 with -P 16, 3 s of HTTP.
      resp: {
        rounds: 3,
        requests: 200_000,
        pipelinedRequests: 1_000_000,
        connections: 50,
        httpS: 3,
        warmupRequests: 500_000,
      },
    };

let lap = Date.now();
const log = (line: string) => {
  process.stderr.write(`bench: ${line} (+${((Date.now() - lap) / 1000).toFixed(1)} s)\n`);
  lap = Date.now();
};
const started = Date.now();
const loadBefore = loadavg()[0] ?? 0;
const sections: Section[] = [];
const targets: string[][] = [];
const figures: Record<string, unknown> = { quick };
const mark = (met: boolean) => (met ? 'yes' : '**no**');

if (only.has('in-process')) {
  log('in-process generators');
  const { rows, section } = await runInProcess(plan.inProcess);
  sections.push(section);
  figures.inProcess = rows;
  const row = (prefix: string) => rows.find((candidate) => candidate.name.startsWith(prefix));
  const plain = row('frond snowflake (`SnowflakeGenerator.next`, randomStart off');
  const random = row('frond snowflake (`SnowflakeGenerator.next`, randomStart on');
  const segment = row('frond segment');
  if (plain && random && segment) {
    targets.push(
      [
        'Snowflake in-process, randomStart off',
        '≥ 95 % of 4,096,000 IDs/s, 0 duplicates',
        `${si(plain.idsPerSecond)} IDs/s = ${percent(plain.idsPerSecond / SNOWFLAKE_LIMIT)}, ${plain.duplicates} duplicates`,
        mark(plain.idsPerSecond >= 0.95 * SNOWFLAKE_LIMIT && plain.duplicates === 0),
      ],
      [
        'Snowflake in-process, randomStart on (Leaf)',
        '≥ 95 % of 4,046,500 IDs/s (random 0..99 start)',
        `${si(random.idsPerSecond)} IDs/s = ${percent(random.idsPerSecond / 4_046_500)} (${percent(random.idsPerSecond / SNOWFLAKE_LIMIT)} of 4,096,000), ${random.duplicates} duplicates`,
        mark(random.idsPerSecond >= 0.95 * 4_046_500 && random.duplicates === 0),
      ],
      [
        'Segment in-process',
        '≥ 100 M IDs/s or ≥ ¼ of `++i`',
        `${si(segment.idsPerSecond)} IDs/s = ${percent(segment.vsCounter)} of \`++i\`, ${segment.duplicates} duplicates`,
        mark((segment.idsPerSecond >= 100e6 || segment.vsCounter >= 0.25) && segment.duplicates === 0),
      ],
    );
  }
}

if (only.has('http')) {
  log('HTTP (autocannon and a fixed rate)');
  const { sections: parts, summary } = await runHttp(plan.http);
  sections.push(...parts);
  figures.http = summary;
  const leaf = (name: string, rps: number, cpu: number) => [
    `One ID per request: ${name}`,
    '≥ 90 % of bare node:http, no errors',
    `${si(rps)} req/s = ${percent(rps / summary.bareRps)} of bare (${si(summary.bareRps)}); CPU per request ${percent(cpu)} of bare's efficiency`,
    mark(rps >= 0.9 * summary.bareRps && summary.errors === 0),
  ];
  targets.push(
    leaf('Leaf segment', summary.leafSegmentRps, summary.leafSegmentCpuRatio),
    leaf('Leaf snowflake', summary.leafSnowflakeRps, summary.leafSnowflakeCpuRatio),
    [
      'One ID per request: opaque segment IDs (`digits:11`) vs plain',
      '≥ 0.8× plain segment IDs',
      `${si(summary.opaqueSegmentRps)} req/s = ${summary.opaqueVsPlain.toFixed(2)}× plain; CPU per request ${summary.opaqueCpuVsPlain.toFixed(2)}× plain's; batches of 1000: ${si(summary.batchOpaqueIdsPerSecond)} opaque IDs/s`,
      mark(summary.opaqueVsPlain >= 0.8 && summary.errors === 0),
    ],
    [
      'Batch over HTTP (segment, 1000 a request)',
      '≥ 5 M IDs/s',
      `${si(summary.batchSegmentIdsPerSecond)} IDs/s (snowflake: ${si(summary.batchSnowflakeIdsPerSecond)} = ${percent(summary.batchSnowflakeIdsPerSecond / SNOWFLAKE_LIMIT)} of one worker's limit)`,
      mark(summary.batchSegmentIdsPerSecond >= 5e6),
    ],
  );
}

if (only.has('boundary')) {
  log('segment boundaries with database latency');
  const { section, summary } = await runBoundary(plan.boundary);
  sections.push(section);
  figures.boundary = summary;
  targets.push([
    `p99.9 across segment boundaries, ${plan.boundary.latencyMs} ms DB latency`,
    '≤ 1.5× the p99.9 without',
    `${summary.fixedP999.toFixed(2)} ms vs ${summary.fixedP999Baseline.toFixed(2)} ms = ${summary.fixedRatio.toFixed(2)}× at ${integer(plan.boundary.fixedRate)} req/s (at saturation: ${summary.saturatedRatio.toFixed(1)}×)`,
    mark(summary.fixedRatio <= 1.5 && summary.errors === 0),
  ]);
}

if (only.has('scale')) {
  log(`scale: ${plan.scale.tags} tags`);
  const { section, summary } = await runScale(plan.scale);
  sections.push(section);
  figures.scale = summary;
  targets.push([
    `${integer(summary.tags)} tags`,
    '< 200 MB RSS',
    `${summary.rssMiB.toFixed(1)} MiB RSS (peak ${summary.peakMiB.toFixed(1)}), first ID of every tag in ${summary.seconds.toFixed(2)} s`,
    mark(summary.rssMiB * 1.048576 < 200 && summary.errors === 0),
  ]);
}

if (only.has('workers')) {
  log('workers: 1 vs 2');
  const { section, summary } = await runWorkers(plan.workers);
  sections.push(section);
  figures.workers = summary;
  targets.push([
    '`--workers 2` vs 1 (report)',
    'throughput for 1 and 2 workers',
    `Leaf segment ${si(summary.leafSegment[0])} → ${si(summary.leafSegment[1])} req/s; batch ${si(summary.batchSegmentIds[0])} → ${si(summary.batchSegmentIds[1])} IDs/s`,
    '–',
  ]);
}

if (only.has('client')) {
  log('client SDK, sustained');
  const { rows, section } = await runClient(plan.client);
  sections.push(section);
  figures.client = rows;
  const find = (prefix: string, idType: string) =>
    rows.find((row) => row.name.startsWith(prefix) && row.idType === idType);
  const goal = (label: string, prefix: string, idType: string, target: number) => {
    const row = find(prefix, idType);
    if (row === undefined) return;
    targets.push([
      label,
      `≥ ${si(target)} IDs/s, refills over HTTP included`,
      `${si(row.idsPerSecond)} IDs/s = ${percent(row.vsBaseline)} of ${row.baselineName} (same process)${row.kind === 'await' ? `, ${percent(row.idsPerSecond / row.awaitFloor)} of a raw \`await\` (${si(row.awaitFloor)})` : ''}; ${row.fetches} refills in the timed runs`,
      mark(row.idsPerSecond >= target && row.outOfOrder === 0),
    ]);
  };
  goal('SDK `await nextId`, sustained (bigint)', '`await nextId', 'bigint', 20e6);
  goal('SDK `tryNextId` yielding every 10,000 (bigint)', '`tryNextId', 'bigint', 50e6);
  goal('SDK `tryNextId` yielding every 10,000 (number)', '`tryNextId', 'number', 100e6);
}

if (only.has('scrape')) {
  log(`operator pages under ID load: ${plan.scrape.tagCounts.join(', ')} tags`);
  const { section, summary } = await runScrape(plan.scrape);
  sections.push(section);
  figures.scrape = summary;
  for (const row of summary.rows) {
    const pages = row.pages.map(
      (page) => `${page.path} ${Math.round(page.bytes / 1024)} KiB in ${page.medianMs.toFixed(1)} ms`,
    );
    targets.push([
      `ID p99 while /metrics, /v1/stats, /db are scraped, ${integer(row.tags)} tags`,
      'a page stalls ID serving by no more than a few ms',
      `p99 ${row.with.p99.toFixed(2)} ms vs ${row.without.p99.toFixed(2)} ms without (${row.p99Ratio.toFixed(2)}×), max ${row.with.max.toFixed(1)} ms; server loop lag max ${row.loopLagMaxMs.toFixed(1)} ms a second (median ${row.loopLagMedianMs.toFixed(1)}); ${pages.join(', ')}`,
      mark(row.with.p99 - row.without.p99 <= 5 && row.errors === 0),
    ]);
  }
}

if (only.has('opaque')) {
  log('opaque batches vs plain');
  const { rows, chunks, section } = await runOpaqueBatch(plan.opaque);
  sections.push(section);
  figures.opaque = { rows, chunks };
  const opaqueRows = rows.filter((row) => row.kind !== 'plain');
  const worst = (pick: (row: (typeof rows)[number]) => number) => Math.min(...opaqueRows.map(pick));
  const longest = Math.max(...opaqueRows.map((row) => row.maxBlockMs));
  const chunkP99 = Math.max(...chunks.filter((row) => row.size === OPAQUE_CHUNK).map((row) => row.p99Ms));
  const blockP99 = Math.max(...opaqueRows.map((row) => row.p99BlockMs));
  const cpuBlockP99 = Math.max(...opaqueRows.map((row) => row.p99CpuBlockMs));
  targets.push([
    'Opaque batches of 1000 vs plain (`TagIssuer.many`, in process)',
    '≥ 25 % of plain IDs/s, no event-loop block over 1 ms',
    `${opaqueRows.map((row) => `${row.kind} ${si(row.idsPerSecond)} IDs/s`).join(', ')}; worst vs plain: ${percent(worst((row) => row.vsPlain))} bare, ${percent(worst((row) => row.jsonVsPlain))} with JSON bodies (by CPU time ${percent(worst((row) => row.cpuVsPlain))} and ${percent(worst((row) => row.jsonCpuVsPlain))}); event-loop block p99 ${blockP99.toFixed(2)} ms (${cpuBlockP99.toFixed(2)} ms of CPU), max ${longest.toFixed(2)} ms; one call of ${OPAQUE_CHUNK} IDs p99 ${chunkP99.toFixed(2)} ms; ${opaqueRows.reduce((sum, row) => sum + row.duplicates, 0)} duplicates`,
    // The refills' steps are paced by time (OPAQUE_STEP_MS), not by OPAQUE_CHUNK: the loop's block
    // is the measure, in CPU time (a wall-time gap on a loaded machine is other processes' turns).
    mark(worst((row) => row.jsonCpuVsPlain) >= 0.25 && cpuBlockP99 <= 1),
  ]);
}

if (only.has('grpc')) {
  log('gRPC against HTTP');
  const { section, summary } = await runGrpc(plan.grpc);
  sections.push(section);
  figures.grpc = summary;
  targets.push([
    'gRPC one-ID calls vs HTTP one-ID requests (report)',
    'the ratio, and server CPU per ID',
    `\`Next\` ${si(summary.grpcNextCallsPerSecond)} calls/s vs ${si(summary.httpSegmentRps)} req/s = ${summary.nextVsHttp.toFixed(2)}×; server CPU ${summary.grpcNextCpuUsPerId.toFixed(1)} µs vs ${summary.httpSegmentCpuUsPerId.toFixed(1)} µs an ID; batches of 1000: ${summary.batchVsHttp.toFixed(2)}× HTTP's IDs/s; ${summary.duplicates} duplicates`,
    mark(summary.duplicates === 0 && summary.errors === 0),
  ]);
}

if (only.has('resp')) {
  log('RESP port against Redis (redis-benchmark)');
  const { section, summary } = await runResp(plan.resp);
  sections.push(section);
  figures.resp = summary;
  const against = (ratio: number | undefined) =>
    ratio === undefined ? 'no Redis on 127.0.0.1:6379' : `${ratio.toFixed(2)}× Redis`;
  targets.push(
    [
      'RESP `INCR tag` without pipelining (redis-benchmark -c 50)',
      '≥ 0.8× Redis `INCR key`',
      `${si(summary.frondRps)} ops/s = ${against(summary.vsRedis)}`,
      mark((summary.vsRedis ?? 0) >= 0.8),
    ],
    [
      'RESP `INCR tag` with `-P 16`',
      '≥ 0.5× Redis',
      `${si(summary.frondPipelinedRps)} ops/s = ${against(summary.vsRedisPipelined)}`,
      mark((summary.vsRedisPipelined ?? 0) >= 0.5),
    ],
    [
      'RESP `INCR tag` vs HTTP one ID',
      '≥ 3× own HTTP',
      `${summary.vsHttp.toFixed(2)}× (${si(summary.httpRps)} HTTP req/s)`,
      mark(summary.vsHttp >= 3),
    ],
  );
}

const machine = describeMachine();
const loadAfter = loadavg()[0] ?? 0;
figures.machine = machine;
const report = `# frond benchmarks${quick ? ' (quick mode: too short to quote)' : ''}

Written by \`npm run bench\`${quick ? ' -- --quick' : ''} (bench/run.ts) on ${new Date(started).toISOString()}, in ${Math.round((Date.now() - started) / 1000)} s.

| Machine | |
|---|---|
| CPU | ${machine.cpu}, ${machine.cores} cores |
| Memory | ${machine.memoryGiB} GiB |
| Node | ${machine.node} (${machine.os}) |
| frond | commit ${machine.commit} |
| Load average (1 min) | ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after (other processes on the machine share its cores) |

Every figure is a median of several runs measured in this run, next to its baseline from the same run.

## Targets

${table(['Target', 'Goal', 'Reached', 'Met'], targets)}

${sections.map(renderSection).join('\n')}`;

if (out !== undefined) {
  writeFileSync(out, report);
  // The repository's lint checks markdown too; biome pads the tables as it wants them.
  try {
    execFileSync(BIOME, ['format', '--write', '--no-errors-on-unmatched', out], { stdio: 'ignore' });
  } catch {
    log(`could not format ${out} with biome; \`npx biome format --write ${out}\` before committing it`);
  }
  log(`wrote ${out}`);
} else {
  process.stdout.write(report);
}
if (values.json !== undefined) writeFileSync(values.json, `${JSON.stringify(figures, null, 2)}\n`);
log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
