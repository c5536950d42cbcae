import pg from 'pg';
import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import type { NewTag, TagRow, TagStore } from '../../core/tag-admin.js';
import {
  COLUMNS,
  type NetworkSqlOptions,
  onceUntilFailure,
  type RawRow,
  toTagRow,
} from '../sql/network-sql.js';
import type { TableCheck } from '../store-backend.js';
import { postgresSsl } from './postgres-tls.js';

/**
 * Leaf's MySQL table in PostgreSQL's types. MySQL's TIMESTAMP is an instant (stored in UTC), which
 * is PostgreSQL's TIMESTAMPTZ. PostgreSQL has no ON UPDATE, so every UPDATE frond runs sets
 * update_time itself.
 */
export const POSTGRES_DDL = `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag     VARCHAR(128) NOT NULL DEFAULT '',
  max_id      BIGINT       NOT NULL DEFAULT 1,
  step        INTEGER      NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
)`;

// Named statements are parsed once per connection.
// The bound is part of the UPDATE: a range past 2^63 - 1 changes nothing (PostgreSQL would fail the
// statement with "bigint out of range", which says less).
const ADVANCE_BY_TABLE_STEP = {
  name: 'frond_advance_by_table_step_v2',
  text: `UPDATE leaf_alloc SET max_id = max_id + step, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1 AND max_id <= ${MAX_SEGMENT_ID} - step RETURNING max_id, step`,
};
const ADVANCE_BY = {
  name: 'frond_advance_by_v2',
  text: `UPDATE leaf_alloc SET max_id = max_id + $1::int8, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2 AND max_id <= ${MAX_SEGMENT_ID} - $1::int8 RETURNING max_id, step`,
};

/**
 * `leaf_alloc` in PostgreSQL, shared by any number of nodes. An allocation is one statement,
 * `UPDATE … RETURNING`: its own transaction, holding the row lock from the update to the commit, as
 * Leaf's UPDATE-then-SELECT transaction does, in one round trip instead of four. The pool
 * reconnects by itself; a connection that failed or timed out is discarded, never reused.
 */
export class PostgresSegmentStore implements TagStore {
  readonly description: string;
  private readonly pool: pg.Pool;
  /** The first query of a store checks the table, once; a failed check is tried again next time. */
  private readonly ensureTable = onceUntilFailure(() => this.checkTable());

  constructor(options: NetworkSqlOptions) {
    const logger = options.logger ?? silentLogger;
    this.description = `postgres://${options.user === undefined ? '' : `${options.user}@`}${options.host}:${options.port}/${options.database}`;
    this.pool = new pg.Pool({
      host: options.host,
      port: options.port,
      database: options.database,
      ...(options.user === undefined ? {} : { user: options.user }),
      ...(options.password === undefined ? {} : { password: options.password }),
      max: options.poolSize,
      connectionTimeoutMillis: options.connectTimeoutMs,
      statement_timeout: options.queryTimeoutMs,
      // The client-side bound fires a second later, when the server could not even say it gave up.
      query_timeout: options.queryTimeoutMs + 1_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'frond',
      ...(options.tls && { ssl: postgresSsl(options.tls, this.description) }),
    });
    // An idle connection that breaks (the server restarted) is dropped by the pool; without this
    // listener its 'error' event would end the process.
    this.pool.on('error', (error) => {
      logger.log('warn', 'store.connection_lost', { store: this.description, error: error.message });
    });
  }

  async advance(tag: string, step?: number): Promise<Allocation | undefined> {
    const result = await this.query<{ max_id: string; step: number }>(
      step === undefined
        ? { ...ADVANCE_BY_TABLE_STEP, values: [tag] }
        : { ...ADVANCE_BY, values: [step, tag] },
    );
    const row = result.rows[0];
    if (row !== undefined) return { maxId: BigInt(row.max_id), step: step ?? row.step, tableStep: row.step };
    // Nothing changed: no row, or one whose next range would pass 2^63 - 1.
    const found = await this.query<{ max_id: string; step: number }>({
      text: 'SELECT max_id, step FROM leaf_alloc WHERE biz_tag = $1',
      values: [tag],
    });
    const current = found.rows[0];
    const used = step ?? current?.step ?? 0;
    if (current !== undefined && BigInt(current.max_id) > MAX_SEGMENT_ID - BigInt(used)) {
      throw rangeExhausted(tag, current.max_id, used);
    }
    return undefined;
  }

  async listTags(): Promise<string[]> {
    const result = await this.query<{ biz_tag: string }>({
      text: 'SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag',
    });
    return result.rows.map((row) => row.biz_tag);
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const result = await this.query<RawRow>({
      text: `SELECT ${COLUMNS} FROM leaf_alloc WHERE biz_tag = $1`,
      values: [tag],
    });
    const row = result.rows[0];
    return row && toTagRow(row);
  }

  async listRows(): Promise<TagRow[]> {
    const result = await this.query<RawRow>({ text: `SELECT ${COLUMNS} FROM leaf_alloc ORDER BY biz_tag` });
    return result.rows.map(toTagRow);
  }

  async addTag(tag: NewTag): Promise<void> {
    try {
      await this.query({
        text: 'INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ($1, $2, $3, $4)',
        values: [tag.tag, tag.start.toString(), tag.step, tag.description ?? null],
      });
    } catch (error) {
      if (sqlState((error as Error).cause) === '23505') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
  }

  async setStep(tag: string, step: number): Promise<void> {
    const result = await this.query({
      text: 'UPDATE leaf_alloc SET step = $1, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2',
      values: [step, tag],
    });
    if (result.rowCount === 0) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
  }

  /** Creates leaf_alloc if it is missing (what `frond db init` does); never alters one. */
  init(): Promise<TableCheck> {
    return this.guard(() => this.checkTable());
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** One statement on a pooled connection; a failed connection is closed, not returned to the pool. */
  private query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    return this.guard(async () => {
      await this.ensureTable();
      return this.pool.query<R>(config);
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

  private async checkTable(): Promise<TableCheck> {
    const probe = `SELECT ${COLUMNS} FROM leaf_alloc WHERE false`;
    try {
      await this.pool.query(probe);
      return 'exists';
    } catch (error) {
      if (sqlState(error) === '42703') throw missingColumn(this.description, error);
      if (sqlState(error) !== '42P01') throw error;
    }
    try {
      await this.pool.query(POSTGRES_DDL);
    } catch (error) {
      // Two nodes creating the table at once: one of them loses with a duplicate in pg_type.
      if (sqlState(error) !== '23505') throw error;
    }
    await this.pool.query(probe);
    return 'created';
  }
}

/** The SQLSTATE of a PostgreSQL error (`42P01`: no such table). */
function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function missingColumn(store: string, error: unknown): FrondError {
  return new FrondError(
    'INVALID_CONFIG',
    `${store}: leaf_alloc lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
  );
}
