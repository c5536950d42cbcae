import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import type { Gap, GapReason, HandBackResult } from '../../core/id-gaps.js';
import type { GapTotal } from '../../core/tag-catalogue.js';
import {
  type FormatSetting,
  type NewTag,
  type OpaqueSetting,
  type TagEntry,
  type TagRow,
  tagExists,
  tagNotFound,
} from '../../core/tag-catalogue.js';
import type { SqlValue } from '../../sql/network-sql.js';
import { refuseFormatWithOpaque } from '../format-rules.js';
import type { FencedAdvance, FenceOutcome, FenceRequest, HandBackRequest } from '../segment-primitive.js';
import type { OpenedStore, TableCheck } from '../store-backend.js';
import {
  COLUMNS,
  type FormatRow,
  formatMap,
  formatOf,
  type OptionRow,
  opaqueMap,
  type RawRow,
  settingOf,
  toTagRow,
} from './leaf-rows.js';
import {
  ADDING,
  ADDING_FORMATTED,
  ADDING_OPAQUE,
  accessRefused,
  FENCING,
  FROND_TABLES,
  type FrondTable,
  LISTING,
  type Needs,
  READING_GAPS,
  REMOVING,
  type Refusal,
  SERVING,
  SETTING_STEP,
  type StoreTable,
  tablesNotCreated,
  type Use,
} from './table-access.js';
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
  /** frond's own tables, each run only when the table check finds it missing (IF NOT EXISTS). */
  readonly frondDdl: Readonly<Record<FrondTable, string>>;
  /** A condition that holds for no row (`false`, `1 = 0`), for the probe of leaf_alloc's columns. */
  readonly noRow: string;
  /** `column` holds exactly the tag: the condition, with a `?` for the tag each of `params` times. */
  tagIs(column: string): { sql: string; params: number };
  /** `column` is not a counter's name (it has no U+001F), for listFormats to leave counters out. */
  notCounter(column: string): string;
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
  /** `SegmentPrimitive.handBack`, in the dialect's own transaction and statements. */
  handBack(request: HandBackRequest): Promise<HandBackResult>;
  /** `SegmentPrimitive.recordGaps`: one transaction, insert-or-ignore on frond_gaps' key. */
  recordGaps(gaps: readonly Gap[]): Promise<void>;
  /**
   * The row (and with `opaque` its setting, with `tag.format` its format row) in one transaction,
   * with the dialect's refusals (OPAQUE_TAG_FIXED, and format-rules.ts for formats); a duplicate key
   * is thrown as the driver's error (`isDuplicateKey`).
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
  /** A statement the database refused for want of a privilege, and so changed nothing. */
  isDenied(error: unknown): boolean;
  /** The account as the database names it, for a GRANT: `leaf` (PostgreSQL), `leaf@%` (MySQL). */
  account(): Promise<string>;
  /**
   * What the account lacks of `needs`, table by table (a table it lacks nothing of is left out),
   * found without changing anything.
   */
  refusals(needs: Needs): Promise<Refusal[]>;
  isMissingColumn(error: unknown): boolean;
  isDuplicateKey(error: unknown): boolean;
  close(): Promise<void>;
}

export interface SqlStoreOptions {
  /**
   * Creates nothing (`frond db check`): a missing leaf_alloc is an error, a missing
   * frond_tag_options holds no opaque tag (frond_tag_formats no formatted one), and no table is
   * created.
   */
  readOnly?: boolean | undefined;
}

/** A frond_gaps row as the drivers answer it: BIGINTs as text (PostgreSQL) or text/number (MySQL). */
interface GapRow {
  tag: string;
  start_id: string | number | bigint;
  end_id: string | number | bigint;
  reason: GapReason;
  node: string;
  created_at: string | number | bigint;
}

function toGap(row: GapRow): Gap {
  return {
    tag: row.tag,
    start: BigInt(row.start_id),
    end: BigInt(row.end_id),
    reason: row.reason,
    node: row.node,
    at: Number(row.created_at),
  };
}

/** How long the diagnosis of a refused statement is reused (SqlStore.diagnosed). */
const DIAGNOSIS_KEPT_MS = 1_000;

/** What a table's probe found: there, missing, or refused to this account (on MySQL, maybe missing too). */
type TableState = 'present' | 'missing' | 'denied';

