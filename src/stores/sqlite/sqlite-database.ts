import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { FrondError } from '../../core/errors.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import type { NewTag, OpaqueSetting, TagRow } from '../../core/tag-admin.js';
import { PLAIN_KIND } from '../../core/tag-kind.js';
import { type OptionRow, opaqueMap, optionsOf } from '../sql/network-sql.js';
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

interface RawRow {
  biz_tag: string;
  max_id: bigint;
  step: bigint;
  description: string | null;
  update_time: string | null;
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
  private readonly statements;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path, { timeout: 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(SQLITE_DDL);
    this.db.exec(SQLITE_FROND_DDL);
    const db = this.db;
    this.statements = {
      // The bound is part of the UPDATE: past 2^63 - 1 SQLite would turn max_id into a REAL, a
      // rounded number; here the row is left as it is and `advance` says why.
      advanceByTableStep: db.prepare(
        `UPDATE leaf_alloc SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = ? AND max_id <= ${MAX_SEGMENT_ID} - step`,
      ),
      advanceBy: db.prepare(
        `UPDATE leaf_alloc SET max_id = max_id + @step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = @tag AND max_id <= ${MAX_SEGMENT_ID} - @step`,
      ),
      read: db
        .prepare('SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc WHERE biz_tag = ?')
        .safeIntegers(true),
      list: db.prepare('SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag'),
      rows: db
        .prepare('SELECT biz_tag, max_id, step, description, update_time FROM leaf_alloc ORDER BY biz_tag')
        .safeIntegers(true),
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
      insert: db.prepare('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)'),
      setStep: db.prepare('UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?'),
      options: db.prepare(
        'SELECT o.opaque_domain, o.key_check FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag WHERE l.biz_tag = ?',
      ),
      opaque: db.prepare('SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options'),
      insertOptions: db.prepare(
        'INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check) VALUES (?, ?, ?)',
      ),
    };
  }

  advance(tag: string, step?: number): Allocation | undefined {
    const run = this.db.transaction((): Allocation | undefined => {
      // The step is bound as a bigint: a JavaScript number is bound as a REAL, and max_id + REAL
      // above 2^53 is rounded.
      const changed =
        step === undefined
          ? this.statements.advanceByTableStep.run(tag).changes
          : this.statements.advanceBy.run({ step: BigInt(step), tag }).changes;
      const row = this.statements.read.get(tag) as RawRow | undefined;
      if (row === undefined) return undefined;
      if (typeof row.max_id !== 'bigint') {
        throw new FrondError(
          'INVALID_CONFIG',
          `tag ${tag} has max_id ${String(row.max_id)} in leaf_alloc, which is not an integer; set an integer max_id`,
        );
      }
      const tableStep = Number(row.step);
      if (changed === 0) throw rangeExhausted(tag, row.max_id, step ?? tableStep);
      return {
        maxId: row.max_id,
        step: step ?? tableStep,
        tableStep,
        kind: PLAIN_KIND /* TRANSITIONAL: read with the grant */,
      };
    });
    return run.immediate();
  }

  listTags(): string[] {
    return (this.statements.list.all() as { biz_tag: string }[]).map((row) => row.biz_tag);
  }

  getTag(tag: string): TagRow | undefined {
    const row = this.statements.read.get(tag) as RawRow | undefined;
    return row && toTagRow(row);
  }

  listRows(): TagRow[] {
    return (this.statements.rows.all() as RawRow[]).map(toTagRow);
  }

  // Pages for /db: each reply is small, so decoding it on the main thread never takes long (the
  // whole 50,000-row table in one reply did: 200-300 ms).
  listRowsAfter(after: string | undefined, limit: number): TagRow[] {
    const rows =
      after === undefined
        ? this.statements.rowsFirst.all(limit)
        : this.statements.rowsAfter.all(after, limit);
    return (rows as RawRow[]).map(toTagRow);
  }

  addTag(tag: NewTag): void {
    try {
      this.statements.insert.run(tag.tag, tag.start, tag.step, tag.description ?? null);
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
  }

  setStep(tag: string, step: number): void {
    if (this.statements.setStep.run(step, tag).changes === 0) {
      throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
    }
  }

  tagOptions(tag: string): { opaque: OpaqueSetting | null } | undefined {
    return optionsOf(this.statements.options.get(tag) as OptionRow | undefined);
  }

  listOpaque(): Map<string, OpaqueSetting> {
    return opaqueMap(this.statements.opaque.all() as OptionRow[]);
  }

  addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): void {
    try {
      this.db
        .transaction(() => {
          this.statements.insertOptions.run(tag.tag, opaque.domain, opaque.keyCheck);
          this.statements.insert.run(tag.tag, tag.start, tag.step, tag.description ?? null);
        })
        .immediate();
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
  }

  close(): void {
    this.db.close();
  }
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
