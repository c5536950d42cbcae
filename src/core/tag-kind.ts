import { FrondError } from './errors.js';
import type { FormatSetting } from './id-format.js';

export type { FormatSetting } from './id-format.js';

/**
 * An opaque tag's setting, in frond's own table `frond_tag_options` beside `leaf_alloc`: the domain
 * (`bits:63`, `digits:11`) and the key check of the secret that created it (`OpaqueSecret.keyCheck`).
 */
export interface OpaqueSetting {
  domain: string;
  keyCheck: string;
}

/**
 * How a tag's IDs are issued: plain segment IDs, or opaque ones under a setting (and the formats to
 * come). A store reads it in the same transaction that grants a segment and returns it with the
 * grant (`Allocation.kind`), so no process serves a segment under a kind it remembered from earlier:
 * a row deleted and created again with another kind is seen by the first segment loaded after it.
 */
export interface TagKind {
  readonly opaque: OpaqueSetting | null;
  /** A formatted tag's format and zone (frond_tag_formats), on the tag and on each of its counters. */
  readonly format: FormatSetting | null;
}

export const PLAIN_KIND: TagKind = Object.freeze({ opaque: null, format: null });

/**
 * The kind as one string, equal for equal kinds: `''` for plain, `opaque <domain> <key check>`,
 * `format ["<format>","<zone>"]` (JSON: a format may hold spaces). A tag is never both.
 */
export function kindKey(kind: TagKind): string {
  if (kind.opaque !== null) return `opaque ${kind.opaque.domain} ${kind.opaque.keyCheck}`;
  if (kind.format !== null) return `format ${JSON.stringify([kind.format.format, kind.format.timeZone])}`;
  return '';
}

/**
 * A kind from a row's option columns as SQL returns them (NULL: none): the opaque domain and key
 * check (frond_tag_options), and the format and zone (frond_tag_formats).
 */
export function kindOf(
  domain: string | null | undefined,
  keyCheck: string | null | undefined,
  format?: string | null,
  timeZone?: string | null,
): TagKind {
  const opaque =
    domain === null || domain === undefined || keyCheck === null || keyCheck === undefined
      ? null
      : { domain, keyCheck };
  const formatted =
    format === null || format === undefined || timeZone === null || timeZone === undefined
      ? null
      : { format, timeZone };
  return opaque === null && formatted === null ? PLAIN_KIND : { opaque, format: formatted };
}

/** A kind's name for people: `plain`, `opaque (bits:63)`, `formatted (ORD-{seq:6}, UTC)`. */
export function kindName(kind: TagKind): string {
  if (kind.opaque !== null) return `opaque (${kind.opaque.domain})`;
  if (kind.format !== null) return `formatted (${kind.format.format}, ${kind.format.timeZone})`;
  return 'plain';
}

/**
 * A segment of another kind than the caller serves: thrown before any ID is taken, with the kind
 * the store granted, so the caller serves the tag under that kind instead.
 */
export class KindChangedError extends FrondError {
  constructor(
    tag: string,
    readonly kind: TagKind,
  ) {
    super(
      'TAG_KIND_CHANGED',
      `tag ${tag} is ${kindName(kind)} in the store now, not what this node served it as (the row was deleted and created again); retry`,
    );
  }
}
