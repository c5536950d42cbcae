import { FrondError } from './errors.js';
import type { HandBackResult, HeldRange } from './id-gaps.js';
import type { TagKind } from './tag-kind.js';

/** The largest Java long, 2^63 - 1: max_id never passes it (Leaf's max_id is a `long`, the column a BIGINT). */
export const MAX_SEGMENT_ID = 2n ** 63n - 1n;

/** What one `advance` did: the range it reserved is `[maxId - step, maxId)`. */
export interface Allocation {
  maxId: bigint;
  /** The step that was added (the table's, or the one asked for). */
  step: number;
  /** The table's step, read back in the same transaction. */
  tableStep: number;
  /**
   * The tag's kind (plain, opaque and its setting), read in the same transaction: the segment is
   * served under this kind and no other (tag-kind.ts).
   */
  kind: TagKind;
}

/**
 * Segment mode as the core sees a store: reserve the next range of a tag. Buffers, dynamic steps
 * and preloading live in the core on top of this, so a segment buffer sees nothing else of a store;
 * reading and changing rows is the tag catalogue (`TagCatalogue` in tag-catalogue.ts), which the
 * core does not need but for the tag list. A node's SegmentStore is `FencedStore`
 * (src/stores/fencing/fenced-store.ts), which makes every `advance` of a backend's primitive
 * (`SegmentPrimitive`, src/stores/segment-primitive.ts) safe to serve across failovers and restores;
 * the shared suite in `test/segment-store.suite.ts` checks both the backends and the fenced store.
 */
export interface SegmentStore {
  /** A name for logs and pages, without credentials: `sqlite:/path`, `postgres://host/db`. */
  readonly description: string;
  /**
   * In one transaction: adds `step` (or the row's own step when `step` is undefined) to the tag's
   * max_id and reads the row back. Resolves `undefined` when the tag has no row. When max_id + step
   * would pass 2^63 - 1 it rejects with ID_RANGE_EXHAUSTED and leaves the row as it was (the check
   * is part of the same UPDATE, so a refused load consumes nothing). Any other error means the
   * outcome is unknown; the caller throws the range away.
   */
  advance(tag: string, step?: number): Promise<Allocation | undefined>;
  /**
   * A clean stop: gives `held` (ascending, what this process's buffer of the tag holds unused,
   * whose last grant ended at `to`) back where no one was granted IDs above it since, and records
   * the rest as gaps (`SegmentPrimitive.handBack`). Absent: the store keeps nothing back (a test's
   * store), and the ranges are lost as on a crash. Rejects when the database did not answer: the
   * ranges are then reported as a crash by the node's next start.
   */
  handBack?(tag: string, held: readonly HeldRange[], to: bigint): Promise<HandBackResult>;
  close(): Promise<void>;
}

/** The refusal `advance` answers when a tag's next range would pass 2^63 - 1; the row is unchanged. */
export function rangeExhausted(tag: string, maxId: bigint | string, step: number): FrondError {
  return new FrondError(
    'ID_RANGE_EXHAUSTED',
    `tag ${tag} is at max_id ${maxId}: another ${step} IDs would pass 2^63 - 1, the largest ID of a signed 64-bit column; the row was left unchanged`,
  );
}
