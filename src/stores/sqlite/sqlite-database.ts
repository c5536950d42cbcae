import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { FrondError } from '../../core/errors.js';
import { parseCounterName } from '../../core/id-format.js';
import type { Gap, GapReason, HandBackResult } from '../../core/id-gaps.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import type { GapTotal } from '../../core/tag-catalogue.js';
import {
  type FormatSetting,
  type NewTag,
  type OpaqueSetting,
  opaqueNameUsed,
  type TagEntry,
  type TagRow,
  tagExists,
  tagNotFound,
} from '../../core/tag-catalogue.js';
import { kindOf } from '../../core/tag-kind.js';
import { makeDirectory } from '../../platform/directory.js';
import { formatRowNeeded, formatRowRemains, refuseFormatWithOpaque } from '../format-rules.js';
import { gapsOf, lowestHeld, planHandBack } from '../hand-back-plan.js';
import { NEW_NAMES_ROW, ownRecordOf, recordOf, startsAfterFence } from '../new-names.js';
import type { FencedAdvance, FenceOutcome, FenceRequest, HandBackRequest } from '../segment-primitive.js';
import {
  type FormatRow,
  formatMap,
  formatOf,
  type OptionRow,
  opaqueMap,
  settingOf,
} from '../sql/leaf-rows.js';
import type { SqliteCalls } from './sqlite-protocol.js';

/** Leaf's MySQL table, in SQLite's types. SQLite has no ON UPDATE, so `advance` sets update_time. */
export const SQLITE_DDL = `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag     VARCHAR(128) NOT NULL DEFAULT '' PRIMARY KEY,
  max_id      BIGINT       NOT NULL DEFAULT 1,
  step        INT          NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
)`;

/** frond's own per-tag options (opaque tags), beside Leaf's table: docs/databases.md. */
export const SQLITE_FROND_DDL = `CREATE TABLE IF NOT EXISTS frond_tag_options (
  biz_tag       VARCHAR(128) NOT NULL PRIMARY KEY,
  opaque_domain VARCHAR(16)  NOT NULL,
  key_check     VARCHAR(32)  NOT NULL
)`;

/**
 * frond's formatted tags (order numbers), beside Leaf's table: the format and zone of a formatted
 * tag and of each of its counters, written with the row in one transaction and never changed or
 * removed (docs/databases.md).
 */
export const SQLITE_FORMATS_DDL = `CREATE TABLE IF NOT EXISTS frond_tag_formats (
  biz_tag   VARCHAR(128) NOT NULL PRIMARY KEY,
  id_format VARCHAR(255) NOT NULL,
  time_zone VARCHAR(64)  NOT NULL
)`;

/**
 * The highest max_id frond granted per tag, as on PostgreSQL and MySQL, written in the transaction
 * of every advance. It lives in the database file itself, so every process on the file sees it: the
 * `--workers` processes (each with a data dir of its own) and `frond tag add` (which has none). A
 * row deleted and put back lower goes on above it, and a name it knows that has no row is refused
 * as an opaque tag (opaqueNameUsed).
 *
 * Created at open like the others, and left empty on a file of an earlier version: a tag without a
 * record has its leaf_alloc max_id as the floor, which is what every advance used before, so nothing
 * needs seeding; the first advance of each tag records it. (What the file no longer holds, a row
 * deleted before this version, no seeding could recover: the nodes' data dirs still cover it.)
 */
export const SQLITE_HIGH_WATER_DDL = `CREATE TABLE IF NOT EXISTS frond_high_water (
  biz_tag VARCHAR(128) NOT NULL PRIMARY KEY,
  max_id  BIGINT       NOT NULL
)`;

/**
 * The fence row, as on PostgreSQL and MySQL (docs/databases.md, "Failover, restore and split
 * brain"). A file has no server to name it, so the row names itself: `identity` is a random UUID
 * written by the fence that creates the row, and every advance reads the row in its transaction. A
 * file restored from a backup carries the row as it was then (the same identity, an older epoch) or
 * none at all (a backup taken before frond's first fence): either way the nodes that were granted
 * ranges since fence it, raising every tag past what any process on the file may hold.
 */
