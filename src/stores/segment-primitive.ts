// The store contract of segment mode: what every backend implements so that a node can serve from
// it and survive a failover, a restore and a split brain (docs/databases.md, "Failover, restore and
// split brain"). The SQL is each backend's; the rules that use it are FencedStore's
// (fencing/fenced-store.ts), the same for every backend, and what the core sees.
import type { Gap, HandBackResult, HeldRange } from '../core/id-gaps.js';
import type { Allocation } from '../core/segment-store.js';

/**
 * The segment primitive of a store: one advance of a tag, checked against frond's fence row in
 * the same transaction, and the fence. Nothing serves an advance directly: `FencedStore` wraps the
 * primitive, and the core's allocator sees only that (`SegmentStore`, src/core/segment-store.ts).
 * The tags themselves are the store's catalogue (`TagCatalogue`, src/core/tag-catalogue.ts).
 */
export interface SegmentPrimitive {
  /** A name for logs and pages, without credentials: `sqlite:/path`, `postgres://host/db`. */
  readonly description: string;
  /**
   * True where no second copy of the database can serve beside it (an SQLite file: one file on one
   * machine, whose row names itself with a random identity). There an older epoch under another
   * identity is the file restored from a backup taken before its row was made (or the row deleted
   * and made again by a node that knew an older epoch), never a replaced primary still alive: it is
   * fenced like any restore instead of refused, which would refuse it for good.
   */
  readonly singleCopy: boolean;
  /**
   * In one transaction: reads frond's fence row and, only if it names the database it is read on,
   * adds `step` (or the row's own step when undefined) to the tag's max_id, from its floor (the
   * higher of max_id and frond's record in frond_high_water), records the new max_id there, and
   * reads the row back with the tag's kind (frond_tag_options): `granted`. A fence row that is
   * missing or names another database reserves and writes nothing: `unfenced`. Resolves
   * `undefined` when the tag has no row. When the next range would pass 2^63 - 1 it rejects with
   * ID_RANGE_EXHAUSTED and leaves the row as it was. Any other error means the outcome is unknown;
   * the caller throws the range away.
   */
  advance(tag: string, step?: number): Promise<FencedAdvance | undefined>;
  /**
   * In one transaction holding the fence row's lock (advances wait for it): raises every tag's
   * max_id by `skip` (and to `atLeast`), and the record of every removed tag (a name
   * frond_high_water keeps without a row) likewise, so that a tag added again goes on above what
   * the database may have lost of it; and records this database and a new epoch. When the row is
   * missing (a database frond never used) it is created without raising anything.
   */
  fence(request: FenceRequest): Promise<FenceOutcome>;
  /**
   * A clean stop's hand-back of one tag, in one transaction holding the tag row's lock (as an
   * advance does) and reading frond's fence row: when the fence row names this database at
   * `epoch` (and `identity`), the row's max_id is `to` and frond_high_water's record of the tag is
   * `to` or lower (or missing), nobody was granted IDs of the tag above `to`'s grant since: the tail
   * of `held` that runs up to `to` without a hole (`splitHeld`) goes back (max_id and the record set
   * to its first ID). Every other range of `held`, and all of them when any condition fails (another
   * node or a Leaf server advanced the row, a fence raised it, the row is gone), is inserted into
   * frond_gaps with its range's reason and `node`, in the same transaction. Never raises a floor,
   * never lowers one below a range another process may hold. Called once per grant: never again
   * after an unknown outcome (a lost answer), since another node's grant of exactly the tail's
   * size in between puts max_id back at `to`, and a second call would give that grant out again;
   * the caller leaves such a tail to its next start, which reports it as a crash.
   */
  handBack(request: HandBackRequest): Promise<HandBackResult>;
  /**
   * Inserts `gaps` into frond_gaps in one transaction; a gap already recorded (same tag, start and
   * end) is left as it is, so a call whose outcome was unknown may be made again.
   */
  recordGaps(gaps: readonly Gap[]): Promise<void>;
  close(): Promise<void>;
}

export interface HandBackRequest {
  tag: string;
  /** What the node holds unused, ascending: its current segment's rest, then its next segment. */
  held: readonly HeldRange[];
  /** The max_id of this node's last grant of the tag (the end of its next segment, or of its current one). */
  to: bigint;
  /** The fence epoch and database identity that grant was made under. */
  epoch: number;
  identity: string;
  /** The node's name for frond_gaps (host:port). */
  node: string;
}

/**
 * One advance checked against frond's fence row in the same transaction: `granted` if the row
 * names the database it is read on, `unfenced` (nothing reserved, nothing written) if the row is
 * missing or names another database, which may have granted ranges this one never saw.
 */
export type FencedAdvance =
  | { kind: 'granted'; allocation: Allocation; epoch: number; identity: string }
  | { kind: 'unfenced'; epoch: number; identity: string };

/** What a fence did: `fenced` false when another node had already done it. */
export interface FenceOutcome {
  epoch: number;
  identity: string;
  fenced: boolean;
  /** Rows of leaf_alloc raised. */
  tags: number;
}

export interface FenceRequest {
  /**
   * The epoch the caller read in the row it found wrong. The fence is not done again when the row
   * now names this database with a newer epoch: another node fenced in between.
   */
  observedEpoch: number;
  /** The new epoch is above this too: the newest epoch the caller ever saw. */
  aboveEpoch: number;
  /** Added to every tag's max_id. */
  skip: bigint;
  /** Per tag, a floor for max_id after the fence: the highest max_id the caller was ever granted. */
  atLeast: ReadonlyMap<string, bigint>;
}

/** IDs a fence adds to every tag unless `--fence-skip` says otherwise (docs/databases.md). */
export const DEFAULT_FENCE_SKIP = 1_000_000_000;
