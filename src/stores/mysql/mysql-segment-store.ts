import mysql from 'mysql2/promise';
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
import { mysqlSsl } from './mysql-tls.js';

/** Leaf's own DDL (its README), only with IF NOT EXISTS: a Leaf table and frond's are the same. */
export const MYSQL_DDL = `CREATE TABLE IF NOT EXISTS \`leaf_alloc\` (
  \`biz_tag\` varchar(128) NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256) DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`;

/**
 * Leaf's allocation, sent as one batch so that it costs one round trip instead of
 * four. If a statement fails, the server skips the rest and the transaction stays open; the
 * connection is then destroyed, which rolls it back.
 */
const ADVANCE_BY_TABLE_STEP = `START TRANSACTION;
UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ? AND max_id <= ${MAX_SEGMENT_ID} - step;
SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?;
COMMIT`;
const ADVANCE_BY = `START TRANSACTION;
UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ? AND max_id <= ${MAX_SEGMENT_ID} - ?;
SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?;
COMMIT`;

/**
 * `leaf_alloc` in MySQL or MariaDB (InnoDB), shared by any number of nodes and by Leaf's own
 * servers: the row lock the UPDATE holds until COMMIT keeps two allocations apart. Every operation
 * runs on a pooled connection under a deadline; a connection that failed or overran is destroyed,
 * never reused, and the pool opens a new one for the next operation.
 */
export class MysqlSegmentStore implements TagStore {
  readonly description: string;
  private readonly pool: mysql.Pool;
  private readonly connectTimeoutMs: number;
  private readonly queryTimeoutMs: number;
  /** Core connections whose session settings are made (the pool hands out wrappers). */
  private readonly prepared = new WeakSet<object>();
  private readonly sessionSql: string;
  /** The first query of a store checks the table, once; a failed check is tried again next time. */
  private readonly ensureTable = onceUntilFailure(() => this.checkTable());

  constructor(options: NetworkSqlOptions) {
    const logger = options.logger ?? silentLogger;
    this.description = `mysql://${options.user === undefined ? '' : `${options.user}@`}${options.host}:${options.port}/${options.database}`;
    this.connectTimeoutMs = options.connectTimeoutMs;
    this.queryTimeoutMs = options.queryTimeoutMs;
    // UTC on both sides, so update_time reads the same whatever the server's zone; a lock wait
    // ends (and rolls back) within the operation's deadline instead of InnoDB's default 50 s;
    // autocommit even on a server that turns it off, or a read would keep an old snapshot open.
    this.sessionSql = `SET SESSION time_zone = '+00:00', SESSION innodb_lock_wait_timeout = ${Math.max(1, Math.ceil(options.queryTimeoutMs / 1000))}, SESSION autocommit = 1`;
    this.pool = mysql.createPool({
      host: options.host,
      port: options.port,
      database: options.database,
      ...(options.user === undefined ? {} : { user: options.user }),
      ...(options.password === undefined ? {} : { password: options.password }),
      connectionLimit: options.poolSize,
      maxIdle: options.poolSize,
      idleTimeout: 30_000,
      connectTimeout: options.connectTimeoutMs,
      enableKeepAlive: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      // For the one-round-trip allocation above; every value is escaped by the driver.
      multipleStatements: true,
      ...(options.tls && { ssl: mysqlSsl(options.tls, this.description) }),
    });
    // A pooled connection that breaks while idle (the server restarted) leaves the pool; this
    // listener keeps its 'error' event from ending the process.
    this.pool.on('connection', (connection) => {
      (connection as unknown as NodeJS.EventEmitter).on('error', (error: Error) => {
        logger.log('warn', 'store.connection_lost', { store: this.description, error: error.message });
      });
    });
  }

