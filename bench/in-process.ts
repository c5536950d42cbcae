import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Snowflake as SapphireSnowflake } from '@sapphire/snowflake';
import FlakeId from 'flake-idgen';
import { Snowflake as NodejsSnowflake } from 'nodejs-snowflake';
import { monotonicFactory } from 'ulid';
import { v7 as uuidv7 } from 'uuid';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from '../src/core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../src/core/segment-step.js';
import { SnowflakeGenerator } from '../src/core/snowflake-generator.js';
import { LEAF_EPOCH, LEAF_LAYOUT } from '../src/core/snowflake-layout.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import { DEFAULT_FENCE_SKIP } from '../src/stores/segment-primitive.js';
import { SqliteSegmentStore } from '../src/stores/sqlite/sqlite-segment-store.js';
import { type Section, table } from './lib/markdown.js';
import { countDuplicateStrings, countDuplicates, integer, median, percent, si } from './lib/stats.js';
import { tempDir } from './lib/temp-dir.js';

/** One worker's hard limit: 4096 sequence values per millisecond. */
export const SNOWFLAKE_LIMIT = 4_096_000;
/** IDs per `batch` call: small enough to stop close to the deadline, large enough to amortise the call. */
const CHUNK = 16_384;

type Keys = BigInt64Array | Float64Array | string[];

interface Case {
  name: string;
  /** What the row is compared with besides the raw counter. */
  snowflakeLimit: boolean;
  note: string;
  /** Makes up to `n` IDs back to back; fewer when nothing is buffered (the caller then yields). */
  batch(n: number): number;
  /** Exceptions thrown by the generator (flake-idgen throws once a millisecond's 4096 are used). */
  errors: number;
  /** `n` IDs made back to back, as comparable keys. */
  sample(n: number): Promise<{ keys: Keys; errors: number }>;
}

export interface InProcessRow {
  name: string;
  idsPerSecond: number;
  runs: number[];
  vsCounter: number;
  vsSnowflakeLimit: number | undefined;
  duplicates: number;
  sampled: number;
  errorsPerSecond: number;
  note: string;
}

export interface InProcessOptions {
  runs: number;
  runMs: number;
  sampleSize: number;
}

// Results go here so that no loop's work is dead code the JIT could drop.
const sink: { value: unknown } = { value: undefined };

