// The rules every store applies, in the transaction that adds a tag, to the format rows of
// frond_tag_formats (docs/databases.md): a formatted tag's format and zone are fixed for good,
// and its counters (biz_tag `tag` U+001F `period`, src/core/id-format.ts) carry the same format.
import { FrondError } from '../core/errors.js';
import { parseCounterName } from '../core/id-format.js';
import { type FormatSetting, type NewTag, type OpaqueSetting, tagExists } from '../core/tag-catalogue.js';

/** What a store found under a name, in the add's transaction, before it inserts anything. */
export interface NameState {
  /** leaf_alloc has a row under the name. */
  row: boolean;
  /** The name's frond_tag_formats row, kept for good (a removed formatted tag's too). */
  format: FormatSetting | undefined;
  /** frond_high_water knows the name: it served IDs (or was removed). */
  served: boolean;
  /** frond_tag_options has a setting under the name. */
  opaque: boolean;
}

/**
 * A format together with an opaque setting is refused before anything is read: a formatted number
 * is meant to be read by people, an opaque ID is meant to say nothing.
 */
export function refuseFormatWithOpaque(tag: NewTag, opaque: OpaqueSetting | undefined): void {
  if (tag.format !== undefined && opaque !== undefined)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `tag ${tag.tag}: a tag is formatted or opaque, not both (a formatted number is meant to be read, an opaque ID to say nothing)`,
    );
}

/**
 * Whether a formatted add inserts the name's format row (false: the row kept from before holds the
 * same format and zone), or the refusal: TAG_EXISTS for a name with a row; FORMAT_TAG_FIXED for
 * another format than the one kept, and for a tag (not a counter) under a name that served IDs or
 * is opaque. A counter name that served IDs is fine: its row starts above its high-water.
 */
export function formatRowNeeded(tag: NewTag & { format: FormatSetting }, state: NameState): boolean {
  if (state.row) throw tagExists(tag.tag);
  if (state.format !== undefined) {
    if (sameFormat(state.format, tag.format)) return false;
    throw new FrondError(
      'FORMAT_TAG_FIXED',
      `tag ${tag.tag} was created with the format ${describe(state.format)}, which frond_tag_formats keeps for good: the format ${describe(tag.format)} under that name could repeat one of its numbers; add it with the same format, or use a new name`,
    );
  }
  if (parseCounterName(tag.tag) !== undefined) return true;
  if (state.opaque)
    throw new FrondError(
      'FORMAT_TAG_FIXED',
      `tag ${tag.tag} was an opaque tag and its setting remains in frond_tag_options: it cannot become a formatted tag; use a new name`,
    );
  if (state.served)
    throw new FrondError(
      'FORMAT_TAG_FIXED',
      `tag ${tag.tag} has served IDs before (frond keeps its high-water): a formatted tag under that name would be a different kind of tag; use a new name`,
    );
  return true;
}

/** A plain or opaque tag under a name whose format row outlived its leaf_alloc row. */
export function formatRowRemains(tag: string, format: FormatSetting): FrondError {
  return new FrondError(
    'FORMAT_TAG_FIXED',
    `tag ${tag} was a formatted tag (${describe(format)}) and its format remains in frond_tag_formats (a format is never removed): only the same format may come back under that name; use a new name`,
  );
}

/** Byte for byte: a zone is stored in its canonical spelling, a format as it was written. */
export function sameFormat(a: FormatSetting, b: FormatSetting): boolean {
  return a.format === b.format && a.timeZone === b.timeZone;
}

function describe(format: FormatSetting): string {
  return `${JSON.stringify(format.format)} in ${format.timeZone}`;
}
