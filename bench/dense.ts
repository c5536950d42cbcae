// What dense numbering (`--dense-tag`) costs, against the same tag with frond's usual look-ahead,
// measured in one run on one store. Run from the repository root: `node --import tsx bench/dense.ts`.
// Prints a markdown table and writes it to bench/dense.md.
//
// The store is SQLite composed as `frond serve` composes it (fenced, with its data dir), behind a
// delay of LATENCY_MS before every call: a database one LAN round trip away. CALLERS async callers
// each take one ID after another (`SegmentAllocator.next`) for RUN_MS, so segments run out as fast
// as the machine allows. With look-ahead the next segment loads in the background once 10% of the
// current one is used, so no call waits for the database; a dense tag loads only when the segment
// is used up, so once per segment the callers wait a round trip. What the dense tag buys is in the
// last columns: what a node holds (what a SIGKILL loses) is at most one segment instead of up to
// two, and never more than the table's step, since the dynamic step does not grow it.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { DEFAULT_FENCE_SKIP } from '../src/stores/segment-primitive.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { withLatency } from './lib/latency-store.js';
import { describeMachine } from './lib/machine.js';
import { table } from './lib/markdown.js';
import { median, quantile } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

/** A database on the same LAN: about one round trip per statement, as seen from the node. */
const LATENCY_MS = 2;
const CALLERS = 8;
const RUN_MS = 2_000;
const ROUNDS = 3;
/** Table steps measured: Leaf's default, and a small one as order-number tags use. */
const STEPS = [1_000, 100];

interface Run {
  idsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  /** Calls that took at least LATENCY_MS: ones that waited for a load. */
  waitedPer1000: number;
  /** The most IDs the node held unused at one time, sampled after every call: what a SIGKILL would lose. */
  maxHeld: bigint;
  loads: number;
  duplicates: number;
}

async function runOnce(step: number, dense: boolean): Promise<Run> {
  const dir = tempDir('frond-bench-dense-');
  const store = servedStore(withLatency(new SqliteSegmentStore(join(dir, 'frond.db')), LATENCY_MS), {
    dataDir: dir,
    fenceSkip: DEFAULT_FENCE_SKIP,
  });
  const tag = 'dense-bench';
  await store.addTag({ tag, step, start: 1n });
  const allocator = new SegmentAllocator(store, systemClock, silentLogger, {
    ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    dense: () => dense,
  });
  await allocator.start();
  await allocator.next(tag);
  const latencies: number[] = [];
  const seen = new Set<number>();
  let duplicates = 0;
  let maxHeld = 0n;
  const held = (): bigint => {
    const state = allocator.states().find((entry) => entry.tag === tag);
    if (state === undefined) return 0n;
    const next = state.next === undefined ? 0n : state.next.max - state.next.start;
    return state.current.max - state.current.value + next;
  };
  const until = performance.now() + RUN_MS;
  const caller = async () => {
    // Bounded by the clock: RUN_MS, then every caller stops after its call in flight.
    while (performance.now() < until) {
      const started = performance.now();
      const id = Number(await allocator.next(tag));
      latencies.push(performance.now() - started);
      if (seen.has(id)) duplicates++;
      seen.add(id);
      const now = held();
      if (now > maxHeld) maxHeld = now;
    }
  };
  const began = performance.now();
  await Promise.all(Array.from({ length: CALLERS }, caller));
  const elapsed = performance.now() - began;
  const loads = allocator.states().find((entry) => entry.tag === tag)?.loads ?? 0;
  await allocator.handBackAll({ timeoutMs: 2_000 });
  allocator.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
  latencies.sort((a, b) => a - b);
  const waited = latencies.filter((ms) => ms >= LATENCY_MS).length;
  return {
    idsPerSecond: (latencies.length / elapsed) * 1000,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    p999Ms: quantile(latencies, 0.999),
    waitedPer1000: (waited / latencies.length) * 1000,
    maxHeld,
    loads,
    duplicates,
  };
}

function largest(values: readonly bigint[]): bigint {
  let max = 0n;
  for (const value of values) if (value > max) max = value;
  return max;
}

function medianRun(runs: Run[]): Run {
  const pick = (get: (run: Run) => number) => median(runs.map(get));
  return {
    idsPerSecond: pick((run) => run.idsPerSecond),
    p50Ms: pick((run) => run.p50Ms),
    p99Ms: pick((run) => run.p99Ms),
    p999Ms: pick((run) => run.p999Ms),
    waitedPer1000: pick((run) => run.waitedPer1000),
    maxHeld: largest(runs.map((run) => run.maxHeld)),
    loads: pick((run) => run.loads),
    duplicates: runs.reduce((sum, run) => sum + run.duplicates, 0),
  };
}

const started = new Date();
const rows: string[][] = [];
for (const step of STEPS) {
  const look: Run[] = [];
  const dense: Run[] = [];
  // Alternated, so a noisy stretch of the shared machine falls on both.
  for (let round = 0; round < ROUNDS; round++) {
    look.push(await runOnce(step, false));
    dense.push(await runOnce(step, true));
  }
  const base = medianRun(look);
  for (const [name, run] of [
    ['look-ahead (default)', base],
    ['`--dense-tag`', medianRun(dense)],
  ] as const) {
    rows.push([
      String(step),
      name,
      Math.round(run.idsPerSecond).toLocaleString('en-US'),
      (run.idsPerSecond / base.idsPerSecond).toFixed(3),
      run.p50Ms.toFixed(3),
      run.p99Ms.toFixed(3),
      run.p999Ms.toFixed(3),
      run.waitedPer1000.toFixed(2),
      run.maxHeld.toLocaleString('en-US'),
      String(run.duplicates),
    ]);
  }
}

const machine = describeMachine();
const report = `# Dense numbering: what \`--dense-tag\` costs

${started.toISOString()} · ${machine.cpu} (${machine.cores} cores) · ${machine.memoryGiB} GiB · Node ${machine.node} · ${machine.os} · commit ${machine.commit}

\`node --import tsx bench/dense.ts\`: SQLite composed as \`frond serve\` composes it, ${LATENCY_MS} ms before every store call (a database one LAN round trip away); ${CALLERS} async callers take one ID after another for ${RUN_MS / 1000} s; median of ${ROUNDS} rounds per row, the two kinds alternated. "waited" counts calls of ${LATENCY_MS} ms or more per 1,000 IDs; "held" is the most IDs the node held unused at once (what a SIGKILL loses; a clean stop hands it back).

${table(
  [
    ' table step',
    'tag',
    ' IDs/s',
    ' ratio',
    ' p50 ms',
    ' p99 ms',
    ' p99.9 ms',
    ' waited /1000',
    ' most held',
    ' duplicates',
  ],
  rows,
)}
`;
process.stdout.write(report);
writeFileSync(new URL('dense.md', import.meta.url), report);
