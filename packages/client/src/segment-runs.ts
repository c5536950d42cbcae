import { FrondClientError } from './errors.js';

/**
 * A batch of segment IDs kept as runs of consecutive IDs: `[start0, end0, start1, end1, …]`, ends
 * exclusive. A batch of 10,000 IDs spans one or a few server segments, so it is a handful of numbers
 * instead of 10,000 values, and taking an ID is an increment.
 */
export interface SegmentRuns {
  runs: number[];
  /** How many IDs the runs hold. */
  count: number;
}

const DECIMAL = /^[0-9]{1,16}$/;

/**
 * Reads the `ids` of `GET /v1/segment/{tag}`: decimal strings, strictly increasing. frond serves
 * segment IDs up to 2^53 - 1 (ID_RANGE_EXHAUSTED beyond), so each one is exact as a number; anything
 * else is INVALID_RESPONSE, never a rounded ID.
 */
export function parseSegmentIds(ids: unknown): SegmentRuns {
  if (!Array.isArray(ids) || ids.length === 0) throw invalid('expected a non-empty "ids" array');
  const runs: number[] = [];
  // NaN until the first ID: no string converts to it, so the first ID is always checked in full.
  let end = Number.NaN;
  for (const text of ids) {
    const id = typeof text === 'string' ? Number(text) : Number.NaN;
    if (id === end) {
      // The common case: the next ID of the run. `end` is a checked integer, so this one is too.
      end = id + 1;
      continue;
    }
    if (typeof text !== 'string' || !DECIMAL.test(text) || !Number.isSafeInteger(id)) {
      throw invalid(`ID ${JSON.stringify(String(text).slice(0, 40))} is not a decimal below 2^53`);
    }
    if (id < end) throw invalid(`IDs are not increasing: ${id} after ${end - 1}`);
    if (runs.length > 0) runs.push(end);
    runs.push(id);
    end = id + 1;
  }
  runs.push(end);
  return { runs, count: ids.length };
}

function invalid(detail: string): FrondClientError {
  return new FrondClientError('INVALID_RESPONSE', `invalid segment response: ${detail}`);
}
