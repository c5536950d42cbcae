// How fast @frond/client hands out IDs from its local buffer, against a raw `++i` counter measured in
// the same run. Run from the repository root after `npm install` (it builds dist/ for `frond serve`
// and packages/client/dist for the client): `node --import tsx bench/client-buffer.ts`. Prints a
// markdown table and writes it to bench/client-buffer.md.
//
// "From the buffer" is measured in bursts: wait until the buffer holds BURST IDs, then time taking
// exactly that many, so no burst waits for the network; the refills happen between bursts, untimed.
// The last row times a run with the refills over HTTP included; `npm run bench` measures the
// sustained rates properly, each loop in a process of its own (bench/client.ts).
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { createClient, type FrondClient, type IdType } from '@frond/client';
import { runFrond, startFrond, tempDir } from '../test/support/frond-process.js';

/** IDs per timed burst. */
const BURST = 10_000;
/** Timed bursts per row: 5 million IDs. */
const BURSTS = 500;
const WARMUP_BURSTS = 50;
const SUSTAINED_IDS = 2_000_000;
const TAG = 'bench-client';

/** Written by every loop so the compiler cannot drop the work. */
let sink: unknown;

interface Row {
  path: string;
  idType: string;
  idsPerSecond: number;
  target?: number;
}

function now(): bigint {
  return process.hrtime.bigint();
}

let counter = 0;

function countSync(count: number): void {
  let i = counter;
  for (let k = 0; k < count; k++) sink = ++i;
  counter = i;
}

function countBigInt(count: number): void {
  let i = counter;
  for (let k = 0; k < count; k++) sink = BigInt(++i);
  counter = i;
}

function countString(count: number): void {
  let i = counter;
  for (let k = 0; k < count; k++) sink = String(++i);
  counter = i;
}

/** The same bursts as the client rows, around a bare counter. */
function rawCounter(loop: (count: number) => void): number {
  let total = 0n;
  for (let burst = 0; burst < WARMUP_BURSTS + BURSTS; burst++) {
    const started = now();
    loop(BURST);
    if (burst >= WARMUP_BURSTS) total += now() - started;
  }
  return (BURSTS * BURST * 1e9) / Number(total);
}

/** Waits (untimed) until `BURST` IDs are buffered; bounded to 10 s. */
async function filled(client: FrondClient<unknown>): Promise<void> {
  for (let round = 0; round < 10_000; round++) {
    const state = client.state().tags[TAG];
    if (state !== undefined && state.available >= BURST && !state.fetching) return;
    await delay(1);
  }
  throw new Error('the buffer did not fill within 10 s');
}

async function primed(url: string, idType: IdType): Promise<FrondClient<unknown>> {
  const client = createClient({ urls: [url], idType }) as FrondClient<unknown>;
  // Taking many IDs quickly makes the grants grow with the rate.
  for (let i = 0; i < 20; i++) await client.nextIds(TAG, BURST);
  await filled(client);
  return client;
}

// The timed loops are functions of their own, so they are optimized as a whole rather than entered
// through on-stack replacement from the long-running async functions below.
function takeSync(client: FrondClient<unknown>, count: number): void {
  for (let k = 0; k < count; k++) sink = client.tryNextId(TAG);
}

async function takeAwaited(client: FrondClient<unknown>, count: number): Promise<void> {
  for (let k = 0; k < count; k++) sink = await client.nextId(TAG);
}

async function syncTake(url: string, idType: IdType): Promise<number> {
  const client = await primed(url, idType);
  let total = 0n;
  for (let burst = 0; burst < WARMUP_BURSTS + BURSTS; burst++) {
    await filled(client);
    const started = now();
    takeSync(client, BURST);
    if (burst >= WARMUP_BURSTS) total += now() - started;
    if (sink === undefined) throw new Error('tryNextId found the buffer empty inside a burst');
  }
  client.close();
  return (BURSTS * BURST * 1e9) / Number(total);
}

async function awaitedTake(url: string, idType: IdType): Promise<number> {
  const client = await primed(url, idType);
  let total = 0n;
  for (let burst = 0; burst < WARMUP_BURSTS + BURSTS; burst++) {
    await filled(client);
    const started = now();
    await takeAwaited(client, BURST);
    if (burst >= WARMUP_BURSTS) total += now() - started;
  }
  client.close();
  return (BURSTS * BURST * 1e9) / Number(total);
}

