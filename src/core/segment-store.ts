/** One row of Leaf's `leaf_alloc` table. */
export interface TagRow {
  tag: string;
  /** The next ID no node has taken yet (exclusive bound of everything handed out so far). */
  maxId: bigint;
  /** The table's step: the length of the first two segments, and the floor of the dynamic step. */
  step: number;
  description: string | null;
  updateTime: Date | null;
}

/** What one `advance` did: the range it reserved is `[maxId - step, maxId)`. */
export interface Allocation {
  maxId: bigint;
  /** The step that was added (the table's, or the one asked for). */
  step: number;
  /** The table's step, read back in the same transaction. */
  tableStep: number;
}

export interface NewTag {
  tag: string;
  step: number;
  /** The first ID the tag hands out; stored as max_id, as Leaf does. */
  start: bigint;
  description?: string | null;
}

/**
 * A store hands out ranges; everything else (buffers, steps, preload) lives in the core. A new
 * backend implements this and passes the shared suite in `test/segment-store.suite.ts`.
 */
export interface SegmentStore {
  /** A name for logs and pages, without credentials: `sqlite:/path`, `postgres://host/db`. */
  readonly description: string;
  /**
   * In one transaction: adds `step` (or the row's own step when `step` is undefined) to the tag's
   * max_id and reads the row back. Resolves `undefined` when the tag has no row. An error means the
   * outcome is unknown; the caller throws the range away.
   */
  advance(tag: string, step?: number): Promise<Allocation | undefined>;
  listTags(): Promise<string[]>;
  getTag(tag: string): Promise<TagRow | undefined>;
  listRows(): Promise<TagRow[]>;
  /** Inserts a row; rejects with TAG_EXISTS if the tag has one. */
  addTag(tag: NewTag): Promise<void>;
  /** Changes the table's step; rejects with TAG_NOT_FOUND if the tag has no row. */
  setStep(tag: string, step: number): Promise<void>;
  close(): Promise<void>;
}
