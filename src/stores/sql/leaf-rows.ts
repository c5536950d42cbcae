// What the stores on a database server (PostgreSQL, MySQL) read alike from Leaf's `leaf_alloc` and
// frond's `frond_tag_options`; SQLite reads the options the same way (its rows come typed apart).
import type { OpaqueSetting, TagRow } from '../../core/tag-catalogue.js';

/** A `leaf_alloc` row as both drivers return it: BIGINT as text, so values above 2^53 stay exact. */
export interface RawRow {
  biz_tag: string;
  max_id: string;
  step: number;
  description: string | null;
  update_time: Date | null;
}

export const COLUMNS = 'biz_tag, max_id, step, description, update_time';

export function toTagRow(row: RawRow): TagRow {
  return {
    tag: row.biz_tag,
    maxId: BigInt(row.max_id),
    step: Number(row.step),
    description: row.description,
    updateTime: row.update_time,
  };
}

/** A row of `frond_tag_options` (LEFT JOINed: null columns for a plain tag). */
export interface OptionRow {
  biz_tag?: string;
  opaque_domain: string | null;
  key_check: string | null;
}

/** The opaque setting of a joined row; null for a plain tag. */
export function settingOf(row: OptionRow): OpaqueSetting | null {
  return row.opaque_domain === null || row.key_check === null
    ? null
    : { domain: row.opaque_domain, keyCheck: row.key_check };
}

export function opaqueMap(rows: readonly OptionRow[]): Map<string, OpaqueSetting> {
  const map = new Map<string, OpaqueSetting>();
  for (const row of rows) {
    const setting = settingOf(row);
    if (setting && row.biz_tag !== undefined) map.set(row.biz_tag, setting);
  }
  return map;
}
