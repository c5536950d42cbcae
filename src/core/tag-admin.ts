import { FrondError } from './errors.js';
import type { SegmentStore } from './segment-store.js';
import type { OpaqueSetting } from './tag-kind.js';

export type { OpaqueSetting } from './tag-kind.js';

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

export interface NewTag {
  tag: string;
  step: number;
  /** The first ID the tag hands out; stored as max_id, as Leaf does. */
  start: bigint;
  description?: string | null;
}

/**
 * Reading and changing `leaf_alloc` rows: for the admin API, the Leaf pages and `frond tag`. Kept
 * apart from `SegmentStore.advance` because only the allocator's tag refresh (`listTags`) is on the
 * core's side; everything else serves operators, a few calls a minute, never a request for IDs.
 */
export interface TagAdmin {
  /** Every tag with a row, in biz_tag order. */
  listTags(): Promise<string[]>;
  getTag(tag: string): Promise<TagRow | undefined>;
  /** Every row, in biz_tag order. */
  listRows(): Promise<TagRow[]>;
  /**
   * Up to `limit` rows after `after` (all from the first when undefined), in biz_tag order: `/db`
   * reads a big table a page at a time. Only where one read blocks the process (SQLite reads
   * synchronously: 50,000 rows took 200-300 ms); a network store's rows arrive in chunks anyway.
   */
  listRowsAfter?(after: string | undefined, limit: number): Promise<TagRow[]>;
  /** Inserts a row; rejects with TAG_EXISTS if the tag has one. */
  addTag(tag: NewTag): Promise<void>;
  /** Changes the table's step; rejects with TAG_NOT_FOUND if the tag has no row. */
  setStep(tag: string, step: number): Promise<void>;
}

/**
 * frond's per-tag options. A tag is made opaque only when it is created, its row and its setting in
 * one transaction, and the setting is never changed or removed: so a node that reads a tag's row and
 * its options in one statement and finds no setting knows the tag is plain for good.
 */
export interface TagOptionsAdmin {
  /** The tag's options, read with its row in one statement; undefined when the tag has no row. */
  tagOptions(tag: string): Promise<{ opaque: OpaqueSetting | null } | undefined>;
  /** The setting of every opaque tag. */
  listOpaque(): Promise<Map<string, OpaqueSetting>>;
  /** Inserts the tag's row and its opaque setting in one transaction; TAG_EXISTS if either exists. */
  addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): Promise<void>;
}

/** What a store backend implements: the segment primitive and tag administration over one table. */
export interface TagStore extends SegmentStore, TagAdmin, TagOptionsAdmin {}

/** The step of a new tag when none is given (`frond tag add`, `POST /v1/tags`). */
export const DEFAULT_TAG_STEP = 1000;

/**
 * An opaque tag under a name that already served IDs is refused: its opaque IDs are spread over the
 * whole domain, so one could equal a plain ID handed out before the row was dropped (a row deleted
 * by SQL and added again). Stores that keep a record of served names (frond_high_water, the data
 * dir's high-water file) check it when an opaque tag is added.
 */
export function opaqueNameUsed(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_TAG_FIXED',
    `tag ${tag} has served IDs before (frond keeps its high-water): an opaque tag under that name could repeat one of them; use a new name`,
  );
}