export const SQLITE_FENCE_DDL = `CREATE TABLE IF NOT EXISTS frond_fence (
  id        INTEGER      NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch     INTEGER      NOT NULL,
  identity  VARCHAR(128) NOT NULL,
  fenced_at TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP
)`;

/**
 * The IDs of each tag given up for good, as on PostgreSQL and MySQL: a range `[start_id, end_id)`,
 * why (GapReason, src/core/id-gaps.ts), who gave it up, and when (ms since the Unix epoch, the
 * machine's clock). The primary key is what a retry inserts again (INSERT OR IGNORE), and its
 * order is the order `listGaps` pages in: by tag, then start.
 */
export const SQLITE_GAPS_DDL = `CREATE TABLE IF NOT EXISTS frond_gaps (
  tag        VARCHAR(128) NOT NULL,
  start_id   BIGINT       NOT NULL,
  end_id     BIGINT       NOT NULL,
  reason     VARCHAR(32)  NOT NULL,
  node       VARCHAR(255) NOT NULL,
  created_at BIGINT       NOT NULL,
  PRIMARY KEY (tag, start_id, end_id)
)`;

/** Every table frond creates in the file, in order (`frond db init --print` shows them). */
export const SQLITE_TABLES_DDL = [
  SQLITE_DDL,
  SQLITE_FROND_DDL,
  SQLITE_HIGH_WATER_DDL,
  SQLITE_FENCE_DDL,
  SQLITE_FORMATS_DDL,
  SQLITE_GAPS_DDL,
];

/**
 * The floor a tag advances from: its max_id, or frond's record when that is higher (the row was
 * deleted and put back lower). SQLite's two-argument max() is the larger one; the record of a tag
 * without one is its own max_id. Used inside the UPDATE of leaf_alloc, so `max_id` is the row's.
 */
const floorOf = (tag: string) => `max(max_id, ${recordOf(tag, 'max_id')})`;
const FLOOR = floorOf('@tag');

/** The frond_high_water row being written has no row in leaf_alloc: a removed tag. */
const ROW_GONE = 'NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = frond_high_water.biz_tag)';

interface RawRow {
  biz_tag: string;
  max_id: bigint;
  step: bigint;
  description: string | null;
  update_time: string | null;
}

/** The row an advance reads back, in its transaction: with frond's record and the tag's kind. */
interface GrantRow {
  max_id: bigint | number | string;
  step: bigint;
  high_water: bigint | null;
  opaque_domain: string | null;
  key_check: string | null;
  id_format: string | null;
  time_zone: string | null;
}

/** What a formatted add reads of its name (`nameState`): SQLite answers EXISTS as 0 or 1. */
interface NameRow extends FormatRow {
  row: number;
  served: number;
  opaque: number;
}

/** frond_fence's one row, when there is one. */
interface FenceRow {
  epoch: bigint;
  identity: string;
}

/**
 * Leaf's `leaf_alloc` in one SQLite file, through better-sqlite3, whose calls block the thread that
 * makes them: this class runs in the store's worker thread (sqlite-worker.ts), never on the event
 * loop that answers requests. Several processes may share the file (a server and `frond tag add`):
 * writes take SQLite's write lock, so two allocations never overlap, and `synchronous = FULL` keeps
 * a committed max_id across a power loss.
 */
export class SqliteDatabase implements SqliteCalls {
  private readonly db: Database.Database;
  private readonly statements: ReturnType<typeof SqliteDatabase.prepare>;

  constructor(path: string) {
    if (path !== ':memory:') makeDirectory(dirname(path), `--store sqlite:${path}: its directory`);
    const db = new Database(path, { timeout: 5_000 });
    this.db = db;
    try {
      this.statements = SqliteDatabase.prepare(db);
    } catch (error) {
      // A file that is not a database (SQLITE_NOTADB) opens and fails here: its handle is closed
      // now, not left to the garbage collector.
      db.close();
      throw error;
    }
  }

