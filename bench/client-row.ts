// One row of the client benchmark (bench/client.ts), in a process of its own so that the SDK's call
// sites see one ID type, as in an application: a raw loop of the same shape first (the row's
// baseline, from the same run), then the SDK loop against the server at URL, for seconds, every
// refill over HTTP included. Prints the figures as JSON.
//   node --import tsx bench/client-row.ts URL KIND IDTYPE PLAN_JSON
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { createClient, type FrondClient, type IdType } from '@frond/client';
import { CHUNK, type RowKind, type RowPlan, type RowResult, TAG } from './client.js';
import { median } from './lib/stats.js';

let sink: unknown;
/**
 * The last ID the SDK handed out, apart from the raw loops' `sink`: a run whose first chunks got
 * no ID yet (the first fetch slower than the warm-up, as on a loaded CI machine) would otherwise
 * compare the SDK's first ID with the raw loop's last counter and count one out of order.
 */
let taken: unknown;
let counter = 0;

function rawNumber(count: number): number {
  let i = counter;
  for (let k = 0; k < count; k++) sink = ++i;
  counter = i;
  return count;
}

function rawBigInt(count: number): number {
  let i = counter;
  for (let k = 0; k < count; k++) sink = BigInt(++i);
  counter = i;
  return count;
}

async function rawAwaitBigInt(count: number): Promise<number> {
  let i = counter;
  for (let k = 0; k < count; k++) sink = await Promise.resolve(BigInt(++i));
  counter = i;
  return count;
}

// The timed loops are functions of their own, so they are optimized as a whole.
function tryChunk(client: FrondClient<unknown>, count: number): number {
  let got = 0;
  for (let k = 0; k < count; k++) {
    const id = client.tryNextId(TAG);
    if (id !== undefined) {
      taken = id;
      got++;
    }
  }
  return got;
}

async function awaitChunk(client: FrondClient<unknown>, count: number): Promise<number> {
  for (let k = 0; k < count; k++) taken = await client.nextId(TAG);
  return count;
}

async function snowflakeChunk(client: FrondClient<unknown>, count: number): Promise<number> {
  for (let k = 0; k < count; k++) taken = await client.snowflake();
  return count;
}

interface Loop {
  /** Takes up to `count` IDs; answers how many it got. */
  chunk: (count: number) => number | Promise<number>;
  /** Yields to the event loop after every chunk (the `tryNextId` rows and their baselines). */
  yields: boolean;
  /** The last ID taken, to check that chunks follow each other; undefined for raw loops. */
  last?: () => unknown;
}

interface Measured {
  idsPerSecond: number;
  missesPerSecond: number;
  outOfOrder: number;
}

/** Runs `loop` for `ms`; IDs per second over the wall time, refills and yields included. */
async function timed(loop: Loop, ms: number): Promise<Measured> {
  let ids = 0;
  let calls = 0;
  let outOfOrder = 0;
  let previous: unknown;
  const started = process.hrtime.bigint();
  const stopAt = started + BigInt(ms) * 1_000_000n;
  let now = started;
  while (now < stopAt) {
    ids += await loop.chunk(CHUNK);
    calls += CHUNK;
    if (loop.last !== undefined) {
      const last = loop.last();
      if (last !== undefined && previous !== undefined && (last as bigint) < (previous as bigint))
        outOfOrder++;
      if (last !== undefined) previous = last;
    }
    if (loop.yields) await yieldToLoop();
    now = process.hrtime.bigint();
  }
  const seconds = Number(now - started) / 1e9;
  return { idsPerSecond: ids / seconds, missesPerSecond: (calls - ids) / seconds, outOfOrder };
}

async function measure(loop: Loop, plan: RowPlan): Promise<Measured> {
  await timed(loop, plan.warmupMs);
  const runs: Measured[] = [];
  for (let round = 0; round < plan.rounds; round++) runs.push(await timed(loop, plan.runMs));
  return {
    idsPerSecond: median(runs.map((run) => run.idsPerSecond)),
    missesPerSecond: median(runs.map((run) => run.missesPerSecond)),
    outOfOrder: runs.reduce((sum, run) => sum + run.outOfOrder, 0),
  };
}

const client = async (url: string, idType: IdType): Promise<FrondClient<unknown>> =>
  createClient({ urls: [url], idType }) as FrondClient<unknown>;

async function main(): Promise<void> {
  const [url, kind, idType, planText] = process.argv.slice(2) as [string, RowKind, IdType, string];
  const plan = JSON.parse(planText) as RowPlan;
  const baseline = await measure({ chunk: idType === 'number' ? rawNumber : rawBigInt, yields: true }, plan);
  const awaitFloor = await measure({ chunk: rawAwaitBigInt, yields: false }, { ...plan, rounds: 1 });
  // Read once, so the raw loops' stores cannot be dropped as dead code.
  if (sink === undefined) throw new Error('the raw loops produced no value');
  const made = await client(url, idType);
  const chunk =
    kind === 'try'
      ? (n: number) => tryChunk(made, n)
      : kind === 'await'
        ? (n: number) => awaitChunk(made, n)
        : (n: number) => snowflakeChunk(made, n);
  const loop: Loop = { chunk, yields: kind === 'try', last: () => taken };
  const state = () => (kind === 'snowflake' ? made.state().snowflake : made.state().tags[TAG]);
  await timed(loop, plan.warmupMs);
  const before = state();
  const result = await measure(loop, { ...plan, warmupMs: 0 });
  const after = state();
  made.close();
  const out: RowResult = {
    baseline: baseline.idsPerSecond,
    awaitFloor: awaitFloor.idsPerSecond,
    idsPerSecond: result.idsPerSecond,
    missesPerSecond: result.missesPerSecond,
    fetches: (after?.fetches ?? 0) - (before?.fetches ?? 0),
    batchSize: after?.batchSize ?? 0,
    outOfOrder: result.outOfOrder,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

await main();
