import { FrondError } from '../../core/errors.js';
import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { IdRun, SegmentId } from '../../core/segment-buffer.js';
import type { CataloguedStore } from '../../core/tag-catalogue.js';
import { KindChangedError } from '../../core/tag-kind.js';
import { OpaqueTag, type OpaqueTags, PLAIN, type TagMode } from './opaque-tags.js';

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
  tryOne(tag: string): SegmentId | bigint | undefined {
    const mode = this.opaque?.modeOf(tag);
    if (mode === undefined || mode === PLAIN) return this.segment.tryNext(tag);
    return mode instanceof OpaqueTag ? mode.tryNext() : undefined;
  }

  one(tag: string): Promise<SegmentId | bigint> {
    return this.issue(tag, (mode) => (mode === PLAIN ? this.segment.next(tag) : mode.next()));
  }

  many(tag: string, count: number): Promise<(SegmentId | bigint)[]> {
    return this.issue(tag, (mode) =>
      mode === PLAIN ? this.segment.nextMany(tag, count) : mode.nextMany(count),
    );
  }

  /** Runs of consecutive IDs; an opaque tag has none (OPAQUE_NO_RANGES). */
  ranges(tag: string, count: number): Promise<IdRun[]> {
    return this.issue(tag, (mode) => {
      if (mode !== PLAIN)
        throw new FrondError(
          'OPAQUE_NO_RANGES',
          `tag ${tag} is opaque: its IDs are not consecutive, so /v1/ranges cannot grant them; use /v1/segment/${encodeURIComponent(tag)}?count=N`,
        );
      return this.segment.grant(tag, count);
    });
  }

  private async issue<T>(tag: string, take: (mode: typeof PLAIN | OpaqueTag) => Promise<T>): Promise<T> {
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
