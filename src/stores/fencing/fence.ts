// What every store offers so that frond survives a failover, a restore and a split brain
// (docs/databases.md, "Failover, restore and split brain"). The SQL is each backend's; the rules
// that use it live in fenced-store.ts, the same for every backend.
import type { Allocation } from '../../core/segment-store.js';

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

export interface FenceOps {
  /**
   * True where no second copy of the database can serve beside it (an SQLite file: one file on one
   * machine, whose row names itself with a random identity). There an older epoch under another
   * identity is the file restored from a backup taken before its row was made (or the row deleted
   * and made again by a node that knew an older epoch), never a replaced primary still alive: it is
   * fenced like any restore instead of refused, which would refuse it for good.
   */
  readonly singleCopy?: boolean;
  /** `undefined`: the tag has no row. An error: the outcome is unknown (the range is thrown away). */
  advanceFenced(tag: string, step?: number): Promise<FencedAdvance | undefined>;
  /**
   * In one transaction holding the fence row's lock (advances wait for it): raises every tag's
   * max_id by `skip` (and to `atLeast`), and records this database and a new epoch. When the row
   * is missing (a database frond never used) it is created without raising anything.
   */
  fence(request: FenceRequest): Promise<FenceOutcome>;
}

export function hasFenceOps(store: object): store is FenceOps {
  return typeof (store as Partial<FenceOps>).advanceFenced === 'function';
}

/** IDs a fence adds to every tag unless `--fence-skip` says otherwise (docs/databases.md). */
export const DEFAULT_FENCE_SKIP = 1_000_000_000;
