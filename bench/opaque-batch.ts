import { createCipheriv, randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { formatDomain, OpaqueCodec, type OpaqueDomain } from '../src/core/opaque-codec.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../src/core/segment-step.js';
import { issuedJson } from '../src/server/ids/ids-json.js';
import { OpaqueSecret } from '../src/server/opaque/opaque-keys.js';
import { OPAQUE_CHUNK, OpaqueTags } from '../src/server/opaque/opaque-tags.js';
import { TagIssuer } from '../src/server/opaque/tag-issuer.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { DEFAULT_FENCE_SKIP } from '../src/stores/segment-primitive.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { type Section, table } from './lib/markdown.js';
import { median, quantile, si } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

export interface OpaqueBatchOptions {
  runs: number;
  runMs: number;
  /** Chunk durations sampled per chunk size (the table that picks OPAQUE_CHUNK). */
  chunkSamples: number;
}

export interface OpaqueBatchRow {
  name: string;
  /** `plain` or the opaque domain. */
  kind: string;
  /** IDs/s through `TagIssuer.many(tag, 1000)`, median of the runs. */
  idsPerSecond: number;
  /** The same with each batch written as the HTTP body (`idsJson`), as /v1/segment does. */
  jsonIdsPerSecond: number;
  vsPlain: number;
  jsonVsPlain: number;
  /** IDs per second of this process's CPU time: what other processes on the machine do not move. */
  idsPerCpuSecond: number;
  cpuVsPlain: number;
  jsonCpuVsPlain: number;
  p50Ms: number;
  p99Ms: number;
  /** The longest the event loop went without a turn while batches were served (ms). */
  maxBlockMs: number;
  p99BlockMs: number;
  p999BlockMs: number;
  duplicates: number;
}

export interface ChunkRow {
  domain: string;
  size: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** µs per ID at the median. */
  perIdUs: number;
}

const BATCH = 1000;
const DOMAINS: OpaqueDomain[] = [
  { kind: 'digits', digits: 11 },
  { kind: 'digits', digits: 18 },
  { kind: 'bits', bits: 53 },
  { kind: 'bits', bits: 63 },
];

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The gaps between turns of the event loop, while something else runs: a setImmediate loop that
 * notes the time at each turn. The longest gap is the longest synchronous stretch.
 */
function watchLoop() {
  const gaps: number[] = [];
  let last = performance.now();
  let running = true;
  const tick = () => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop(): number[] {
      running = false;
      return gaps;
    },
  };
}

/** This process's CPU time (ms): a gap of the loop that used little of it was another process's turn. */
function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function runCase(
  issuer: TagIssuer,
  tag: string,
  options: OpaqueBatchOptions,
  json: boolean,
): Promise<{
  idsPerSecond: number;
  idsPerCpuSecond: number;
  latencies: number[];
  gaps: number[];
  duplicates: number;
}> {
  const rates: number[] = [];
  const cpuRates: number[] = [];
  const latencies: number[] = [];
  const gaps: number[] = [];
  const duplicates = 0;
  // A warm-up run (JIT, the first refills), not counted.
  for (let run = -1; run < options.runs; run++) {
    const watch = watchLoop();
    const started = performance.now();
    const startedCpu = cpuMs();
    let ids = 0;
    while (performance.now() - started < options.runMs) {
      const before = performance.now();
      const batch = await issuer.many(tag, BATCH);
      if (json) issuedJson(batch);
      latencies.push(performance.now() - before);
      ids += batch.length;
      // A request each macrotask, as HTTP's are: the loop gets a turn between batches.
      await turn();
    }
    const elapsed = performance.now() - started;
    const elapsedCpu = cpuMs() - startedCpu;
    const runGaps = watch.stop();
    if (run < 0) {
      latencies.length = 0;
      continue;
    }
    rates.push((ids / elapsed) * 1000);
    cpuRates.push((ids / elapsedCpu) * 1000);
    gaps.push(...runGaps);
  }
  return {
    idsPerSecond: median(rates),
    idsPerCpuSecond: median(cpuRates),
    latencies,
    gaps,
    duplicates,
  };
}

