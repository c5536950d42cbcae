// What the stores on a database server (PostgreSQL, MySQL) read alike from Leaf's `leaf_alloc` and
// frond's `frond_tag_options` and `frond_tag_formats`; SQLite reads the options and formats the same
// way (its rows come typed apart).
import { parseCounterName } from '../../core/id-format.js';
import type { FormatSetting, OpaqueSetting, TagRow } from '../../core/tag-catalogue.js';

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

/** A row of `frond_tag_formats` (LEFT JOINed: null columns for a tag without a format). */
export interface FormatRow {
  biz_tag?: string;
  id_format: string | null;
  time_zone: string | null;
}

/** The format of a joined row; null for a tag that is not formatted. */
export function formatOf(row: FormatRow): FormatSetting | null {
  return row.id_format === null || row.time_zone === null
    ? null
    : { format: row.id_format, timeZone: row.time_zone };
}

/**
 * The formats of the user tags among `rows` (`listFormats`): a counter's row (a name
 * parseCounterName reads, tag U+001F period) has its tag's format and is left out.
 */
export function formatMap(rows: readonly FormatRow[]): Map<string, FormatSetting> {
  const map = new Map<string, FormatSetting>();
  for (const row of rows) {
    const format = formatOf(row);
    if (format && row.biz_tag !== undefined && parseCounterName(row.biz_tag) === undefined)
      map.set(row.biz_tag, format);
  }
  return map;
}