/**
 * `leaf_alloc` and frond's tables on a database server (PostgreSQL, MySQL/MariaDB), shared by any
 * number of nodes: the segment primitive and the tag catalogue over one dialect (`SqlDialect`).
 * Every operation runs after the table check; a driver error is STORE_UNAVAILABLE, named after the
 * store, its cause the driver's error; a statement refused for want of a privilege is one line of
 * INVALID_CONFIG naming every privilege the operation lacks (table-access.ts).
 */
export class SqlStore implements OpenedStore {
  readonly description: string;
  /** A server may have replicas that a failover promotes: an older epoch elsewhere is refused. */
  readonly singleCopy = false;
  /** The tables, checked before the first operation, and again after one found a table missing. */
  private readonly tables = new TableCheckOnce(() => this.checkTables());
  /** frond's tables the last check found missing and left so (a read-only store creates nothing). */
  private absent = new Set<StoreTable>();
  /** Tables the last check could not read (on MySQL they may be missing too). */
  private refused = new Set<StoreTable>();
  /**
   * The last diagnosis of a refused statement per operation, shared for a second: with a grant
   * revoked, every tag's load fails every 500 ms, and each would otherwise ask the database again
   * what the account lacks (on MySQL a statement per privilege).
   */
  private readonly diagnoses = new Map<Use, { at: number; error: Promise<FrondError> }>();

  constructor(
    private readonly dialect: SqlDialect,
    private readonly options: SqlStoreOptions = {},
  ) {
    this.description = dialect.description;
  }

  advance(tag: string, step?: number): Promise<FencedAdvance | undefined> {
    return this.operate(SERVING, () => this.dialect.advance(tag, step));
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    return this.operate(FENCING, () => this.dialect.fence(request));
  }

  handBack(request: HandBackRequest): Promise<HandBackResult> {
    return this.operate(SERVING, () => this.dialect.handBack(request));
  }

  recordGaps(gaps: readonly Gap[]): Promise<void> {
    if (gaps.length === 0) return Promise.resolve();
    return this.operate(SERVING, () => this.dialect.recordGaps(gaps));
  }

