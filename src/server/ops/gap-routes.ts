// The admin API's view of a tag's gaps (frond_gaps): `GET /v1/tags/{tag}/gaps` pages through them,
// `POST /v1/tags/{tag}/gaps` records the unused part of a range a client was granted.
import { FrondError } from '../../core/errors.js';
import type { Gap } from '../../core/id-gaps.js';
import { assertValidTag, parseDecimal } from '../../core/tag.js';
import { type TagCatalogue, tagNotFound } from '../../core/tag-catalogue.js';
import { MAX_RANGE_COUNT } from '../ids/v1-handlers.js';
import { idValue, parseObject } from './admin-api.js';

/** A page holds this many gaps unless `?limit=` says otherwise. */
export const DEFAULT_GAPS_LIMIT = 100;
/** The most one page holds (a gap is ~150 bytes of JSON: 1,000 are ~150 KB). */
export const MAX_GAPS_LIMIT = 1_000;
/**
 * The most IDs one `POST` may give up: what one `GET /v1/ranges` grants (MAX_RANGE_COUNT), so a
 * client returns at most what one grant gave it, and a typing mistake cannot write off a tag.
 */
export const MAX_RETURNED_IDS = BigInt(MAX_RANGE_COUNT);
/**
 * Gaps sharing one start are never split over two pages (`after` is a start): a page grows past
 * `limit` to hold them, up to this many, after which the store is not asked for more of that start.
 */
const MAX_SAME_START = 10_000;

/** One gap as the admin API shows it: IDs as decimal strings, `[start, end)`. */
export interface GapJson {
  start: string;
  end: string;
  ids: string;
  reason: Gap['reason'];
  node: string;
  /** When it was recorded (ISO 8601), null when unknown. */
  at: string | null;
}

export interface GapsPage {
  tag: string;
  gaps: GapJson[];
  /** The `after` of the next page, null on the last. */
  next: string | null;
}

export function gapJson(gap: Gap): GapJson {
  return {
    start: gap.start.toString(),
    end: gap.end.toString(),
    ids: (gap.end - gap.start).toString(),
    reason: gap.reason,
    node: gap.node,
    at: gap.at > 0 ? new Date(gap.at).toISOString() : null,
  };
}

/** `?after=START&limit=N`: `after` a start ID (the page holds gaps starting above it), `limit` 1 to 1,000. */
export function gapsQuery(query: string): { after: bigint | undefined; limit: number } {
  const params = new URLSearchParams(query);
  const afterText = params.get('after');
  const limitText = params.get('limit');
  let after: bigint | undefined;
  if (afterText !== null) {
    after = parseDecimal(afterText);
    if (after === undefined)
      throw new FrondError(
        'INVALID_ARGUMENT',
        'after must be a start ID, a decimal integer (the `next` of the page before)',
      );
  }
  let limit = DEFAULT_GAPS_LIMIT;
  if (limitText !== null) {
    limit = /^[0-9]{1,4}$/.test(limitText) ? Number(limitText) : 0;
    if (limit < 1 || limit > MAX_GAPS_LIMIT)
      throw new FrondError('INVALID_ARGUMENT', `limit must be a whole number from 1 to ${MAX_GAPS_LIMIT}`);
  }
  return { after, limit };
}

/**
 * One page of the tag's gaps, by start then end, starting above `after`: `limit` of them, or more
 * so that every gap of the page's last start is in it (the next page starts above that start, so
 * one split there would lose the rest for good).
 */
