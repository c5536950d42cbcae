import type { SegmentBufferState } from '../../core/segment-buffer.js';
import type { SnowflakeLayout } from '../../core/snowflake-layout.js';
import type { TagRow } from '../../core/tag-catalogue.js';
import { PageChunks } from './sliced-page.js';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function tableHead(title: string, headers: string[]): string {
  const head = headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif}table{border-collapse:collapse}td,th{border:1px solid #999;padding:2px 8px;text-align:right}</style>
</head><body><h1>${escapeHtml(title)}</h1>
<table><thead><tr>${head}</tr></thead><tbody>
`;
}

export const PAGE_END = '\n</tbody></table></body></html>';

function tableRow(row: (string | number | boolean)[]): string {
  return `<tr>${row.map((cell) => `<td>${escapeHtml(String(cell))}</td>`).join('')}</tr>`;
}

const CACHE_HEADERS = [
  'name',
  'init',
  'next',
  'pos',
  'value0',
  'max0',
  'step0',
  'value1',
  'max1',
  'step1',
  'step',
  'loading',
  'error',
];

function cacheRow(s: SegmentBufferState): (string | number | boolean)[] {
  const [zero, one] = s.slots;
  return [
    s.tag,
    s.initialized,
    s.nextReady,
    s.pos,
    zero.value.toString(),
    zero.max.toString(),
    zero.step,
    one.value.toString(),
    one.max.toString(),
    one.step,
    s.step,
    s.loading,
    s.lastError ? `${s.lastError.code}: ${s.lastError.message}` : '',
  ];
}

/**
 * Leaf's `/cache` (LeafMonitorController.getCache and templates/segment.ftl in Meituan-Dianping/Leaf):
 * Leaf's ten columns first, `name init next pos value0 max0 step0 value1 max1 step1`, where `pos` is
 * the slot in use (it flips at each switch) and each slot shows the next ID it would hand out, its
 * end and its step; then frond's own: the dynamic step, whether a load is running, the last error.
 * Built `slice` rows at a time (a yield between slices, `sliced-page.ts`), by tag name.
 */
export function* cachePageSlices(
  buffers: readonly { readonly tag: string; state(): SegmentBufferState }[],
  slice: number,
): Generator<void, Buffer, void> {
  const sorted = [...buffers];
  // The allocator holds the tags in the table's order, already sorted: a linear check, not a sort
  // (sorting 50,000 names took ~11 ms even when sorted, ~60 ms when not).
  if (!isSortedByTag(sorted)) sorted.sort((a, b) => (a.tag < b.tag ? -1 : 1));
  yield;
  const page = new PageChunks();
  page.text(tableHead('frond segment cache', CACHE_HEADERS));
  for (let i = 0; i < sorted.length; i++) {
    page.row(tableRow(cacheRow((sorted[i] as (typeof sorted)[number]).state())));
    if ((i + 1) % slice === 0) {
      page.flush();
      yield;
    }
  }
  page.text(PAGE_END);
  return page.done();
}

function isSortedByTag(items: readonly { readonly tag: string }[]): boolean {
  for (let i = 1; i < items.length; i++)
    if ((items[i - 1] as { tag: string }).tag > (items[i] as { tag: string }).tag) return false;
  return true;
}

/**
 * Leaf's `/db` (templates/db.ftl): `tag | max | step | update`, one `dbRow` per row between
 * `dbPageHead()` and `PAGE_END`. Leaf reads update_time as a string through MySQL Connector/J 5.1
 * (leaf's pom.xml), which gives a TIMESTAMP as `java.sql.Timestamp`'s `toString()`:
 * `yyyy-MM-dd HH:mm:ss.0` in the server's time zone; frond writes the same.
 */
export function dbPageHead(): string {
  return tableHead('frond leaf_alloc', ['tag', 'max', 'step', 'update']);
}

export function dbRow(r: TagRow): string {
  return tableRow([r.tag, r.maxId.toString(), r.step, r.updateTime ? leafTimestamp(r.updateTime) : '']);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function localDateTime(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** `java.sql.Timestamp.toString()` of a whole second: `2019-09-06 09:35:00.0`; milliseconds when present, trailing zeros dropped. */
export function leafTimestamp(d: Date): string {
  const ms = d.getMilliseconds();
  const fraction = ms === 0 ? '0' : pad(ms, 3).replace(/0+$/, '');
  return `${localDateTime(d)}.${fraction}`;
}

/** The text Leaf answers for anything `Long.parseLong` refuses (LeafMonitorController.decodeSnowflakeId). */
export const LEAF_DECODE_ERROR = 'snowflake Id反解析发生异常!';

const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * Java's `Long.parseLong(text)`: an optional `+` or `-`, then one or more decimal digits (any
 * Unicode decimal digit, as `Character.digit` takes them), within the signed 64-bit range; anything
 * else, including the empty string and blanks, is undefined (Java's NumberFormatException).
 */
export function javaParseLong(text: string): bigint | undefined {
  let sign = 1n;
  let at = 0;
  if (text.startsWith('-')) {
    sign = -1n;
    at = 1;
  } else if (text.startsWith('+')) {
    at = 1;
  }
  const digits = text.slice(at);
  if (digits === '') return undefined;
  let ascii = '';
  for (const ch of digits) {
    if (ch >= '0' && ch <= '9') {
      ascii += ch;
      continue;
    }
    // Unicode decimal digits (Nd) come in runs of ten from a zero: U+0660..U+0669, U+FF10..U+FF19, …
    if (!/^\p{Nd}$/u.test(ch)) return undefined;
    const value = unicodeDigitValue(ch);
    if (value === undefined) return undefined;
    ascii += String(value);
  }
  const value = sign * BigInt(ascii);
  return value < LONG_MIN || value > LONG_MAX ? undefined : value;
}

/**
 * The value of a decimal digit outside ASCII. Java sees UTF-16 units, so a digit beyond the BMP is
 * two non-digits to it. Unicode lays every run of decimal digits out as 0 to 9 in a row, and no two
 * runs in the BMP touch, so the value is the distance down to the run's first code point.
 */
function unicodeDigitValue(ch: string): number | undefined {
  if (ch.length !== 1) return undefined;
  const code = ch.charCodeAt(0);
  let zero = code;
  while (code - zero < 10 && /^\p{Nd}$/u.test(String.fromCharCode(zero - 1))) zero--;
  const value = code - zero;
  return value <= 9 ? value : undefined;
}

/**
 * Leaf's decode answer, field by field as LeafMonitorController.decodeSnowflakeId computes it with
 * Java longs (arithmetic shifts, so negative IDs decode too), in the order its HashMap serializes:
 * `workerId`, `sequenceId`, `timestamp`. The time is `<ms>(yyyy-MM-dd HH:mm:ss.SSS)` in the
 * server's zone (Leaf's SimpleDateFormat). Leaf shifts by 22 and 12 and adds ms; here by the
 * layout's shifts, its units counted in ms (the same for Leaf's 41+10+12 in ms).
 */
export function leafDecodeBody(id: bigint, layout: SnowflakeLayout): Record<string, string> {
  const { timeShift, workerShift } = layout;
  const timestamp = (id >> timeShift) * BigInt(layout.timeUnitMs) + BigInt(layout.epoch);
  const workerId = (id >> workerShift) ^ ((id >> timeShift) << BigInt(layout.workerBits));
  const sequence = id ^ ((id >> workerShift) << workerShift);
  const d = new Date(Number(timestamp));
  const time = `${localDateTime(d)}.${pad(d.getMilliseconds(), 3)}`;
  return {
    workerId: workerId.toString(),
    sequenceId: sequence.toString(),
    timestamp: `${timestamp}(${time})`,
  };
}