  /**
   * By frond_gaps' primary key (tag, start_id, end_id): the tag compared exactly (its column is
   * binary on MySQL), `after` as an exact 64-bit integer, the limit a checked integer.
   */
  async listGaps(tag: string, after?: bigint, limit?: number): Promise<Gap[]> {
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0))
      throw new FrondError('INVALID_ARGUMENT', `a gap listing's limit is a whole number, not ${limit}`);
    const values: SqlValue[] = [tag];
    let where = 'tag = ?';
    if (after !== undefined) {
      where += ` AND start_id > ${this.dialect.int}`;
      values.push(after.toString());
    }
    const { rows } = await this.statement(
      `SELECT tag, start_id, end_id, reason, node, created_at FROM frond_gaps WHERE ${where}
        ORDER BY start_id, end_id${limit === undefined ? '' : ` LIMIT ${limit}`}`,
      values,
      READING_GAPS,
    );
    return (rows as GapRow[]).map(toGap);
  }

  /** Summed by the database (PostgreSQL's SUM of BIGINT is NUMERIC, MySQL's DECIMAL: no overflow), read as text. */
  async gapTotals(): Promise<Map<GapReason, GapTotal>> {
    const { rows } = await this.statement(
      'SELECT reason, COUNT(*) AS ranges, SUM(end_id - start_id) AS ids FROM frond_gaps GROUP BY reason',
      undefined,
      READING_GAPS,
    );
    const totals = new Map<GapReason, GapTotal>();
    for (const row of rows as { reason: GapReason; ranges: number | string; ids: number | string | bigint }[])
      totals.set(row.reason, {
        ranges: Number(row.ranges),
        ids: BigInt(String(row.ids).split('.')[0] ?? '0'),
      });
    return totals;
  }

  /**
   * The check a node makes before it serves segments: the tables are there (created if missing
   * and the account may), and the account holds every privilege serving needs. Otherwise one line
   * of INVALID_CONFIG naming what is missing, and the start is refused; a database that does not
   * answer is STORE_UNAVAILABLE, and the node starts and serves once it does.
   */
  checkServing(): Promise<void> {
    return this.guard(async () => {
      await this.tables.run();
      const refusals = await this.dialect.refusals(SERVING.needs);
      if (refusals.length > 0)
        throw accessRefused(this.description, await this.dialect.account(), SERVING, refusals);
    });
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

  /**
   * The row, and its setting and format joined as an advance joins them (by the column's own
   * comparison).
   */
  async tag(tag: string): Promise<TagEntry | undefined> {
    const where = this.tagIs('l.biz_tag', tag);
    const { rows } = await this.statement(
      `SELECT l.biz_tag, l.max_id, l.step, l.description, l.update_time, o.opaque_domain, o.key_check,
       f.id_format, f.time_zone
  FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag
  LEFT JOIN frond_tag_formats f ON f.biz_tag = l.biz_tag WHERE ${where.sql}`,
      where.values,
    );
    const row = (rows as (RawRow & OptionRow & FormatRow)[])[0];
    return row && { ...toTagRow(row), opaque: settingOf(row), format: formatOf(row) };
  }

  async addTag(tag: NewTag, opaque?: OpaqueSetting): Promise<void> {
    refuseFormatWithOpaque(tag, opaque);
    const use = tag.format !== undefined ? ADDING_FORMATTED : opaque === undefined ? ADDING : ADDING_OPAQUE;
    try {
      await this.operate(use, () => this.dialect.insertTag(tag, opaque));
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
      SETTING_STEP,
    );
    if (count === 0) throw tagNotFound(tag);
  }

  async removeTag(tag: string): Promise<bigint> {
    const kept = await this.operate(REMOVING, () => this.dialect.deleteTag(tag));
    if (kept === undefined) throw tagNotFound(tag);
    return kept;
  }

  async listFormats(): Promise<Map<string, FormatSetting>> {
    // A database frond never served from holds no formatted tag: read-only, its tables stay missing.
    if (this.options.readOnly && (await this.isAbsent('frond_tag_formats'))) return new Map();
    // Counters left out in SQL (an hourly tag has 168 of them in a week's retention); formatMap
    // leaves out any the condition let through.
    const { rows } = await this.statement(
      `SELECT biz_tag, id_format, time_zone FROM frond_tag_formats WHERE ${this.dialect.notCounter('biz_tag')}`,
    );
    return formatMap(rows as FormatRow[]);
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    // A database frond never served from holds no opaque tag: read-only, its tables stay missing.
    if (this.options.readOnly && (await this.isAbsent('frond_tag_options'))) return new Map();
    const { rows } = await this.statement('SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options');
    return opaqueMap(rows as OptionRow[]);
  }

  /**
   * Creates the tables that are missing (what `frond db init` does); never alters one. A table the
   * account cannot read is named, with what it lacks: on MySQL it may be missing as well.
   */
  init(): Promise<TableCheck> {
    return this.guard(async () => {
      const found = await this.checkTables();
      if (this.refused.size === 0) return found;
      const use: Use = {
        what: "'frond db init'",
        needs: Object.fromEntries([...this.refused].map((table) => [table, ['SELECT']])),
      };
      throw accessRefused(
        this.description,
        await this.dialect.account(),
        use,
        await this.dialect.refusals(use.needs),
      );
    });
  }

  close(): Promise<void> {
    return this.dialect.close();
  }

  private tagIs(column: string, tag: string): { sql: string; values: SqlValue[] } {
    const { sql, params } = this.dialect.tagIs(column);
    return { sql, values: Array<string>(params).fill(tag) };
  }

  /** One statement of `use` (reading the tags unless said), after the table check. */
  private statement(text: string, values?: readonly SqlValue[], use: Use = LISTING): Promise<SqlResult> {
    return this.operate(use, () => this.dialect.query(text, values));
  }

  private async isAbsent(table: StoreTable): Promise<boolean> {
    await this.guard(() => this.tables.run());
    return this.absent.has(table);
  }

  /**
   * `operation` after the table check, its driver errors as STORE_UNAVAILABLE. A statement that
   * finds a table missing (frond_fence, frond_high_water, frond_tag_options, frond_tag_formats or leaf_alloc dropped
   * while nodes run) changed nothing: its transaction rolled back. The check is forgotten, so the
   * tables are created again (leaf_alloc only if it is missing, never altered), and the operation
   * is run once more; a check that stayed done would fail every load until the node restarted. A
   * statement refused for want of a privilege changed nothing either: what `use` lacks is named.
   */
  private operate<T>(use: Use, operation: () => Promise<T>): Promise<T> {
    return this.guard(async () => {
      for (let attempt = 1; ; attempt++) {
        const checked = this.tables.run();
        await checked;
        try {
          return await operation();
        } catch (error) {
          if (this.dialect.isDenied(error)) throw await this.diagnosed(use, error);
          if (!this.dialect.isMissingTable(error)) throw error;
          this.tables.forget(checked);
          if (attempt >= 2) throw error;
        }
      }
    });
  }

  private diagnosed(use: Use, error: unknown): Promise<FrondError> {
    const last = this.diagnoses.get(use);
    if (last !== undefined && Date.now() - last.at < DIAGNOSIS_KEPT_MS) return last.error;
    const diagnosis = { at: Date.now(), error: this.refusal(use, error) };
    this.diagnoses.set(use, diagnosis);
    // A diagnosis that failed (the connection went) is not kept.
    diagnosis.error.catch(() => this.diagnoses.delete(use));
    return diagnosis.error;
  }

  /**
   * What the account lacks of `use`, in one line; the database's own words when the check finds
   * nothing amiss (a privilege on a column, a role not set).
   */
  private async refusal(use: Use, error: unknown): Promise<FrondError> {
    const [account, refusals] = await Promise.all([this.dialect.account(), this.dialect.refusals(use.needs)]);
    if (refusals.length > 0) return accessRefused(this.description, account, use, refusals);
    return new FrondError(
      'INVALID_CONFIG',
      `${this.description}: ${describeError(error)} (the account ${account}, ${use.what})`,
      { cause: error },
    );
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

  /**
   * leaf_alloc (created if missing, never altered), then frond's own tables: each is looked for
   * first, and only one that is missing is created. A CREATE at every start failed for an account
   * with every privilege on tables an administrator had made (PostgreSQL checks the schema's CREATE
   * privilege before it sees that the table exists), and for Leaf's account, which may not create.
   */
  private async checkTables(): Promise<TableCheck> {
    const refused = new Set<StoreTable>();
    const found = await this.checkLeafTable(refused);
    const missing: FrondTable[] = [];
    for (const table of FROND_TABLES) {
      const state = await this.probe(table);
      if (state === 'missing') missing.push(table);
      if (state === 'denied') refused.add(table);
    }
    this.refused = refused;
    this.absent = new Set(missing);
    if (this.options.readOnly) return found;
    for (const table of missing) await this.create(this.dialect.frondDdl[table], missing);
    this.absent.clear();
    return found;
  }

  private async checkLeafTable(refused: Set<StoreTable>): Promise<TableCheck> {
    const state = await this.probe('leaf_alloc', COLUMNS);
    // Refused: the operations that need it say what the account lacks (on MySQL it may be missing).
    if (state === 'denied') refused.add('leaf_alloc');
    if (state !== 'missing') return 'exists';
    if (this.options.readOnly)
      throw new FrondError(
        'INVALID_CONFIG',
        `${this.description} has no leaf_alloc: give the --store of the nodes' database`,
      );
    await this.create(this.dialect.leafDdl, ['leaf_alloc']);
    await this.probe('leaf_alloc', COLUMNS);
    return 'created';
  }

  /** Whether `table` is there, by a SELECT of no row (of `columns`: leaf_alloc's are checked). */
  private async probe(table: StoreTable, columns = '1'): Promise<TableState> {
    try {
      await this.dialect.query(`SELECT ${columns} FROM ${table} WHERE ${this.dialect.noRow}`);
      return 'present';
    } catch (error) {
      if (this.dialect.isMissingColumn(error))
        throw new FrondError(
          'INVALID_CONFIG',
          `${this.description}: ${table} lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
        );
      if (this.dialect.isMissingTable(error)) return 'missing';
      if (this.dialect.isDenied(error)) return 'denied';
      throw error;
    }
  }

  /**
   * IF NOT EXISTS: several nodes starting at once on an empty database all get the one table. An
   * account that may not create it stops here, naming every table `missing`.
   */
  private async create(ddl: string, missing: readonly StoreTable[]): Promise<void> {
    try {
      await this.dialect.query(ddl);
    } catch (error) {
      if (this.dialect.isDenied(error))
        throw tablesNotCreated(this.description, await this.dialect.account(), missing, describeError(error));
      // Two nodes creating a table at once: on PostgreSQL one loses with a duplicate in pg_type.
      if (!this.dialect.isDuplicateKey(error)) throw error;
    }
  }
}