/** Lets a segment load in flight finish: its promise chain needs a turn of the event loop. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

async function sampleOf<T>(
  n: number,
  make: () => T | undefined,
  keys: Keys,
  put: (keys: Keys, i: number, id: T) => void,
) {
  let errors = 0;
  for (let i = 0; i < n; ) {
    let id: T | undefined;
    try {
      id = make();
    } catch {
      errors++;
      continue;
    }
    if (id === undefined) {
      await yieldToLoop();
      continue;
    }
    put(keys, i++, id);
  }
  return { keys, errors };
}

const putBig = (keys: Keys, i: number, id: bigint) => {
  (keys as BigInt64Array)[i] = id;
};
const putNumber = (keys: Keys, i: number, id: number) => {
  (keys as Float64Array)[i] = id;
};
const putString = (keys: Keys, i: number, id: string) => {
  (keys as string[])[i] = id;
};

async function frondSegment(): Promise<{ cases: Case[]; close: () => Promise<void> }> {
  // Composed as `frond serve` does: the fenced store and its data dir's journal (servedStore).
  const dir = tempDir('frond-bench-');
  const store = servedStore(new SqliteSegmentStore(join(dir, 'frond.db')), {
    dataDir: dir,
    fenceSkip: DEFAULT_FENCE_SKIP,
  });
  // A big step (10 M), as a busy tag reaches with Leaf's doubling; each load is one SQLite transaction.
  const step = 10_000_000;
  // Two tags: one whose IDs are numbers (below 2^53), one whose IDs are bigints (above 2^62).
  const high = 2n ** 62n + 1n;
  await store.addTag({ tag: 'bench', step, start: 1n });
  await store.addTag({ tag: 'bench-high', step, start: high });
  const allocator = new SegmentAllocator(store, systemClock, silentLogger, {
    ...DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
    stepRules: { ...LEAF_STEP_RULES, maxStep: step },
  });
  await allocator.start();
  await allocator.next('bench');
  await allocator.next('bench-high');
  const segment: Case = {
    name: 'frond segment (`SegmentAllocator.tryNext`, SQLite, step 10 M)',
    snowflakeLimit: false,
    note: 'number; a tag below 2^53',
    errors: 0,
    batch(n) {
      for (let k = 0; k < n; k++) {
        const id = allocator.tryNext('bench');
        if (id === undefined) return k;
        sink.value = id;
      }
      return n;
    },
    sample: (n) =>
      sampleOf(n, () => allocator.tryNext('bench') as number | undefined, new Float64Array(n), putNumber),
  };
  const above: Case = {
    name: 'frond segment above 2^62 (`SegmentAllocator.tryNext`, SQLite, step 10 M)',
    snowflakeLimit: false,
    note: 'bigint; a tag whose max_id is above 2^62 (one bigint per ID)',
    errors: 0,
    batch(n) {
      for (let k = 0; k < n; k++) {
        const id = allocator.tryNext('bench-high');
        if (id === undefined) return k;
        sink.value = id;
      }
      return n;
    },
    sample: (n) =>
      sampleOf(n, () => allocator.tryNext('bench-high') as bigint | undefined, new BigInt64Array(n), putBig),
  };
  return {
    cases: [segment, above],
    async close() {
      allocator.close();
      await store.close();
    },
  };
}

function frondSnowflake(randomSequence: boolean): Case {
  const generator = () =>
    new SnowflakeGenerator({
      workerId: 1,
      layout: LEAF_LAYOUT,
      clock: systemClock,
      randomSequence,
      random: Math.random,
      lastTimestamp: 0,
      // The service moves this forward every 500 ms on a timer; a synchronous loop has no timers.
      recordedThrough: Number.MAX_SAFE_INTEGER,
    });
  const timed = generator();
  return {
    name: `frond snowflake (\`SnowflakeGenerator.next\`, randomStart ${randomSequence ? 'on' : 'off'})`,
    snowflakeLimit: true,
    note: randomSequence
      ? 'bigint; Leaf starts each ms at a random 0..99, so a ms holds 4046.5 IDs on average (98.8 % of the limit)'
      : 'bigint; waits for the next ms after 4096',
    errors: 0,
    batch(n) {
      for (let k = 0; k < n; k++) sink.value = timed.next();
      return n;
    },
    sample(n) {
      const fresh = generator();
      return sampleOf(n, () => fresh.next(), new BigInt64Array(n), putBig);
    },
  };
}

function rawCounter(): Case {
  let i = 0;
  return {
    name: 'raw counter (`++i`), the baseline',
    snowflakeLimit: false,
    note: 'what a loop costs with no generator at all',
    errors: 0,
    batch(n) {
      for (let k = 0; k < n; k++) sink.value = ++i;
      return n;
    },
    sample(n) {
      let j = 0;
      return sampleOf(n, () => ++j, new Float64Array(n), putNumber);
    },
  };
}

function peers(): Case[] {
  const nodejs = new NodejsSnowflake({ custom_epoch: LEAF_EPOCH, instance_id: 1 });
  const sapphire = new SapphireSnowflake(LEAF_EPOCH);
  const flake = new FlakeId({ id: 1, epoch: LEAF_EPOCH });
  const monotonic = monotonicFactory();
  const flakeCase: Case = {
    name: 'flake-idgen 1.4.0 (`next()`, sync)',
    snowflakeLimit: true,
    note: 'Buffer; throws once a ms has 4096 IDs instead of waiting',
    errors: 0,
    batch(n) {
      let made = 0;
      for (let k = 0; k < n; k++) {
        try {
          sink.value = flake.next();
          made++;
        } catch {
          this.errors++;
        }
      }
      return made;
    },
    sample(n) {
      const fresh = new FlakeId({ id: 1, epoch: LEAF_EPOCH });
      return sampleOf(n, () => fresh.next().readBigInt64BE(0), new BigInt64Array(n), putBig);
    },
  };
  return [
    {
      name: 'nodejs-snowflake 2.0.1 (`getUniqueID`)',
      snowflakeLimit: false,
      note: 'bigint; its own layout caps it at 1,024,000 IDs/s (busy-waits)',
      errors: 0,
      batch(n) {
        for (let k = 0; k < n; k++) sink.value = nodejs.getUniqueID();
        return n;
      },
      sample(n) {
        const fresh = new NodejsSnowflake({ custom_epoch: LEAF_EPOCH, instance_id: 1 });
        return sampleOf(n, () => fresh.getUniqueID() as bigint, new BigInt64Array(n), putBig);
      },
    },
    {
      name: '@sapphire/snowflake 3.5.5 (`generate`)',
      snowflakeLimit: true,
      note: 'bigint; the 12-bit increment wraps within a ms, so IDs repeat at full speed',
      errors: 0,
      batch(n) {
        for (let k = 0; k < n; k++) sink.value = sapphire.generate();
        return n;
      },
      sample(n) {
        const fresh = new SapphireSnowflake(LEAF_EPOCH);
        return sampleOf(n, () => fresh.generate(), new BigInt64Array(n), putBig);
      },
    },
    flakeCase,
    {
      name: 'uuid 14.0.3 `v7()`',
      snowflakeLimit: false,
      note: 'string, 128-bit',
      errors: 0,
      batch(n) {
        for (let k = 0; k < n; k++) sink.value = uuidv7();
        return n;
      },
      sample: (n) => sampleOf(n, () => uuidv7(), new Array<string>(n), putString),
    },
    {
      name: 'ulid 3.0.2 `monotonicFactory()`',
      snowflakeLimit: false,
      note: 'string, 128-bit',
      errors: 0,
      batch(n) {
        for (let k = 0; k < n; k++) sink.value = monotonic();
        return n;
      },
      sample(n) {
        const fresh = monotonicFactory();
        return sampleOf(n, () => fresh(), new Array<string>(n), putString);
      },
    },
    {
      name: '`crypto.randomUUID()`',
      snowflakeLimit: false,
      note: 'string, 122 random bits',
      errors: 0,
      batch(n) {
        for (let k = 0; k < n; k++) sink.value = randomUUID();
        return n;
      },
      sample: (n) => sampleOf(n, () => randomUUID(), new Array<string>(n), putString),
    },
  ];
}

async function measure(c: Case, runMs: number): Promise<{ idsPerSecond: number; errorsPerSecond: number }> {
  const errorsBefore = c.errors;
  let ids = 0;
  // Time whole milliseconds of the clock: a snowflake generator idle since its last run has the whole
  // current millisecond's 4096 IDs at hand, which would count a part of a millisecond as a whole one.
  for (const ms = Date.now(); Date.now() === ms; );
  const start = performance.now();
  let now = start;
  while (now - start < runMs) {
    const made = c.batch(CHUNK);
    ids += made;
    if (made < CHUNK && c.errors === errorsBefore) await yieldToLoop();
    now = performance.now();
  }
  // And end on one: the last chunk may end just after the 4096 IDs at the start of a millisecond.
  for (const ms = Date.now(); Date.now() === ms; );
  now = performance.now();
  const seconds = (now - start) / 1000;
  return { idsPerSecond: ids / seconds, errorsPerSecond: (c.errors - errorsBefore) / seconds };
}

/**
 * Every generator in one process, one after another in rounds (A B C … A B C …), after a warm-up
 * round that is thrown away; the figure is the median of the rounds. Then each makes `sampleSize`
 * IDs back to back, and the duplicates among them are counted.
 */
