import { parseCounterName } from '../core/id-format.js';
import type { NewTag } from '../core/tag-catalogue.js';

/**
 * The record every fence raises for the names a database does not know. A restore (or a failover
 * that lost commits) can forget a whole tag: one added after the backup was taken and served
 * before the restore leaves no row and no frond_high_water record behind, so nothing the fence
 * raises covers it, and the same name added again started at 1 and served those IDs again (2,000 of
 * 6,000 on each store, a node with a new data dir). So frond_high_water keeps one row more, under
 * a name no tag can have (tags have no control characters, src/core/tag.ts): it is never granted
 * from, a fence raises it by the skip as it raises a removed tag's record (it has no leaf_alloc
 * row), and a name without a record of its own starts from it, whether frond adds the row or a
 * person inserts it by hand. A database never fenced has no such row, and new names start where
 * their row says, as on Leaf.
 */
export const NEW_NAMES = '\u0001frond new names';

/** NEW_NAMES as an SQL string literal: the text is fixed, so it is spliced in, not bound. */
const NEW_NAMES_SQL = `'${NEW_NAMES}'`;

/**
 * How a store compares a column with a literal byte for byte. PostgreSQL and SQLite compare text
 * so by default; MySQL/MariaDB's Unicode collations ignore U+0001 and case, and there a tag named
 * `New Names` read as the record (seen with utf8mb4_unicode_ci), so it passes its own.
 */
export type ExactText = (column: string, literal: string) => string;
const plainEquals: ExactText = (column, literal) => `${column} = ${literal}`;

/**
 * The record a name goes on from, in SQL: its own frond_high_water row, or for a name without one
 * the new-names record, or `fallback` when there is neither. `tag` is the SQL expression of the
 * name (a parameter or a column).
 */
export function recordOf(tag: string, fallback: string, exact: ExactText = plainEquals): string {
  return `COALESCE((SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = ${tag}), (SELECT n.max_id FROM frond_high_water n WHERE ${exact('n.biz_tag', NEW_NAMES_SQL)}), ${fallback})`;
}

/**
 * The statement's tail that makes the new-names record (at 0, where missing) before a fence raises
 * it; a fence that raises nothing (a skip of 0) leaves it as it is.
 */
export const NEW_NAMES_ROW = `(biz_tag, max_id) VALUES (${NEW_NAMES_SQL}, 0)`;

/**
 * How far a node's clock may be from its database's: an hour. The new-names record guards against
 * a name the database lost whole; a counter of a period can have served IDs only once some node's
 * clock said the period had begun, and a fence runs after what the database lost. So a counter
 * whose period starts more than this after the last fence (by the database's clock) cannot have
 * lost anything, and starts from its own record, not from the floor the fence raised: one
 * failover uses up the current period of a `{seq:N}` tag (and the next, if it starts within the
 * hour), not every period after it.
 */
export const FENCE_CLOCK_MARGIN_MS = 60 * 60 * 1000;

/**
 * MySQL's TIMESTAMP and SQLite's CURRENT_TIMESTAMP keep whole seconds, cut down: a fence may have
 * run up to a second after its fenced_at says.
 */
const FENCED_AT_PRECISION_MS = 1000;

/**
 * Whether `tag`, a counter being added, starts from its own frond_high_water record only, the
 * new-names record left aside: a counter name with a format and `periodStartMs`, on a database
 * whose fence row says it was last fenced at `fencedAtMs` (the database's time, read in the add's
 * transaction, under the lock fences take), more than FENCE_CLOCK_MARGIN_MS before the period
 * starts. No fence row (undefined or null), no period start, or any doubt: the floor applies.
 */
export function startsAfterFence(tag: NewTag, fencedAtMs: number | null | undefined): boolean {
  const { periodStartMs } = tag;
  if (tag.format === undefined || periodStartMs === undefined || !Number.isFinite(periodStartMs))
    return false;
  if (parseCounterName(tag.tag) === undefined) return false;
  if (fencedAtMs === null || fencedAtMs === undefined || !Number.isFinite(fencedAtMs)) return false;
  return periodStartMs > fencedAtMs + FENCED_AT_PRECISION_MS + FENCE_CLOCK_MARGIN_MS;
}

/**
 * The record a counter that starts after the last fence goes on from (`startsAfterFence`): its own
 * frond_high_water row (a counter removed by the clean-up and created again), or `fallback`.
 */
export function ownRecordOf(tag: string, fallback: string): string {
  return `COALESCE((SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = ${tag}), ${fallback})`;
}
