import { domainCapacity, formatDomain, parseDomain } from './opaque-codec.js';
import { MAX_SEGMENT_ID } from './segment-store.js';
import type { OpaqueSetting, TagRow } from './tag-catalogue.js';

/**
 * The ID columns a downstream table often has, by their largest value. A fence raises every tag by
 * the skip (10^9 by default), so a tag at 147,483,648 passes a signed INT after two fences, and one
 * at 1,147,483,648 after one; IDs past the column's largest fail the application's inserts (or, in
 * a lax sql_mode, are cut to it and repeat).
 */
export const ID_COLUMNS: readonly { largest: bigint; name: string }[] = [
  { largest: 2n ** 31n - 1n, name: 'a signed 32-bit INT column' },
  { largest: 2n ** 32n - 1n, name: 'an unsigned 32-bit INT column' },
];

/** One thing that makes the next fences dangerous for a tag. */
export interface FenceRisk {
  tag: string;
  maxId: bigint;
  step: number;
  /** `plain`, or the opaque domain (`bits:20`). */
  kind: string;
  finding: string;
}

/**
 * What the next two fences, each raising every tag by `skip` from its max_id, would do that a
 * person should know first (`frond db check`), tag by tag in the order of `rows`:
 * - a plain tag whose IDs fit a 32-bit column (ID_COLUMNS) today and pass it after one or two fences;
 * - a tag whose step is larger than the skip: a segment granted on a primary and lost in a failover
 *   reaches past the fence, so the new primary hands part of it out again;
 * - an opaque tag whose domain one or two fences use up (its IDs end at the domain's capacity; a
 *   domain smaller than the skip is used up by the first);
 * - any tag that one or two fences leave no room below 2^63 - 1 for a segment of its step (a fence
 *   raises a tag within the skip of 2^63 - 1 to it).
 */
export function fenceRisks(
  rows: readonly TagRow[],
  opaque: ReadonlyMap<string, OpaqueSetting>,
  skip: bigint,
): FenceRisk[] {
  const risks: FenceRisk[] = [];
  for (const row of rows) {
    const setting = opaque.get(row.tag);
    const domain = setting === undefined ? undefined : parseDomain(setting.domain);
    const kind = domain === undefined ? 'plain' : formatDomain(domain);
    const add = (finding: string) =>
      risks.push({ tag: row.tag, maxId: row.maxId, step: row.step, kind, finding });
    // The first ID after n fences is max_id + n × skip; `largest` is the last one that fits.
    const fences = (largest: bigint): 1 | 2 | undefined =>
      row.maxId + skip > largest ? 1 : row.maxId + 2n * skip > largest ? 2 : undefined;
    // `the next fence takes`, `two fences take`.
    const fencesDo = (n: 1 | 2, verb: string) => (n === 1 ? `the next fence ${verb}s` : `two fences ${verb}`);
    if (domain === undefined) {
      for (const column of ID_COLUMNS) {
        // IDs past the column already: the column is not that one.
        if (row.maxId - 1n > column.largest) continue;
        const n = fences(column.largest);
        if (n !== undefined)
          add(`${fencesDo(n, 'take')} its IDs past ${column.largest}, the largest of ${column.name}`);
      }
    } else {
      const capacity = domainCapacity(domain);
      const n = fences(capacity);
      if (n !== undefined)
        add(
          `${fencesDo(n, 'use')} up its ${capacity} segment IDs${capacity < skip ? ' (fewer than the skip)' : ''}`,
        );
    }
    if (BigInt(row.step) > skip)
      add(
        `its step is larger than the skip: a segment lost in a failover reaches past the fence, and is handed out again`,
      );
    // A segment must end at 2^63 - 1 or below: past MAX - step, none fits.
    const top = fences(MAX_SEGMENT_ID - BigInt(row.step));
    if (top !== undefined)
      add(`${fencesDo(top, 'leave')} no room for a segment below 2^63 - 1: it is used up`);
  }
  return risks;
}