  async advance(tag: string, step?: number): Promise<Allocation | undefined> {
    const [results] =
      step === undefined
        ? await this.query(ADVANCE_BY_TABLE_STEP, [tag, tag])
        : await this.query(ADVANCE_BY, [step, tag, step, tag]);
    const [, update, select] = results as [unknown, mysql.ResultSetHeader, RawRow[], unknown];
    const row = select[0];
    if (row === undefined) return undefined;
    const tableStep = Number(row.step);
    // affectedRows counts matched rows (the driver sets CLIENT_FOUND_ROWS). No match, nothing
    // reserved: a row whose next range would pass 2^63 - 1 (Leaf's UPDATE would fail on it with
    // "BIGINT value is out of range"), or a row inserted after the UPDATE, not advanced.
    if (update.affectedRows === 0) {
      const used = step ?? tableStep;
      if (BigInt(row.max_id) > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, row.max_id, used);
      return undefined;
    }
    return { maxId: BigInt(row.max_id), step: step ?? tableStep, tableStep };
  }

  async listTags(): Promise<string[]> {
    const [rows] = await this.query('SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag');
    return (rows as { biz_tag: string }[]).map((row) => row.biz_tag);
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const [rows] = await this.query(`SELECT ${COLUMNS} FROM leaf_alloc WHERE biz_tag = ?`, [tag]);
    const row = (rows as RawRow[])[0];
    return row && toTagRow(row);
  }

  async listRows(): Promise<TagRow[]> {
    const [rows] = await this.query(`SELECT ${COLUMNS} FROM leaf_alloc ORDER BY biz_tag`);
    return (rows as RawRow[]).map(toTagRow);
  }

  async addTag(tag: NewTag): Promise<void> {
    try {
      await this.query('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', [
        tag.tag,
        tag.start.toString(),
        tag.step,
        tag.description ?? null,
      ]);
    } catch (error) {
      if (errorCode((error as Error).cause) === 'ER_DUP_ENTRY') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
  }

  async setStep(tag: string, step: number): Promise<void> {
    const [result] = await this.query('UPDATE leaf_alloc SET step = ? WHERE biz_tag = ?', [step, tag]);
    if ((result as mysql.ResultSetHeader).affectedRows === 0) {
      throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
    }
  }

  /** Creates leaf_alloc if it is missing (what `frond db init` does); never alters one. */
  init(): Promise<TableCheck> {
    return this.guard(() => this.checkTable());
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private query(sql: string, values?: unknown[]): Promise<[unknown, unknown]> {
    return this.guard(async () => {
      await this.ensureTable();
      return this.run(sql, values);
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

  /** One query on a pooled connection under a deadline; a failed connection is destroyed. */
  private async run(sql: string, values?: unknown[]): Promise<[unknown, unknown]> {
    const connection = await deadline(
      this.pool.getConnection(),
      this.connectTimeoutMs,
      'connecting',
      (late) => late.release(),
    );
    let healthy = false;
    try {
      const result = await deadline(
        (async () => {
          if (!this.prepared.has(connection.connection)) {
            await connection.query(this.sessionSql);
            this.prepared.add(connection.connection);
          }
          return connection.query(sql, values);
        })(),
        this.queryTimeoutMs,
        'query',
      );
      healthy = true;
      return result as [unknown, unknown];
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  private async checkTable(): Promise<TableCheck> {
    const probe = `SELECT ${COLUMNS} FROM leaf_alloc WHERE 1 = 0`;
    try {
      await this.run(probe);
      return 'exists';
    } catch (error) {
      if (errorCode(error) === 'ER_BAD_FIELD_ERROR') {
        throw new FrondError(
          'INVALID_CONFIG',
          `${this.description}: leaf_alloc lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
        );
      }
      if (errorCode(error) !== 'ER_NO_SUCH_TABLE') throw error;
    }
    // IF NOT EXISTS: several nodes starting at once on an empty database all get the one table.
    await this.run(MYSQL_DDL);
    return 'created';
  }
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * `promise`, or a rejection after `ms`. What it yields too late goes to `onLate` (a connection back
 * to the pool); a late failure is dropped, since the caller has already been told.
 */
function deadline<T>(promise: Promise<T>, ms: number, what: string, onLate?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new Error(`no answer within ${ms} ms (${what})`));
    }, ms);
    promise.then(
      (value) => {
        if (done) return onLate?.(value);
        done = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