function chunkTimes(domain: OpaqueDomain, size: number, samples: number): ChunkRow {
  const cipher = createCipheriv('aes-256-ecb', randomBytes(32), null);
  cipher.setAutoPadding(false);
  const codec = new OpaqueCodec((blocks) => new Uint8Array(cipher.update(blocks)), domain);
  const times: number[] = [];
  let next = 1;
  for (let i = -20; i < samples; i++) {
    const ids = Array.from({ length: size }, () => next++);
    const before = performance.now();
    codec.encodeBatch(ids);
    if (i >= 0) times.push(performance.now() - before);
  }
  const sorted = times.sort((a, b) => a - b);
  const p50 = quantile(sorted, 0.5);
  return {
    domain: formatDomain(domain),
    size,
    p50Ms: p50,
    p99Ms: quantile(sorted, 0.99),
    maxMs: sorted[sorted.length - 1] as number,
    perIdUs: (p50 * 1000) / size,
  };
}

export async function runOpaqueBatch(
  options: OpaqueBatchOptions,
): Promise<{ rows: OpaqueBatchRow[]; chunks: ChunkRow[]; section: Section }> {
  // Composed as `frond serve` composes segment mode: the fenced SQLite store, the allocator with
  // Leaf's step rules, OpaqueTags with a secret, and TagIssuer, which /v1/segment?count=N calls.
  const dir = tempDir('frond-bench-opaque-');
  const store = servedStore(new SqliteSegmentStore(join(dir, 'frond.db')), {
    dataDir: dir,
    fenceSkip: DEFAULT_FENCE_SKIP,
  });
  const step = 10_000_000;
  const allocator = new SegmentAllocator(store, systemClock, silentLogger, {
    ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    stepRules: { ...LEAF_STEP_RULES, maxStep: step },
  });
  const secret = OpaqueSecret.fromBytes(randomBytes(32), 'bench');
  const opaque = new OpaqueTags(allocator, secret, () => systemClock.now());
  await store.addTag({ tag: 'plain', step, start: 1n });
  for (const domain of DOMAINS) {
    const tag = `opaque-${formatDomain(domain).replace(':', '-')}`;
    await store.addTag({ tag, step, start: 1n }, opaque.settingFor(tag, domain));
  }
  await allocator.start();
  await opaque.preload();
  const issuer = new TagIssuer(allocator, opaque);

  const cases = [
    { name: 'plain segment IDs', kind: 'plain', tag: 'plain' },
    ...DOMAINS.map((domain) => ({
      name: `opaque \`${formatDomain(domain)}\``,
      kind: formatDomain(domain),
      tag: `opaque-${formatDomain(domain).replace(':', '-')}`,
    })),
  ];
  const rows: OpaqueBatchRow[] = [];
  let plain: { ids: number; json: number; cpu: number; jsonCpu: number } | undefined;
  try {
    for (const entry of cases) {
      const bare = await runCase(issuer, entry.tag, options, false);
      const json = await runCase(issuer, entry.tag, options, true);
      plain ??= {
        ids: bare.idsPerSecond,
        json: json.idsPerSecond,
        cpu: bare.idsPerCpuSecond,
        jsonCpu: json.idsPerCpuSecond,
      };
      const latencies = bare.latencies.sort((a, b) => a - b);
      const gaps = [...bare.gaps, ...json.gaps].sort((a, b) => a - b);
      rows.push({
        name: entry.name,
        kind: entry.kind,
        idsPerSecond: bare.idsPerSecond,
        jsonIdsPerSecond: json.idsPerSecond,
        vsPlain: bare.idsPerSecond / plain.ids,
        jsonVsPlain: json.idsPerSecond / plain.json,
        idsPerCpuSecond: bare.idsPerCpuSecond,
        cpuVsPlain: bare.idsPerCpuSecond / plain.cpu,
        jsonCpuVsPlain: json.idsPerCpuSecond / plain.jsonCpu,
        p50Ms: quantile(latencies, 0.5),
        p99Ms: quantile(latencies, 0.99),
        maxBlockMs: gaps[gaps.length - 1] ?? Number.NaN,
        p99BlockMs: quantile(gaps, 0.99),
        p999BlockMs: quantile(gaps, 0.999),
        duplicates: bare.duplicates + json.duplicates,
      });
    }
  } finally {
    allocator.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const chunks: ChunkRow[] = [];
  for (const domain of DOMAINS)
    for (const size of [128, 256, 512, 1024]) chunks.push(chunkTimes(domain, size, options.chunkSamples));

  const ms = (value: number) => value.toFixed(3);
  const section: Section = {
    title: 'Opaque batches',
    method: `Batches of ${BATCH} through \`TagIssuer.many\` (what \`/v1/segment/TAG?count=${BATCH}\` calls), in process: SQLite behind the fenced store, step 10 M, one request per turn of the event loop, ${options.runs} runs of ${options.runMs} ms after a warm-up (median IDs/s). "+ JSON" also writes each batch as the HTTP body (\`idsJson\`). Block: the gap between turns of a \`setImmediate\` loop running beside the batches (refills encode ${OPAQUE_CHUNK} IDs per turn), in wall time (on a shared machine a gap includes other processes' turns: the chunk table, one call timed alone, is the encoder's own block). CPU columns divide by this process's CPU time instead of wall time. Below, one \`encodeBatch\` call per chunk size.`,
    table: `${table(
      [
        'Batch of 1000',
        ' IDs/s',
        ' vs plain',
        ' IDs/s + JSON',
        ' vs plain + JSON',
        ' p50 ms',
        ' p99 ms',
        ' IDs per CPU-s',
        ' vs plain (CPU)',
        ' vs plain + JSON (CPU)',
        ' Block p99 / p99.9 / max ms',
        ' Duplicates',
      ],
      rows.map((row) => [
        row.name,
        si(row.idsPerSecond),
        `${(row.vsPlain * 100).toFixed(1)} %`,
        si(row.jsonIdsPerSecond),
        `${(row.jsonVsPlain * 100).toFixed(1)} %`,
        ms(row.p50Ms),
        ms(row.p99Ms),
        si(row.idsPerCpuSecond),
        `${(row.cpuVsPlain * 100).toFixed(1)} %`,
        `${(row.jsonCpuVsPlain * 100).toFixed(1)} %`,
        `${ms(row.p99BlockMs)} / ${ms(row.p999BlockMs)} / ${ms(row.maxBlockMs)}`,
        String(row.duplicates),
      ]),
    )}\n\n${table(
      ['Chunk (`encodeBatch`)', ' IDs', ' p50 ms', ' p99 ms', ' max ms', ' µs per ID'],
      chunks.map((row) => [
        `\`${row.domain}\``,
        String(row.size),
        ms(row.p50Ms),
        ms(row.p99Ms),
        ms(row.maxMs),
        row.perIdUs.toFixed(2),
      ]),
    )}`,
    notes: [
      'Goal: opaque batches at least 25 % of plain ones, no block of the event loop over 1 ms. Plain `TagIssuer.many` in process is a slice of a buffered segment (a few µs a batch); over HTTP the request costs far more than that, so the "+ JSON" column is the nearer measure of what a client sees.',
      'Before this encoder (one `encodeMany` of 1,024 per refill, bigints between rounds), timed beside it in one process on this machine: 6.5 to 11.5 ms per 1,024 IDs at the median against 0.4 to 1.1 ms now, each refill one block of the event loop that long.',
    ],
  };
  return { rows, chunks, section };
}