export async function runInProcess(
  options: InProcessOptions,
): Promise<{ rows: InProcessRow[]; section: Section }> {
  const segment = await frondSegment();
  const counter = rawCounter();
  const cases: Case[] = [counter, ...segment.cases, frondSnowflake(false), frondSnowflake(true), ...peers()];
  const runs = new Map<Case, number[]>(cases.map((c) => [c, []]));
  const switchesBefore = process.resourceUsage().involuntaryContextSwitches;
  const wallBefore = performance.now();
  const errorRates = new Map<Case, number[]>(cases.map((c) => [c, []]));
  for (let round = -1; round < options.runs; round++) {
    for (const c of cases) {
      const result = await measure(c, round < 0 ? Math.min(200, options.runMs) : options.runMs);
      if (round < 0) continue;
      runs.get(c)?.push(result.idsPerSecond);
      errorRates.get(c)?.push(result.errorsPerSecond);
    }
  }
  const preempted = {
    switches: process.resourceUsage().involuntaryContextSwitches - switchesBefore,
    seconds: (performance.now() - wallBefore) / 1000,
  };
  const counterRate = median(runs.get(counter) ?? []);
  const rows: InProcessRow[] = [];
  for (const c of cases) {
    const sample = await c.sample(options.sampleSize);
    const duplicates = Array.isArray(sample.keys)
      ? countDuplicateStrings(sample.keys)
      : countDuplicates(sample.keys as BigInt64Array | Float64Array);
    const idsPerSecond = median(runs.get(c) ?? []);
    rows.push({
      name: c.name,
      idsPerSecond,
      runs: runs.get(c) ?? [],
      vsCounter: idsPerSecond / counterRate,
      vsSnowflakeLimit: c.snowflakeLimit ? idsPerSecond / SNOWFLAKE_LIMIT : undefined,
      duplicates,
      sampled: options.sampleSize,
      errorsPerSecond: median(errorRates.get(c) ?? []),
      note: c.note,
    });
  }
  await segment.close();
  sink.value = undefined;
  return { rows, section: inProcessSection(rows, options, preempted) };
}