  private static prepare(db: Database.Database) {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    for (const ddl of SQLITE_TABLES_DDL) db.exec(ddl);
    // Every value is a bound parameter; the one constant spliced in is MAX_SEGMENT_ID, a bigint.
    return {
      // The bound is part of the UPDATE: past 2^63 - 1 SQLite would turn max_id into a REAL, a
      // rounded number; here the row is left as it is and `advance` says why.
      advanceByTableStep: db.prepare(
        `UPDATE leaf_alloc SET max_id = ${FLOOR} + step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = @tag AND ${FLOOR} <= ${MAX_SEGMENT_ID} - step`,
      ),
      advanceBy: db.prepare(
        `UPDATE leaf_alloc SET max_id = ${FLOOR} + @step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = @tag AND ${FLOOR} <= ${MAX_SEGMENT_ID} - @step`,
      ),
      // The grant as the transaction left it: the row, frond's record and the tag's kind.
      readGrant: db
        .prepare(
          `SELECT l.max_id, l.step, h.max_id AS high_water, o.opaque_domain, o.key_check,
                  f.id_format, f.time_zone
             FROM leaf_alloc l
             LEFT JOIN frond_high_water h ON h.biz_tag = l.biz_tag
             LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag
             LEFT JOIN frond_tag_formats f ON f.biz_tag = l.biz_tag
            WHERE l.biz_tag = ?`,
        )
        .safeIntegers(true),
      record: db.prepare(
        `INSERT INTO frond_high_water (biz_tag, max_id) VALUES (?, ?)
           ON CONFLICT (biz_tag) DO UPDATE SET max_id = max(frond_high_water.max_id, excluded.max_id)`,
      ),
      // A name frond granted IDs under whose row is gone: it may not come back opaque.
      usedWithoutRow: db.prepare(
        'SELECT 1 FROM frond_high_water h WHERE h.biz_tag = @tag AND NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = @tag)',
      ),
      // An opaque tag's setting whose row is gone: the name stays opaque (tag-kind.ts).
      settingWithoutRow: db.prepare(
        'SELECT 1 FROM frond_tag_options o WHERE o.biz_tag = @tag AND NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = @tag)',
      ),
      // A formatted tag's format whose row is gone: only that format may come back under the name.
      formatWithoutRow: db.prepare(
        'SELECT id_format, time_zone FROM frond_tag_formats f WHERE f.biz_tag = @tag AND NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = @tag)',
      ),
      // What a formatted add checks (format-rules.ts): the row, the format kept, the record, the setting.
      nameState: db.prepare(
        `SELECT EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = @tag) AS row,
                (SELECT id_format FROM frond_tag_formats WHERE biz_tag = @tag) AS id_format,
                (SELECT time_zone FROM frond_tag_formats WHERE biz_tag = @tag) AS time_zone,
                EXISTS (SELECT 1 FROM frond_high_water WHERE biz_tag = @tag) AS served,
                EXISTS (SELECT 1 FROM frond_tag_options WHERE biz_tag = @tag) AS opaque`,
      ),
      // The row, its setting and its format (`TagCatalogue.tag`).
      entry: db
        .prepare(
          `SELECT l.biz_tag, l.max_id, l.step, l.description, l.update_time, o.opaque_domain, o.key_check,
                  f.id_format, f.time_zone
             FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag
             LEFT JOIN frond_tag_formats f ON f.biz_tag = l.biz_tag
            WHERE l.biz_tag = ?`,
        )
        .safeIntegers(true),
      list: db.prepare('SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag'),
      // LIMIT -1: no limit.
      rowsFirst: db
        .prepare(
          'SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc ORDER BY biz_tag LIMIT ?',
        )
        .safeIntegers(true),
      rowsAfter: db
        .prepare(
          'SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag > ? ORDER BY biz_tag LIMIT ?',
        )
        .safeIntegers(true),
      // A tag's row: a name frond_high_water knows (a removed tag) starts at its record when the
      // start is below it (`TagCatalogue.addTag`), and a name it does not know at the new-names
      // record (new-names.ts). An opaque name never has a record of its own here: addTag refuses it.
      insertRow: db.prepare(
        `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
           VALUES (@tag, max(@start, ${recordOf('@tag', '@start')}), @step, @description)`,
      ),
      // A counter whose period starts after the last fence (`startsAfterFence`, new-names.ts): from
      // its own record only, which is written with the row (recordRow), so its advances go on from
      // there too, not from the new-names record.
      insertCounterRow: db.prepare(
        `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
           VALUES (@tag, max(@start, ${ownRecordOf('@tag', '@start')}), @step, @description)`,
      ),
      recordRow: db.prepare(
        `INSERT INTO frond_high_water (biz_tag, max_id) SELECT biz_tag, max_id FROM leaf_alloc WHERE biz_tag = ?
           ON CONFLICT (biz_tag) DO UPDATE SET max_id = max(frond_high_water.max_id, excluded.max_id)`,
      ),
      // The last fence, in ms by the database's clock: CURRENT_TIMESTAMP wrote it as UTC text.
      fencedAt: db.prepare(
        "SELECT CAST(strftime('%s', fenced_at) AS INTEGER) * 1000 AS ms FROM frond_fence WHERE id = 1",
      ),
      remove: db.prepare('DELETE FROM leaf_alloc WHERE biz_tag = ?'),
      removeFormat: db.prepare('DELETE FROM frond_tag_formats WHERE biz_tag = ?'),
      highWater: db.prepare('SELECT max_id FROM frond_high_water WHERE biz_tag = ?').safeIntegers(true),
      setStep: db.prepare('UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?'),
      opaque: db.prepare('SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options'),
      insertOptions: db.prepare(
        'INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check) VALUES (?, ?, ?)',
      ),
      // Counters left out (U+001F is in every counter's name, in no tag's): formatMap checks again.
      formats: db.prepare(
        'SELECT biz_tag, id_format, time_zone FROM frond_tag_formats WHERE instr(biz_tag, char(31)) = 0',
      ),
      insertFormat: db.prepare(
        'INSERT INTO frond_tag_formats (biz_tag, id_format, time_zone) VALUES (?, ?, ?)',
      ),
      fenceRow: db.prepare('SELECT epoch, identity FROM frond_fence WHERE id = 1').safeIntegers(true),
      createFence: db.prepare('INSERT INTO frond_fence (id, epoch, identity) VALUES (1, ?, ?)'),
      setFence: db.prepare('UPDATE frond_fence SET epoch = ?, fenced_at = CURRENT_TIMESTAMP WHERE id = 1'),
      // Every tag up by the skip from its floor (frond_high_water counts: a row put back lower was
      // granted from there), and a tag within the skip of 2^63 - 1 up to it: used up, not made a
      // REAL. A row whose max_id is not an integer is left alone: no advance serves it (`grant`).
      raiseAll: db.prepare(
        `UPDATE leaf_alloc SET max_id = CASE WHEN ${floorOf('leaf_alloc.biz_tag')} > ${MAX_SEGMENT_ID} - @skip THEN ${MAX_SEGMENT_ID} ELSE ${floorOf('leaf_alloc.biz_tag')} + @skip END, update_time = CURRENT_TIMESTAMP WHERE typeof(max_id) = 'integer'`,
      ),
      raiseTo: db.prepare(
        'UPDATE leaf_alloc SET max_id = @maxId, update_time = CURRENT_TIMESTAMP WHERE biz_tag = @tag AND max_id < @maxId',
      ),
      // A removed tag (a name frond_high_water keeps without a row) is raised as well: added again,
      // it goes on from there, above what the file may have lost of it.
      raiseRemoved: db.prepare(
        `UPDATE frond_high_water SET max_id = CASE WHEN max_id > ${MAX_SEGMENT_ID} - @skip THEN ${MAX_SEGMENT_ID} ELSE max_id + @skip END WHERE ${ROW_GONE}`,
      ),
      newNames: db.prepare(`INSERT OR IGNORE INTO frond_high_water ${NEW_NAMES_ROW}`),
      raiseRemovedTo: db.prepare(
        `UPDATE frond_high_water SET max_id = @maxId WHERE biz_tag = @tag AND max_id < @maxId AND ${ROW_GONE}`,
      ),
      // The integer rows as a fence finds them and leaves them: what it skipped is a gap of each.
      integerRows: db
        .prepare("SELECT biz_tag, max_id FROM leaf_alloc WHERE typeof(max_id) = 'integer'")
        .safeIntegers(true),
      // ms since the Unix epoch by the machine's clock, as the networked stores take their server's.
      now: db.prepare("SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS ms"),
      insertGap: db.prepare(
        'INSERT OR IGNORE INTO frond_gaps (tag, start_id, end_id, reason, node, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      // The gaps of a tag that overlap [@low, @to): the claimed guard of a hand-back.
      claimed: db
        .prepare(
          'SELECT start_id, end_id FROM frond_gaps WHERE tag = @tag AND start_id < @to AND end_id > @low',
        )
        .safeIntegers(true),
      handBackRow: db.prepare(
        'UPDATE leaf_alloc SET max_id = @from, update_time = CURRENT_TIMESTAMP WHERE biz_tag = @tag AND max_id = @to',
      ),
      handBackRecord: db.prepare('UPDATE frond_high_water SET max_id = @from WHERE biz_tag = @tag'),
      gapsFirst: db
        .prepare(
          'SELECT tag, start_id, end_id, reason, node, created_at FROM frond_gaps WHERE tag = ? ORDER BY start_id, end_id LIMIT ?',
        )
        .safeIntegers(true),
      gapsAfter: db
        .prepare(
          'SELECT tag, start_id, end_id, reason, node, created_at FROM frond_gaps WHERE tag = ? AND start_id > ? ORDER BY start_id, end_id LIMIT ?',
        )
        .safeIntegers(true),
      // Summed here, not by SUM(): SQLite's SUM of BIGINTs fails past 2^63 - 1, and a fence's gaps
      // on a tag near the top can pass it in all.
      allGaps: db.prepare('SELECT reason, start_id, end_id FROM frond_gaps').safeIntegers(true),
    };
  }

  /**
   * One advance checked against the fence row in the same IMMEDIATE transaction (the write lock
   * from the start, so the floor read inside the UPDATE and the record written after it are one
   * step for every process on the file): no row, nothing is reserved and the caller fences first
   * (`unfenced`); a row, the advance is granted under its epoch and identity. The row is the file's
   * own, so it is always current: a file that went back shows an older epoch than the nodes saw,
   * or a grant below their high-water, and they fence.
   */
  advance(tag: string, step?: number): FencedAdvance | undefined {
    return this.db
      .transaction((): FencedAdvance | undefined => {
        const fence = this.statements.fenceRow.get() as FenceRow | undefined;
        // No identity yet: the fence that creates the row draws it.
        if (fence === undefined) return { kind: 'unfenced', epoch: 0, identity: '' };
        const allocation = this.grant(tag, step);
        return (
          allocation && {
            kind: 'granted',
            allocation,
            epoch: Number(fence.epoch),
            identity: fence.identity,
          }
        );
      })
      .immediate();
  }

  /**
   * One IMMEDIATE transaction, so every advance of every process on the file waits for it: a file
   * without the row gets one (a new identity, nothing raised); a row whose epoch is past the one
   * the caller read was fenced by another process meanwhile (nothing done); otherwise every tag is
   * raised by the skip (and to `atLeast`) and the epoch goes past both the row's and the caller's.
   */
  fence(request: FenceRequest): FenceOutcome {
    return this.db
      .transaction((): FenceOutcome => {
        const row = this.statements.fenceRow.get() as FenceRow | undefined;
        if (row === undefined) {
          const created = { epoch: request.aboveEpoch + 1, identity: randomUUID() };
          this.statements.createFence.run(BigInt(created.epoch), created.identity);
          return { ...created, fenced: false, tags: 0 };
        }
        const found = Number(row.epoch);
        if (found > request.observedEpoch)
          return { epoch: found, identity: row.identity, fenced: false, tags: 0 };
        const before = this.statements.integerRows.all() as { biz_tag: string; max_id: bigint }[];
        const tags = this.statements.raiseAll.run({ skip: request.skip }).changes;
        // The new-names record with them, made first where it is missing (new-names.ts).
        if (request.skip > 0n) this.statements.newNames.run();
        this.statements.raiseRemoved.run({ skip: request.skip });
        for (const [tag, maxId] of request.atLeast) {
          this.statements.raiseTo.run({ tag, maxId });
          this.statements.raiseRemovedTo.run({ tag, maxId });
        }
        // What the fence skipped of each tag, [max_id before, max_id after), is a gap: some of it
        // may have been issued by the copy that was lost, none of it after the fence.
        const was = new Map(before.map((r) => [r.biz_tag, r.max_id]));
        const at = this.now();
        for (const after of this.statements.integerRows.all() as { biz_tag: string; max_id: bigint }[]) {
          const start = was.get(after.biz_tag);
          if (start !== undefined && after.max_id > start)
            this.statements.insertGap.run(after.biz_tag, start, after.max_id, 'fence', 'fence', at);
        }
        const epoch = Math.max(found, request.aboveEpoch) + 1;
        this.statements.setFence.run(BigInt(epoch));
        return { epoch, identity: row.identity, fenced: true, tags };
      })
      .immediate();
  }

  /** One advance, inside the caller's IMMEDIATE transaction. */
  private grant(tag: string, step: number | undefined): Allocation | undefined {
    // The step is bound as a bigint: a JavaScript number is bound as a REAL, and max_id + REAL
    // above 2^53 is rounded.
    const changed =
      step === undefined
        ? this.statements.advanceByTableStep.run({ tag }).changes
        : this.statements.advanceBy.run({ step: BigInt(step), tag }).changes;
    const row = this.statements.readGrant.get(tag) as GrantRow | undefined;
    if (row === undefined) return undefined;
    if (typeof row.max_id !== 'bigint') {
      throw new FrondError(
        'INVALID_CONFIG',
        `tag ${tag} has max_id ${String(row.max_id)} in leaf_alloc, which is not an integer; set an integer max_id`,
      );
    }
    const tableStep = Number(row.step);
    if (changed === 0) {
      // Nothing reserved: the next range from the floor would pass 2^63 - 1.
      const floor = row.high_water !== null && row.high_water > row.max_id ? row.high_water : row.max_id;
      throw rangeExhausted(tag, floor, step ?? tableStep);
    }
    // In the same transaction: a grant is never served that frond_high_water does not cover.
    this.statements.record.run(tag, row.max_id);
    return {
      maxId: row.max_id,
      step: step ?? tableStep,
      tableStep,
      kind: kindOf(row.opaque_domain, row.key_check, row.id_format, row.time_zone),
    };
  }

  listTags(): string[] {
    return (this.statements.list.all() as { biz_tag: string }[]).map((row) => row.biz_tag);
  }

  // Pages for /db: each reply is small, so decoding it on the main thread never takes long (the
  // whole 50,000-row table in one reply did: 200-300 ms).
  listRows(after?: string, limit?: number): TagRow[] {
    const rows =
      after === undefined
        ? this.statements.rowsFirst.all(limit ?? -1)
        : this.statements.rowsAfter.all(after, limit ?? -1);
    return (rows as RawRow[]).map(toTagRow);
  }

  tag(tag: string): TagEntry | undefined {
    const row = this.statements.entry.get(tag) as (RawRow & OptionRow & FormatRow) | undefined;
    return row && { ...toTagRow(row), opaque: settingOf(row), format: formatOf(row) };
  }

  addTag(tag: NewTag, opaque?: OpaqueSetting): void {
    refuseFormatWithOpaque(tag, opaque);
    try {
      this.db
        .transaction(() => {
          const { format } = tag;
          if (format !== undefined) {
            // Its rules (format-rules.ts) from one read of the name; the row's insert follows.
            const state = this.statements.nameState.get({ tag: tag.tag }) as NameRow;
            const needed = formatRowNeeded(
              { ...tag, format },
              {
                row: state.row === 1,
                format: formatOf(state) ?? undefined,
                served: state.served === 1,
                opaque: state.opaque === 1,
              },
            );
            if (needed) this.statements.insertFormat.run(tag.tag, format.format, format.timeZone);
          } else {
            // Every grant reads the format: a plain or opaque row under a formatted name would be
            // granted as formatted, and numbers it served could come again.
            const kept = this.statements.formatWithoutRow.get({ tag: tag.tag }) as FormatRow | undefined;
            const keptFormat = kept && formatOf(kept);
            if (keptFormat) throw formatRowRemains(tag.tag, keptFormat);
            if (opaque === undefined) {
              // The setting is read with every grant: a plain row under the name would serve opaque IDs.
              if (this.statements.settingWithoutRow.get({ tag: tag.tag }) !== undefined)
                throw opaqueSettingRemains(tag.tag);
            } else {
              // A name frond_high_water knows and leaf_alloc no longer holds served plain IDs; a row
              // that is there (or a setting left by an opaque tag) fails an insert: TAG_EXISTS.
              if (this.statements.usedWithoutRow.get({ tag: tag.tag }) !== undefined)
                throw opaqueNameUsed(tag.tag);
              this.statements.insertOptions.run(tag.tag, opaque.domain, opaque.keyCheck);
            }
          }
          // In the IMMEDIATE transaction: no fence of any process on the file runs beside it.
          const own =
            tag.periodStartMs !== undefined &&
            startsAfterFence(tag, (this.statements.fencedAt.get() as { ms: number | null } | undefined)?.ms);
          (own ? this.statements.insertCounterRow : this.statements.insertRow).run({
            tag: tag.tag,
            start: tag.start,
            step: tag.step,
            description: tag.description ?? null,
          });
          if (own) this.statements.recordRow.run(tag.tag);
        })
        .immediate();
    } catch (error) {
      throw (error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ? tagExists(tag.tag) : error;
    }
  }

  setStep(tag: string, step: number): void {
    if (this.statements.setStep.run(step, tag).changes === 0) throw tagNotFound(tag);
  }

  /**
   * One IMMEDIATE transaction, so no advance of any process on the file runs beside it: the row's
   * max_id recorded in frond_high_water (the higher of the two kept), the row deleted, the record
   * read back. Its setting stays in frond_tag_options.
   */
  removeTag(tag: string): bigint {
    return this.db
      .transaction((): bigint => {
        const row = this.statements.readGrant.get(tag) as GrantRow | undefined;
        if (row === undefined) throw tagNotFound(tag);
        if (typeof row.max_id !== 'bigint') {
          throw new FrondError(
            'INVALID_CONFIG',
            `tag ${tag} has max_id ${String(row.max_id)} in leaf_alloc, which is not an integer; set an integer max_id, then remove it`,
          );
        }
        this.statements.record.run(tag, row.max_id);
        this.statements.remove.run(tag);
        // A counter's format row goes with it (8,760 a year of an hourly tag otherwise); its record
        // stays, so a node that creates it again (with its tag's format) starts it above that.
        if (parseCounterName(tag) !== undefined) this.statements.removeFormat.run(tag);
        return (this.statements.highWater.get(tag) as { max_id: bigint }).max_id;
      })
      .immediate();
  }

  /**
   * One IMMEDIATE transaction, so every advance of every process on the file waits for it: the
   * fence row, the row, the record and the gaps already recorded near the range are read, the
   * decision is planHandBack's (hand-back-plan.ts), and the tail (if any) and the gaps are written.
   */
  handBack(request: HandBackRequest): HandBackResult {
    return this.db
      .transaction((): HandBackResult => {
        const fence = this.statements.fenceRow.get() as FenceRow | undefined;
        const row = this.statements.readGrant.get(request.tag) as GrantRow | undefined;
        const claimed = (
          this.statements.claimed.all({ tag: request.tag, to: request.to, low: lowestHeld(request) }) as {
            start_id: bigint;
            end_id: bigint;
          }[]
        ).map((gap) => ({ start: gap.start_id, end: gap.end_id }));
        const plan = planHandBack(request, {
          // A max_id that is not an integer is served by no advance (`grant`): nothing goes back.
          maxId: typeof row?.max_id === 'bigint' ? row.max_id : undefined,
          recorded: row?.high_water ?? undefined,
          fenceMatches:
            fence !== undefined &&
            Number(fence.epoch) === request.epoch &&
            fence.identity === request.identity,
          claimed,
        });
        if (plan.returned !== undefined && !plan.alreadyReturned) {
          const { from, to } = plan.returned;
          this.statements.handBackRow.run({ tag: request.tag, from, to });
          if (row?.high_water !== null && row?.high_water !== undefined)
            this.statements.handBackRecord.run({ tag: request.tag, from });
        }
        const gaps = gapsOf(request, plan, this.now());
        this.insertGaps(gaps);
        return { tag: request.tag, returned: plan.returned, gaps };
      })
      .immediate();
  }

  recordGaps(gaps: readonly Gap[]): void {
    if (gaps.length === 0) return;
    this.db.transaction(() => this.insertGaps(gaps, this.now())).immediate();
  }

  listGaps(tag: string, after?: bigint, limit?: number): Gap[] {
    const rows =
      after === undefined
        ? this.statements.gapsFirst.all(tag, limit ?? -1)
        : this.statements.gapsAfter.all(tag, after, limit ?? -1);
    return (rows as GapRow[]).map(toGap);
  }

  gapTotals(): Map<GapReason, GapTotal> {
    const totals = new Map<GapReason, GapTotal>();
    for (const gap of this.statements.allGaps.iterate() as Iterable<{
      reason: GapReason;
      start_id: bigint;
      end_id: bigint;
    }>) {
      const total = totals.get(gap.reason) ?? { ranges: 0, ids: 0n };
      total.ranges++;
      total.ids += gap.end_id - gap.start_id;
      totals.set(gap.reason, total);
    }
    return totals;
  }

  /** ms since the Unix epoch, by the clock SQLite reads. */
  private now(): number {
    return Number((this.statements.now.get() as { ms: number | bigint }).ms);
  }

  /** Inside the caller's transaction; a gap already recorded (same tag, start and end) stays as it is. */
  private insertGaps(gaps: readonly Gap[], at?: number): void {
    for (const gap of gaps)
      if (gap.end > gap.start)
        this.statements.insertGap.run(gap.tag, gap.start, gap.end, gap.reason, gap.node, at ?? gap.at);
  }

  listFormats(): Map<string, FormatSetting> {
    return formatMap(this.statements.formats.all() as FormatRow[]);
  }

  listOpaque(): Map<string, OpaqueSetting> {
    return opaqueMap(this.statements.opaque.all() as OptionRow[]);
  }

  close(): void {
    this.db.close();
  }
}

/**
 * A plain tag under a name whose opaque setting outlived its row (deleted by SQL) is refused: the
 * setting is never removed and every grant is served under it, so the new tag would be opaque.
 */
function opaqueSettingRemains(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_TAG_FIXED',
    `tag ${tag} was an opaque tag and its setting remains in frond_tag_options (a setting is never removed): a tag under that name is opaque under it; use a new name`,
  );
}

/** A frond_gaps row, its integers as SQLite's 64-bit integers (safeIntegers). */
interface GapRow {
  tag: string;
  start_id: bigint;
  end_id: bigint;
  reason: GapReason;
  node: string;
  created_at: bigint;
}

function toGap(row: GapRow): Gap {
  return {
    tag: row.tag,
    start: row.start_id,
    end: row.end_id,
    reason: row.reason,
    node: row.node,
    at: Number(row.created_at),
  };
}

function toTagRow(row: RawRow): TagRow {
  return {
    tag: row.biz_tag,
    maxId: row.max_id,
    step: Number(row.step),
    description: row.description,
    // CURRENT_TIMESTAMP is UTC text, 'YYYY-MM-DD HH:MM:SS'.
    updateTime: row.update_time === null ? null : new Date(`${row.update_time.replace(' ', 'T')}Z`),
  };
}
