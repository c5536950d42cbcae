import { FrondClientError } from './errors.js';

/**
 * A batch of segment IDs kept as runs of consecutive IDs: `[start0, end0, start1, end1, …]`, ends
 * exclusive. A batch of 10,000 IDs spans one or a few server segments, so it is a handful of numbers
 * instead of 10,000 values, and taking an ID is an increment. A run of safe integers holds its IDs
 * themselves (`bases[k]` undefined); a run with an ID beyond ±(2^53 − 1) holds offsets from
 * `bases[k]`, its first ID, so that every 64-bit ID stays exact.
 */
export interface SegmentRuns {
  runs: number[];
  /** One per run: undefined for a run of safe integers, else the run's first ID. */
  bases: (bigint | undefined)[];
  /** How many IDs the runs hold. */
  count: number;
}

/** A signed 64-bit decimal, as the server writes it. */
const DECIMAL = /^-?[0-9]{1,19}$/;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const SAFE_BIG = BigInt(MAX_SAFE);
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * Reads the `ids` of `GET /v1/segment/{tag}`: decimal strings, strictly increasing, anywhere in the
 * signed 64-bit range (Leaf's `long`). Anything else is INVALID_RESPONSE, never a rounded ID.
 */
export function parseSegmentIds(ids: unknown): SegmentRuns {
  if (!Array.isArray(ids) || ids.length === 0) throw invalid('expected a non-empty "ids" array');
  const runs: number[] = [];
  const bases: (bigint | undefined)[] = [];
  // The run being read: a number run expects `end` next (NaN until the first ID: no string
  // converts to it); a run with a base expects `bigNext`.
  let end = Number.NaN;
  let base: bigint | undefined;
  let bigNext = 0n;
  for (const text of ids) {
    if (base === undefined) {
      // The common case: the next ID of a run of safe integers. `end` is checked and at most
      // 2^53 - 1 here, so this ID is exact too.
      const id = typeof text === 'string' ? Number(text) : Number.NaN;
      if (id === end && end <= MAX_SAFE) {
        end = id + 1;
        continue;
      }
    } else if (typeof text === 'string' && DECIMAL.test(text) && BigInt(text) === bigNext) {
      bigNext++;
      continue;
    }
    if (typeof text !== 'string' || !DECIMAL.test(text)) {
      throw invalid(`ID ${JSON.stringify(String(text).slice(0, 40))} is not a decimal integer`);
    }
    const id = BigInt(text);
    if (id < LONG_MIN || id > LONG_MAX) throw invalid(`ID ${text} is outside the signed 64-bit range`);
    const last = runs.length === 0 ? undefined : base === undefined ? BigInt(end - 1) : bigNext - 1n;
    if (last !== undefined && id <= last) throw invalid(`IDs are not increasing: ${id} after ${last}`);
    if (runs.length > 0) runs.push(base === undefined ? end : Number(bigNext - base));
    if (id >= -SAFE_BIG && id <= SAFE_BIG) {
      base = undefined;
      end = Number(id) + 1;
      runs.push(Number(id));
    } else {
      base = id;
      bigNext = id + 1n;
      runs.push(0);
    }
    bases.push(base);
  }
  runs.push(base === undefined ? end : Number(bigNext - base));
  return { runs, bases, count: ids.length };
}

function invalid(detail: string): FrondClientError {
  return new FrondClientError('INVALID_RESPONSE', `invalid segment response: ${detail}`);
}
