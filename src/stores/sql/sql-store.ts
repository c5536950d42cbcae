import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import {
  type NewTag,
  type OpaqueSetting,
  type TagEntry,
  type TagRow,
  tagExists,
  tagNotFound,
} from '../../core/tag-catalogue.js';
import type { SqlValue } from '../../sql/network-sql.js';
import type { FencedAdvance, FenceOutcome, FenceRequest } from '../segment-primitive.js';
import type { OpenedStore, TableCheck } from '../store-backend.js';
import { COLUMNS, type OptionRow, opaqueMap, type RawRow, settingOf, toTagRow } from './leaf-rows.js';
import { TableCheckOnce } from './table-check.js';

/** What one statement answered: its rows (none for a write), and how many rows it changed or matched. */
export interface SqlResult {
  rows: unknown[];
  count: number;
}

/**
 * What one database server supplies to `SqlStore`: its connections, the parts of its statements
 * that differ, its advance and fence transactions, its inserts and its error codes. The rules
 * around them (errors named after the store, the table check and its retry, TAG_EXISTS,
 * TAG_NOT_FOUND, the catalogue's reads and setStep) are SqlStore's, written once.
 */
export interface SqlDialect {
  /** `postgres://user@host:port/db`, without the password. */
  readonly description: string;
  /** The DDL of leaf_alloc, run only when the table is missing (IF NOT EXISTS: a race is harmless). */
  readonly leafDdl: string;
  /** frond's own tables, run at every table check (IF NOT EXISTS). */
  readonly frondDdl: readonly string[];
  /** A condition that holds for no row (`false`, `1 = 0`), for the probe of leaf_alloc's columns. */
  readonly noRow: string;
  /** `column` holds exactly the tag: the condition, with a `?` for the tag each of `params` times. */
  tagIs(column: string): { sql: string; params: number };
  /** An integer parameter: `?`, or the cast that reads one exactly (MySQL). */
  readonly int: string;
  /** What an UPDATE of leaf_alloc also sets, where the table has no ON UPDATE (PostgreSQL). */
  readonly touch: string;
  /**
   * One statement on a pooled connection, `?` its parameters (numbered by the dialect where it
   * numbers them); without values it is sent as text.
   */
  query(text: string, values?: readonly SqlValue[]): Promise<SqlResult>;
  /** `SegmentPrimitive.advance`, in the dialect's own transaction and statements. */
  advance(tag: string, step: number | undefined): Promise<FencedAdvance | undefined>;
  /** `SegmentPrimitive.fence`, in the dialect's own transaction and statements. */
  fence(request: FenceRequest): Promise<FenceOutcome>;
  /**
   * The row (and with `opaque` its setting) in one transaction, with the dialect's refusals
   * (OPAQUE_TAG_FIXED); a duplicate key is thrown as the driver's error (`isDuplicateKey`).
   */
  insertTag(tag: NewTag, opaque: OpaqueSetting | undefined): Promise<void>;
  /**
   * The row deleted and its max_id recorded in frond_high_water (the higher of the two kept), in one
   * transaction that locks the row as an advance does; resolves what frond_high_water then holds for
   * the name, or undefined when there was no row (nothing written).
   */
  deleteTag(tag: string): Promise<bigint | undefined>;
  /** A statement that failed because a table is missing, and so changed nothing. */
  isMissingTable(error: unknown): boolean;
  isMissingColumn(error: unknown): boolean;
  isDuplicateKey(error: unknown): boolean;
  close(): Promise<void>;
}

/**
 * `leaf_alloc` and frond's tables on a database server (PostgreSQL, MySQL/MariaDB), shared by any
 * number of nodes: the segment primitive and the tag catalogue over one dialect (`SqlDialect`).
 * Every operation runs after the table check; a driver error is STORE_UNAVAILABLE, named after the
 * store, its cause the driver's error.
 */
export class SqlStore implements OpenedStore {
  readonly description: string;
  /** A server may have replicas that a failover promotes: an older epoch elsewhere is refused. */
  readonly singleCopy = false;
  /** The tables, checked before the first operation, and again after one found a table missing. */
  private readonly tables = new TableCheckOnce(() => this.checkTables());

  constructor(private readonly dialect: SqlDialect) {
    this.description = dialect.description;
  }

  advance(tag: string, step?: number): Promise<FencedAdvance | undefined> {
    return this.operate(() => this.dialect.advance(tag, step));
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    return this.operate(() => this.dialect.fence(request));
  }

  async listTags(): Promise<string[]> {
    const { rows } = await this.statement('SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag');
    return (rows as { biz_tag: string }[]).map((row) => row.biz_tag);
  }