export async function gapsPage(
  catalogue: Pick<TagCatalogue, 'listGaps'>,
  rawTag: string,
  after: bigint | undefined,
  limit: number,
): Promise<GapsPage> {
  const tag = assertValidTag(rawTag);
  const read = await catalogue.listGaps(tag, after, limit + 1);
  if (read.length <= limit) return { tag, gaps: read.map(gapJson), next: null };
  const page = read.slice(0, limit);
  const last = page[page.length - 1] as Gap;
  const following = read[limit] as Gap;
  if (following.start === last.start) {
    // The rest of that start: read from just below it, at most MAX_SAME_START more.
    const same = await catalogue.listGaps(tag, last.start - 1n, MAX_SAME_START);
    const seen = new Set(page.map((gap) => `${gap.start} ${gap.end}`));
    for (const gap of same) {
      if (gap.start !== last.start) break;
      if (!seen.has(`${gap.start} ${gap.end}`)) page.push(gap);
    }
  }
  return { tag, gaps: page.map(gapJson), next: last.start.toString() };
}

/** What `POST /v1/tags/{tag}/gaps` needs: the row's max_id, and where to record. */
export interface ReturnedRangeDeps {
  catalogue: Pick<TagCatalogue, 'tag' | 'listGaps'>;
  record(gaps: readonly Gap[]): Promise<void>;
  now(): number;
}

/** A recorded return; `repeated` when frond_gaps held that very range already (a retried close). */
export interface ReturnedRange extends Gap {
  repeated?: true;
}

/**
 * Gaps of one start read to find a retry's row: a start shared by more is a range returned in
 * pieces of other ends, where a miss only costs one more count in frond_ids_given_up_total.
 */
const SAME_START_READ = 100;

/**
 * `POST /v1/tags/{tag}/gaps` with `{"start": "1000", "end": "1500"}`: a client returns `[start, end)`,
 * the unused part of a range it was granted (the SDK's close), recorded as `range_unused` by node
 * `client`. The IDs are not issued again: the record says where they went. Refused (400
 * INVALID_ARGUMENT): not a JSON object of those two fields as decimal strings, `start >= end`, more
 * than MAX_RETURNED_IDS IDs, or a range that reaches above the row's max_id (not issued yet, so
 * not the client's to return); 404 TAG_NOT_FOUND without a row.
 */
export async function recordReturnedRange(
  deps: ReturnedRangeDeps,
  rawTag: string,
  text: string,
): Promise<ReturnedRange> {
  const tag = assertValidTag(rawTag);
  const { start, end } = rangeBody(text);
  if (start >= end)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `start ${start} must be below end ${end} (the range is [start, end))`,
    );
  if (start < 0n) throw new FrondError('INVALID_ARGUMENT', `start ${start} is below 0: no ID of a tag is`);
  if (end - start > MAX_RETURNED_IDS)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `[${start}, ${end}) holds ${end - start} IDs; one return holds at most ${MAX_RETURNED_IDS}, what one grant gives`,
    );
  const row = await deps.catalogue.tag(tag);
  if (row === undefined) throw tagNotFound(tag);
  if (end > row.maxId)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `[${start}, ${end}) reaches above tag ${tag}'s max_id ${row.maxId}: those IDs were not granted yet, so they are not a client's to return`,
    );
  // A retry (its first answer lost) finds its row: answered as stored, not counted as given up again.
  const same = await deps.catalogue.listGaps(tag, start - 1n, SAME_START_READ);
  const stored = same.find((gap) => gap.start === start && gap.end === end);
  if (stored !== undefined) return { ...stored, repeated: true };
  const gap: Gap = { tag, start, end, reason: 'range_unused', node: 'client', at: deps.now() };
  await deps.record([gap]);
  return gap;
}

function rangeBody(text: string): { start: bigint; end: bigint } {
  const body = parseObject(text, ['start', 'end']);
  return { start: idField(body, 'start'), end: idField(body, 'end') };
}

/** An ID of the body: a decimal string (any 64-bit value), or a JSON number while it is exact. */
function idField(body: Record<string, unknown>, field: 'start' | 'end'): bigint {
  const id = idValue(body[field]);
  if (id === undefined)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `${field} must be an ID as a decimal string ("9223372036854000000"), as the ID routes answer them`,
    );
  return id;
}
