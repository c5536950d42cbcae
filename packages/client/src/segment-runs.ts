import { FrondClientError } from './errors.js';

/**
 * A batch of segment IDs kept as runs of consecutive IDs: `[start0, end0, start1, end1, …]`, ends
 * exclusive, as the server grants them (`/v1/ranges`): a batch of millions is a handful of numbers,
 * and taking an ID is an increment. A run of safe integers holds its IDs
 * themselves (`bases[k]` undefined); a run with an ID beyond ±(2^53 − 1) holds offsets from
 * `bases[k]`, its first ID, so that every 64-bit ID stays exact.
 */
export interface SegmentRuns {
  runs: number[];
  /** One per run: undefined for a run of safe integers, else the run's first ID. */
  bases: (bigint | undefined)[];
  /** How many IDs the runs hold. */
  count: number;
  /**
   * A formatted tag's numbers (text such as `ORD-20261201-000123`): then `runs` is the one run
   * `[0, count)` of their positions, and the buffer hands out `texts[position]`, a string whatever
   * the client's `idType`.
   */
  texts?: string[];
}

/** A signed 64-bit decimal, as the server writes it. */
const DECIMAL = /^-?[0-9]{1,19}$/;
const SAFE_BIG = BigInt(Number.MAX_SAFE_INTEGER);
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * Reads the `ranges` of `GET /v1/ranges/{tag}`: runs `[start, end)` of consecutive IDs as decimal
 * strings, increasing, anywhere in the signed 64-bit range. A run of safe integers keeps its IDs;
 * any other keeps offsets from its start. Anything else is INVALID_RESPONSE, never a rounded ID.
 */
export function parseSegmentRanges(ranges: unknown): SegmentRuns {
  if (!Array.isArray(ranges) || ranges.length === 0) throw invalid('expected a non-empty "ranges" array');
  const runs: number[] = [];
  const bases: (bigint | undefined)[] = [];
  let count = 0;
  let previous: bigint | undefined;
  for (const range of ranges) {
    const { start: startText, end: endText } = (range ?? {}) as { start?: unknown; end?: unknown };
    const start = longOf(startText);
    const end = longOf(endText);
    if (end <= start) throw invalid(`range [${start}, ${end}) is empty`);
    if (previous !== undefined && start < previous)
      throw invalid(`ranges are not increasing: ${start} after ${previous}`);
    const length = end - start;
    if (length > SAFE_BIG - BigInt(count)) throw invalid(`ranges hold more than 2^53 - 1 IDs`);
    if (start >= -SAFE_BIG && end - 1n <= SAFE_BIG) {
      runs.push(Number(start), Number(end));
      bases.push(undefined);
    } else {
      runs.push(0, Number(length));
      bases.push(start);
    }
    count += Number(length);
    previous = end;
  }
  return { runs, bases, count };
}

/** A signed 64-bit decimal string, or the reason it is not. */
function longOf(text: unknown): bigint {
  if (typeof text !== 'string' || !DECIMAL.test(text))
    throw invalid(`range bound ${JSON.stringify(String(text).slice(0, 40))} is not a decimal integer`);
  const value = BigInt(text);
  // An exclusive end may be 2^63 - 1 itself; nothing lies outside the signed 64-bit range.
  if (value < LONG_MIN || value > LONG_MAX) throw invalid(`${text} is outside the signed 64-bit range`);
  return value;
}

function invalid(detail: string): FrondClientError {
  return new FrondClientError('INVALID_RESPONSE', `invalid segment response: ${detail}`);
}
