import { FrondError } from './errors.js';

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
}

export const PLAIN_KIND: TagKind = Object.freeze({ opaque: null });

/** The kind as one string, equal for equal kinds: `''` for plain, `opaque <domain> <key check>`. */
export function kindKey(kind: TagKind): string {
  return kind.opaque === null ? '' : `opaque ${kind.opaque.domain} ${kind.opaque.keyCheck}`;
}

/** A kind from a row's option columns as SQL returns them (both NULL: plain). */
export function kindOf(domain: string | null | undefined, keyCheck: string | null | undefined): TagKind {
  return domain === null || domain === undefined || keyCheck === null || keyCheck === undefined
    ? PLAIN_KIND
    : { opaque: { domain, keyCheck } };
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
      `tag ${tag} is ${kind.opaque === null ? 'plain' : `opaque (${kind.opaque.domain})`} in the store now, not what this node served it as (the row was deleted and created again); retry`,
    );
  }
}
