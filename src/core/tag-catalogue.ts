import { FrondError } from './errors.js';
import type { Gap, GapReason } from './id-gaps.js';
import type { SegmentStore } from './segment-store.js';
import type { FormatSetting, OpaqueSetting } from './tag-kind.js';

export type { FormatSetting, OpaqueSetting } from './tag-kind.js';

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

/** A tag's row with its opaque setting (frond_tag_options), read in one statement. */
export interface TagEntry extends TagRow {
  /** null: not opaque. */
  opaque: OpaqueSetting | null;
  /** null: not formatted (frond_tag_formats). */
  format: FormatSetting | null;
}

export interface NewTag {
  tag: string;
  step: number;
  /** The first ID the tag hands out; stored as max_id, as Leaf does. */
  start: bigint;
  description?: string | null;
  /** A formatted tag (or one of its counters): its format row is inserted in the same transaction. */
  format?: FormatSetting;
  /**
   * A counter's period start (ms since the Unix epoch, by the adding node's clock): a period that
   * starts more than an hour after the database's last fence cannot have lost IDs to it, so its
   * counter starts from its own record, not from the floor every fence raises for new names
   * (src/stores/new-names.ts, `startsAfterFence`). Ignored for any other name.
   */
  periodStartMs?: number;
}

/**
 * The tags of a store, for the admin API, the Leaf pages, the opaque tags and `frond tag`: reading
 * and adding `leaf_alloc` rows and their opaque settings. Kept apart from the segment primitive
 * (`SegmentPrimitive`, src/stores/segment-primitive.ts) because only the allocator's tag refresh
 * (`listTags`) is on the core's side; everything else serves operators, a few calls a minute,
 * never a request for IDs.
 *
 * A tag is made opaque only when it is created, its row and its setting in one transaction, and
 * the setting is never changed or removed (not even by `removeTag`): so a node that reads a tag's
 * row with its setting in one statement and finds no setting knows the tag is plain for good.
 *
 * A new method goes here and into TAG_CATALOGUE_CALLS below (the SQLite worker and the decorators
 * follow from that list), then into the stores that implement it: the SQL base
 * (src/stores/sql/sql-store.ts, PostgreSQL and MySQL), SQLite (src/stores/sqlite/sqlite-database.ts)
 * and the tests' memory store.
 */
export interface TagCatalogue {
  /** Every tag with a row, in biz_tag order. */
  listTags(): Promise<string[]>;
  /**
   * The rows after `after` (from the first when undefined), in biz_tag order. `limit` is the most a
   * caller takes at a time: `/db` reads a big table a page at a time. A store whose reads block
   * (SQLite's worker decodes the answer on the event loop: 50,000 rows took 200-300 ms) answers at
   * most `limit`; a network store, whose rows arrive in chunks anyway, may answer all of them.
   */
  listRows(after?: string, limit?: number): Promise<TagRow[]>;
  /** The tag's row with its opaque setting, in one statement; undefined when it has no row. */
  tag(tag: string): Promise<TagEntry | undefined>;
  /**
   * Inserts a row, and with `opaque` its setting in the same transaction (both or neither). Rejects
   * with TAG_EXISTS if the tag has a row (or a setting), and with OPAQUE_TAG_FIXED where a tag under
   * the name could repeat an ID: a plain tag whose name kept an opaque setting, an opaque tag whose
   * name served IDs before (`opaqueNameUsed`). A name frond_high_water knows (a removed tag, a row
   * deleted by hand) is inserted at the higher of `start` and its high-water, so the row itself says
   * where it goes on, for frond's nodes and for Leaf's servers on the same table alike. A name
   * without a record starts at the new-names record a fence raises, except a counter whose
   * `periodStartMs` is more than FENCE_CLOCK_MARGIN_MS after the last fence (new-names.ts).
   */
  addTag(tag: NewTag, opaque?: OpaqueSetting): Promise<void>;
  /** Changes the table's step; rejects with TAG_NOT_FOUND if the tag has no row. */
  setStep(tag: string, step: number): Promise<void>;
  /**
   * Deletes the tag's row, in one transaction with its max_id recorded in frond_high_water (the
   * higher of the two is kept), and leaves its opaque setting in frond_tag_options: the name can
   * never come back below what it served, nor as another kind (`addTag` starts a plain tag under it
   * at the high-water, and refuses an opaque one). Resolves the high-water the name keeps: the first
   * ID of a tag added again under it is that or above. A counter's frond_tag_formats row goes
   * with its row (a tag's stays). Rejects with TAG_NOT_FOUND without a row.
   */
  removeTag(tag: string): Promise<bigint>;
  /** The setting of every opaque tag. */
  listOpaque(): Promise<Map<string, OpaqueSetting>>;
  /** The format of every formatted tag (frond_tag_formats), without their counters' rows. */
  listFormats(): Promise<Map<string, FormatSetting>>;
  /**
   * The gaps recorded for `tag` (frond_gaps), by start then end, those starting after `after`
   * (from the first when undefined), at most `limit` (all when undefined). A tag without gaps, or
   * without a row, has none: removed tags keep theirs.
   */
  listGaps(tag: string, after?: bigint, limit?: number): Promise<Gap[]>;
  /** Every gap recorded, summed by reason over all tags: ranges and IDs (reasons without gaps are absent). */
  gapTotals(): Promise<Map<GapReason, GapTotal>>;
}