  /** Every row after `after`, in one statement: a network store's rows arrive in chunks anyway. */
  async listRows(after?: string): Promise<TagRow[]> {
    const { rows } =
      after === undefined
        ? await this.statement(`SELECT ${COLUMNS} FROM leaf_alloc ORDER BY biz_tag`)
        : await this.statement(`SELECT ${COLUMNS} FROM leaf_alloc WHERE biz_tag > ? ORDER BY biz_tag`, [
            after,
          ]);
    return (rows as RawRow[]).map(toTagRow);
  }

  /** The row, and its setting joined as an advance joins it (by the column's own comparison). */
  async tag(tag: string): Promise<TagEntry | undefined> {
    const where = this.tagIs('l.biz_tag', tag);
    const { rows } = await this.statement(
      `SELECT l.biz_tag, l.max_id, l.step, l.description, l.update_time, o.opaque_domain, o.key_check
  FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag WHERE ${where.sql}`,
      where.values,
    );
    const row = (rows as (RawRow & OptionRow)[])[0];
    return row && { ...toTagRow(row), opaque: settingOf(row) };
  }

  async addTag(tag: NewTag, opaque?: OpaqueSetting): Promise<void> {
    try {
      await this.operate(() => this.dialect.insertTag(tag, opaque));
    } catch (error) {
      if (this.dialect.isDuplicateKey((error as Error).cause)) throw tagExists(tag.tag);
      throw error;
    }
  }

  async setStep(tag: string, step: number): Promise<void> {
    const where = this.tagIs('biz_tag', tag);
    const { count } = await this.statement(
      `UPDATE leaf_alloc SET step = ${this.dialect.int}${this.dialect.touch} WHERE ${where.sql}`,
      [String(step), ...where.values],
    );
    if (count === 0) throw tagNotFound(tag);
  }

  async removeTag(tag: string): Promise<bigint> {
    const kept = await this.operate(() => this.dialect.deleteTag(tag));
    if (kept === undefined) throw tagNotFound(tag);
    return kept;
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    const { rows } = await this.statement('SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options');
    return opaqueMap(rows as OptionRow[]);
  }

  /** Creates leaf_alloc if it is missing (what `frond db init` does); never alters one. */
  init(): Promise<TableCheck> {
    return this.guard(() => this.checkTables());
  }

  close(): Promise<void> {
    return this.dialect.close();
  }

  private tagIs(column: string, tag: string): { sql: string; values: SqlValue[] } {
    const { sql, params } = this.dialect.tagIs(column);
    return { sql, values: Array<string>(params).fill(tag) };
  }

  /** One statement, after the table check. */
  private statement(text: string, values?: readonly SqlValue[]): Promise<SqlResult> {
    return this.operate(() => this.dialect.query(text, values));
  }

  /**
   * `operation` after the table check, its driver errors as STORE_UNAVAILABLE. A statement that
   * finds a table missing (frond_fence, frond_high_water, frond_tag_options or leaf_alloc dropped
   * while nodes run) changed nothing: its transaction rolled back. The check is forgotten, so the
   * tables are created again (leaf_alloc only if it is missing, never altered), and the operation
   * is run once more; a check that stayed done would fail every load until the node restarted.
   */
  private operate<T>(operation: () => Promise<T>): Promise<T> {
    return this.guard(async () => {
      for (let attempt = 1; ; attempt++) {
        const checked = this.tables.run();
        await checked;
        try {
          return await operation();
        } catch (error) {
          if (!this.dialect.isMissingTable(error)) throw error;
          this.tables.forget(checked);
          if (attempt >= 2) throw error;
        }
      }
    });
  }

  /** Driver errors become STORE_UNAVAILABLE, named after the store; the driver's error is the cause. */
  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (isFrondError(error)) throw error;
      throw new FrondError('STORE_UNAVAILABLE', `${this.description}: ${describeError(error)}`, {
        cause: error,
      });
    }
  }

  /** leaf_alloc (created if missing, never altered), then frond's own tables. */
  private async checkTables(): Promise<TableCheck> {
    const found = await this.checkLeafTable();
    for (const ddl of this.dialect.frondDdl) await this.create(ddl);
    return found;
  }

  private async checkLeafTable(): Promise<TableCheck> {
    const probe = `SELECT ${COLUMNS} FROM leaf_alloc WHERE ${this.dialect.noRow}`;
    try {
      await this.dialect.query(probe);
      return 'exists';
    } catch (error) {
      if (this.dialect.isMissingColumn(error))
        throw new FrondError(
          'INVALID_CONFIG',
          `${this.description}: leaf_alloc lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
        );
      if (!this.dialect.isMissingTable(error)) throw error;
    }
    await this.create(this.dialect.leafDdl);
    await this.dialect.query(probe);
    return 'created';
  }

  /** IF NOT EXISTS: several nodes starting at once on an empty database all get the one table. */
  private async create(ddl: string): Promise<void> {
    try {
      await this.dialect.query(ddl);
    } catch (error) {
      // Two nodes creating a table at once: on PostgreSQL one loses with a duplicate in pg_type.
      if (!this.dialect.isDuplicateKey(error)) throw error;
    }
  }
}