/** Everything included: refills over HTTP from one local frond process, as a caller would see it. */
async function sustained(url: string): Promise<number> {
  const client = createClient({ urls: [url] });
  await client.nextId(TAG);
  const started = now();
  for (let k = 0; k < SUSTAINED_IDS; k++) sink = await client.nextId(TAG);
  const elapsed = now() - started;
  client.close();
  return (SUSTAINED_IDS * 1e9) / Number(elapsed);
}

/**
 * A table laid out as the repository's formatter (Biome) lays out markdown, so the written file
 * passes `npm run lint` as it is. A header starting with a space marks a right-aligned column.
 */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const right = header.map((cell) => cell.startsWith(' '));
  const cells = [header.map((cell) => cell.trim()), ...rows];
  const widths = header.map((_, column) => Math.max(3, ...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: readonly string[]) =>
    `| ${row
      .map((cell, column) => {
        const width = widths[column] ?? 0;
        return right[column] ? cell.padStart(width) : cell.padEnd(width);
      })
      .join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (right[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [line(cells[0] ?? []), rule, ...rows.map(line)];
}

function millions(idsPerSecond: number): string {
  return (idsPerSecond / 1e6).toFixed(1);
}

async function main(): Promise<void> {
  const dir = tempDir('frond-bench-');
  const created = await runFrond(['db', 'init', '--data-dir', dir]);
  if (created.code !== 0) throw new Error(`db init failed: ${created.stderr}`);
  const added = await runFrond(['tag', 'add', TAG, '--data-dir', dir, '--step', '100000']);
  if (added.code !== 0) throw new Error(`tag add failed: ${added.stderr}`);
  const server = await startFrond(['--port', '0', '--data-dir', dir, '--worker-id', '1']);
  const rows: Row[] = [];
  let counted: number;
  try {
    counted = rawCounter(countSync);
    rows.push({ path: 'raw counter `sink = ++i`', idType: 'number', idsPerSecond: counted });
    // What the conversion alone costs: the floor under the bigint and string rows.
    rows.push({
      path: 'raw counter `sink = BigInt(++i)`',
      idType: 'bigint',
      idsPerSecond: rawCounter(countBigInt),
    });
    rows.push({
      path: 'raw counter `sink = String(++i)`',
      idType: 'string',
      idsPerSecond: rawCounter(countString),
    });
    // The default type first: later clients of other types make the shared call sites polymorphic.
    for (const idType of ['bigint', 'number', 'string'] as const) {
      rows.push({
        path: '`tryNextId(tag)`',
        idType,
        idsPerSecond: await syncTake(server.url, idType),
        target: 50e6,
      });
      rows.push({
        path: '`await nextId(tag)`',
        idType,
        idsPerSecond: await awaitedTake(server.url, idType),
        target: 10e6,
      });
    }
    rows.push({
      path: '`await nextId(tag)`, refills over HTTP included',
      idType: 'bigint',
      idsPerSecond: await sustained(server.url),
    });
  } finally {
    await server.stop();
  }
  const cpu = cpus();
  const header = [
    '# @frond/client: IDs from the local buffer, in bursts',
    '',
    `${new Date().toISOString()} · ${cpu[0]?.model.trim() ?? 'unknown CPU'} (${cpu.length} cores) · ${Math.round(totalmem() / 2 ** 30)} GiB · Node ${process.version} · ${process.platform} ${process.arch}`,
    '',
    `\`node --import tsx bench/client-buffer.ts\`: ${BURSTS} timed bursts of ${BURST.toLocaleString('en')} IDs per row after ${WARMUP_BURSTS} warm-up bursts, each burst taken from a buffer that already holds it (refills happen between bursts, untimed); one local \`frond serve\` (SQLite) feeds the buffer. The last row times ${SUSTAINED_IDS.toLocaleString('en')} IDs with the HTTP refills included. Sustained rates, each loop in a process of its own: \`npm run bench\`, bench/RESULTS.md.`,
    '',
  ];
  const table = markdownTable(
    ['path', 'idType', ' M IDs/s', ' ns/ID', ' ratio to `++i`', 'target'],
    rows.map((row) => [
      row.path,
      row.idType,
      millions(row.idsPerSecond),
      (1e9 / row.idsPerSecond).toFixed(1),
      (row.idsPerSecond / counted).toFixed(3),
      row.target === undefined
        ? ''
        : `≥ ${millions(row.target)} M/s: ${row.idsPerSecond >= row.target ? 'met' : '**missed**'}`,
    ]),
  );
  const text = `${[...header, ...table].join('\n')}\n`;
  process.stdout.write(text);
  writeFileSync(new URL('./client-buffer.md', import.meta.url), text);
  if (typeof sink === 'symbol') process.stdout.write('');
}

await main();
