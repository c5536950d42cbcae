// @frond/client sustained, as an application uses it: a process takes IDs in a loop for seconds, and
// every refill over HTTP from one local `frond serve` (SQLite) falls inside the timed runs. Each row
// runs in a process of its own (bench/client-row.ts), next to a raw loop of the same shape measured
// in that process just before. Part of `npm run bench` (bench/run.ts).
import type { IdType } from '@frond/client';
import { runFrond, runNode, startFrond, tempDir } from '../test/support/frond-process.js';
import { type Section, table } from './lib/markdown.js';
import { percent, si } from './lib/stats.js';

export type ClientPlan = RowPlan;

export interface RowPlan {
  /** Timed runs; the figure is their median. */
  rounds: number;
  runMs: number;
  /** Untimed, before the first run: the grants grow to the caller's rate, the JIT warms up. */
  warmupMs: number;
}

/** `try`: `tryNextId` yielding every 10,000; `await`: `await nextId`; `snowflake`: `await snowflake()`. */
export type RowKind = 'try' | 'await' | 'snowflake';

export interface RowResult {
  /** The raw loop, `sink = ++i` (number) or `sink = BigInt(++i)`, yielding every 10,000. */
  baseline: number;
  /** `sink = await Promise.resolve(BigInt(++i))`: the floor under any awaited ID. */
  awaitFloor: number;
  idsPerSecond: number;
  missesPerSecond: number;
  fetches: number;
  batchSize: number;
  outOfOrder: number;
}

/** IDs between two looks at the clock, and between two yields of the yielding loops. */
export const CHUNK = 10_000;
export const TAG = 'bench-client';

const ROW = new URL('./client-row.ts', import.meta.url).pathname;
/** One worker's limit: 4096 IDs per millisecond. */
const SNOWFLAKE_LIMIT = 4_096_000;

export interface ClientRow extends RowResult {
  name: string;
  idType: IdType;
  kind: RowKind;
  /** What the row is compared with, and the ratio. */
  baselineName: string;
  vsBaseline: number;
  target: number | undefined;
}

const ROWS: { name: string; kind: RowKind; idType: IdType; target: number | undefined }[] = [
  { name: '`tryNextId(tag)`, yielding every 10,000', kind: 'try', idType: 'bigint', target: 50e6 },
  { name: '`tryNextId(tag)`, yielding every 10,000', kind: 'try', idType: 'number', target: 100e6 },
  { name: '`await nextId(tag)`', kind: 'await', idType: 'bigint', target: 20e6 },
  { name: '`await nextId(tag)`', kind: 'await', idType: 'number', target: undefined },
  { name: '`await snowflake()`', kind: 'snowflake', idType: 'bigint', target: undefined },
];

export async function runClient(plan: ClientPlan): Promise<{ rows: ClientRow[]; section: Section }> {
  const dir = tempDir('frond-bench-client-');
  const created = await runFrond(['db', 'init', '--data-dir', dir]);
  if (created.code !== 0) throw new Error(`db init failed: ${created.stderr}`);
  const added = await runFrond(['tag', 'add', TAG, '--data-dir', dir, '--step', '1000']);
  if (added.code !== 0) throw new Error(`tag add failed: ${added.stderr}`);
  const server = await startFrond(['--port', '0', '--data-dir', dir, '--worker-id', '1']);
  const rows: ClientRow[] = [];
  const budgetMs = 60_000 + 3 * (plan.warmupMs + plan.rounds * plan.runMs);
  try {
    for (const spec of ROWS) {
      const result = await runNode(
        ['--import', 'tsx', ROW, server.url, spec.kind, spec.idType, JSON.stringify(plan)],
        { timeoutMs: budgetMs },
      );
      if (result.code !== 0)
        throw new Error(`bench/client-row.ts ${spec.kind} ${spec.idType}: ${result.stderr}`);
      const figures = JSON.parse(result.stdout) as RowResult;
      const snowflake = spec.kind === 'snowflake';
      const baseline = snowflake ? SNOWFLAKE_LIMIT : figures.baseline;
      rows.push({
        ...spec,
        ...figures,
        baselineName: snowflake
          ? 'one worker: 4,096,000/s'
          : `raw \`${spec.idType === 'number' ? '++i' : 'BigInt(++i)'}\`, yielding: ${si(figures.baseline)}`,
        vsBaseline: figures.idsPerSecond / baseline,
      });
    }
  } finally {
    await server.stop();
  }
  const section: Section = {
    title: 'Client SDK, sustained (refills over HTTP included)',
    method: `@frond/client against one local \`frond serve\` (SQLite, table step 1,000). Each row runs in a process of its own (one ID type per process, as in an application): first its baseline, a raw loop \`sink = ++i\` (number) or \`sink = BigInt(++i)\` (bigint) yielding to the event loop every ${CHUNK.toLocaleString('en')}, then a fresh client, ${plan.warmupMs} ms untimed (the grants grow to the caller's rate), then ${plan.rounds} timed runs of ${plan.runMs} ms. IDs/s is the median of the runs over wall time, every refill (\`GET /v1/ranges/{tag}\`) and every yield included. \`tryNextId\` rows yield (\`setImmediate\`) after every ${CHUNK.toLocaleString('en')} calls and count only calls that got an ID; \`await\` rows yield only through their awaits.`,
    table: table(
      [
        'Loop',
        'idType',
        ' IDs/s (median)',
        'Baseline (same process, same run)',
        ' vs baseline',
        'Target',
        ' Empty answers/s',
        ' Refills in timed runs',
        ' Last grant',
        ' Out of order',
        ' Raw `await` floor',
      ],
      rows.map((row) => [
        row.name,
        row.idType,
        si(row.idsPerSecond),
        row.baselineName,
        percent(row.vsBaseline),
        row.target === undefined
          ? '–'
          : `≥ ${si(row.target)}: ${row.idsPerSecond >= row.target ? 'met' : '**missed**'}`,
        si(row.missesPerSecond),
        String(row.fetches),
        si(row.batchSize),
        String(row.outOfOrder),
        row.kind === 'try' ? '–' : si(row.awaitFloor),
      ]),
    ),
    notes: [
      'A refill is one request for a grant of runs `[start, end)` sized to about a second of the measured rate (at most 100,000,000 IDs), asked once 10 % of the current grant is used; above the table step the server takes it from the store in one advance.',
      'An `await nextId` loop gives the event loop no turn while IDs are buffered, so its refill goes out when the buffer runs out and the loop waits one round trip per grant (about a second of IDs); a `tryNextId` loop that yields has its next grant before it needs it (empty answers/s near 0).',
      '`await` costs a microtask per ID: the raw `await` floor is `sink = await Promise.resolve(BigInt(++i))` in the same process, the most any awaited ID can reach there; the `await nextId` rows run at about that floor, so on a loaded machine they fall with it.',
      'Snowflake IDs cannot be granted as ranges: every ID carries its millisecond, and one worker mints at most 4,096 per millisecond, so a caller gets at most 4,096,000/s from one server worker however the client buffers (batches of up to 10,000, one request each); more needs more worker IDs (`--workers N`, more nodes).',
      "Out of order: chunks of 10,000 whose last ID is below the previous chunk's (one client, one server: must be 0).",
    ],
  };
  return { rows, section };
}