function inProcessSection(
  rows: InProcessRow[],
  options: InProcessOptions,
  preempted: { switches: number; seconds: number },
): Section {
  return {
    title: 'In-process generation',
    method: `All generators in one process, run in turn for ${options.runMs} ms each, ${options.runs} rounds after a warm-up round; IDs/s is the median of the rounds. Duplicates: ${integer(options.sampleSize)} IDs made back to back by a fresh instance, sorted and compared.`,
    table: table(
      [
        'Generator',
        ' IDs/s (median)',
        ' vs `++i`',
        ' vs 4,096,000/s',
        ` Duplicates in ${integer(options.sampleSize)}`,
        ' Throws/s',
        'Notes',
      ],
      rows.map((row) => [
        row.name,
        si(row.idsPerSecond),
        percent(row.vsCounter),
        row.vsSnowflakeLimit === undefined ? '–' : percent(row.vsSnowflakeLimit),
        integer(row.duplicates),
        row.errorsPerSecond > 0 ? si(row.errorsPerSecond) : '0',
        row.note,
      ]),
    ),
    notes: [
      'The 4,096,000/s column applies to 41/10/12-bit snowflakes: 4096 sequence values per ms is the hard limit of one worker.',
      "flake-idgen's IDs/s counts IDs it returned; the calls that threw are in Throws/s.",
      `The kernel preempted the bench process ${integer(preempted.switches)} times in the ${preempted.seconds.toFixed(0)} s of timed runs (involuntary context switches): a snowflake generator loses every millisecond in which its process does not run, so figures near 4,096,000/s drop when other processes want the cores.`,
    ],
  };
}