/** The gaps of one reason, summed. */
export interface GapTotal {
  ranges: number;
  ids: bigint;
}

/**
 * Every call of TagCatalogue, once: the SQLite store's worker thread answers these
 * (sqlite-protocol.ts), and `catalogueCalls` forwards them.
 */
export const TAG_CATALOGUE_CALLS = [
  'listTags',
  'listRows',
  'tag',
  'addTag',
  'setStep',
  'removeTag',
  'listOpaque',
  'listFormats',
  'listGaps',
  'gapTotals',
] as const satisfies readonly (keyof TagCatalogue)[];

type Unlisted = Exclude<keyof TagCatalogue, (typeof TAG_CATALOGUE_CALLS)[number]>;
/** Does not compile while a method of TagCatalogue is missing from TAG_CATALOGUE_CALLS. */
export const TAG_CATALOGUE_LISTED: [Unlisted] extends [never] ? true : Unlisted = true;

/**
 * Every call of `catalogue`, bound to it, as a plain object: the base of a decorator, which
 * replaces the calls it changes and so never has to name the others.
 */
export function catalogueCalls(catalogue: TagCatalogue): TagCatalogue {
  const calls: Partial<Record<keyof TagCatalogue, unknown>> = {};
  for (const name of TAG_CATALOGUE_CALLS) calls[name] = catalogue[name].bind(catalogue);
  return calls as TagCatalogue;
}

/** Segments and the tags beside them: what the server reaches through the allocator (`store`). */
export type CataloguedStore = SegmentStore & TagCatalogue;

/** `segments` (its advance, description and close) with `catalogue`'s calls, as one object. */
export function withCatalogue(segments: SegmentStore, catalogue: TagCatalogue): CataloguedStore {
  return {
    ...catalogueCalls(catalogue),
    description: segments.description,
    advance: (tag, step) => segments.advance(tag, step),
    ...(segments.handBack && {
      handBack: segments.handBack.bind(segments),
    }),
    close: () => segments.close(),
  };
}

/** The step of a new tag when none is given (`frond tag add`, `POST /v1/tags`). */
export const DEFAULT_TAG_STEP = 1000;

/** The refusal of a call about a tag without a row. */
export function tagNotFound(tag: string): FrondError {
  return new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
}

/** `addTag` of a tag that has a row. */
export function tagExists(tag: string): FrondError {
  return new FrondError('TAG_EXISTS', `tag ${tag} already exists`);
}

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
