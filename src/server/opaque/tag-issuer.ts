import { FrondError } from '../../core/errors.js';
import { COUNTER_SEPARATOR } from '../../core/id-format.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { IdRun, SegmentId } from '../../core/segment-buffer.js';
import { assertValidTag } from '../../core/tag.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { KindChangedError } from '../../core/tag-kind.js';
import { FormattedTag } from './formatted-tag.js';
import { OpaqueTag, type OpaqueTags, PLAIN, type TagMode } from './opaque-tags.js';

/** What a route is given: a plain or opaque ID (a number), or a formatted tag's number (text). */
export type IssuedId = SegmentId | bigint | string;

/** The modes that issue IDs: everything a tag may be served as but a refusal. */
type Serving = typeof PLAIN | OpaqueTag | FormattedTag;

/**
 * A tag that changes kind between two grants is learned and tried again; three tries cover a row
 * deleted and created again twice while one request waited, which no operator does on purpose.
 */
const KIND_ATTEMPTS = 3;

/**
 * Where plain and opaque issuing is decided, once for every route: the mode this node last learned
 * for the tag (OpaqueTags), checked against the kind of every segment it takes. A segment of
 * another kind is refused before any ID is taken (KindChangedError), the granted kind is learned,
 * and the take is tried again in that kind.
 */
export class TagIssuer {
  constructor(
    readonly segment: SegmentAllocator<CataloguedStore>,
    private readonly opaque: OpaqueTags | undefined,
  ) {}

  /** An ID if one is ready in the tag's known kind, without a promise; undefined otherwise. */
  tryOne(tag: string): IssuedId | undefined {
    const mode = this.opaque?.modeOf(tag);
    if (mode === undefined || mode === PLAIN) return this.segment.tryNext(tag);
    return mode instanceof OpaqueTag || mode instanceof FormattedTag ? mode.tryNext() : undefined;
  }

  one(tag: string): Promise<IssuedId> {
    return this.issue<IssuedId>(tag, (mode) => (mode === PLAIN ? this.segment.next(tag) : mode.next()));
  }

  many(tag: string, count: number): Promise<IssuedId[]> {
    return this.issue<IssuedId[]>(tag, (mode) =>
      mode === PLAIN ? this.segment.nextMany(tag, count) : mode.nextMany(count),
    );
  }

  /** Runs of consecutive IDs; an opaque tag has none (OPAQUE_NO_RANGES), nor a formatted one (FORMAT_NO_RANGES). */
  ranges(tag: string, count: number): Promise<IdRun[]> {
    return this.issue(tag, (mode) => {
      if (mode instanceof FormattedTag)
        throw new FrondError(
          'FORMAT_NO_RANGES',
          `tag ${tag} is formatted (${mode.format.setting.format}): its numbers are text, not runs of integers, so /v1/ranges cannot grant them; use /v1/segment/${encodeURIComponent(tag)}?count=N`,
        );
      if (mode !== PLAIN)
        throw new FrondError(
          'OPAQUE_NO_RANGES',
          `tag ${tag} is opaque: its IDs are not consecutive, so /v1/ranges cannot grant them; use /v1/segment/${encodeURIComponent(tag)}?count=N`,
        );
      return this.segment.grant(tag, count);
    });
  }

  private async issue<T>(tag: string, take: (mode: Serving) => Promise<T>): Promise<T> {
    // A formatted tag's counter is a row of the table, but not a tag: reached through its tag only.
    if (tag.includes(COUNTER_SEPARATOR)) assertValidTag(tag);
    const opaque = this.opaque;
    for (let attempt = 1; ; attempt++) {
      const mode: TagMode = opaque === undefined ? PLAIN : await opaque.current(tag);
      if (mode instanceof FrondError) throw mode;
      try {
        return await take(mode);
      } catch (error) {
        if (!(error instanceof KindChangedError) || opaque === undefined || attempt >= KIND_ATTEMPTS)
          throw error;
        opaque.learn(tag, error.kind);
      }
    }
  }
}
