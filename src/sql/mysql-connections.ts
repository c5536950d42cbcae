import mysql from 'mysql2/promise';
import { silentLogger } from '../core/logger.js';
import { mysqlSsl } from './mysql-tls.js';
import type { ConnectionsOptions, NetworkSqlConfig, SqlValue } from './network-sql.js';

/**
 * A 64-bit integer parameter. Every value goes to the server as a parameter of a prepared
 * statement, and mysql2 sends a JS number as a DOUBLE: `max_id + ?` would then be computed in
 * floating point and be off by up to 512 above 2^62. So integers are sent as decimal strings and
 * cast here, which MySQL and MariaDB convert exactly.
 */
export const INT = 'CAST(? AS SIGNED)';

/**
 * The session every connection gets before its first statement, all values parameters:
 * - sql_mode pinned, so frond reads the same on any server whatever its global mode: strict (a tag
 *   over 128 characters or a BIGINT out of range fails the statement instead of being cut to fit
 *   and written), and no engine substitution (leaf_alloc on MyISAM would have no row locks, and
 *   two nodes could take the same range). NO_BACKSLASH_ESCAPES is left out, though nothing depends
 *   on it either way now: no value is ever written into SQL text, so no escaping is read by the
 *   server (on a server with it set, a tag `z'; UPDATE leaf_alloc SET max_id=1 ...` that the driver
 *   had escaped as `z\'` ended the string and ran the UPDATE). Modes such as ANSI_QUOTES,
 *   PIPES_AS_CONCAT or MariaDB's ORACLE, which change how the statements below parse, are off too.
 *   These three exist under the same names in MySQL 5.7 and 8 and in MariaDB 10 and 11
 *   (NO_AUTO_CREATE_USER, in MariaDB's default, is gone from MySQL 8, where naming it fails).
 * - UTC on both sides, so update_time reads the same whatever the server's zone.
 * - A lock wait ends (and rolls back) within the operation's deadline instead of InnoDB's default 50 s.
 * - autocommit even on a server that turns it off, or a read would keep an old snapshot open.
 */
const SESSION_SQL = `SET SESSION sql_mode = ?, SESSION time_zone = ?, SESSION innodb_lock_wait_timeout = ${INT}, SESSION autocommit = 1`;
const SQL_MODE = 'STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

/**
 * Prepared statements each connection keeps (mysql2 closes the least recently used one beyond
 * it). The segment store prepares fewer than 20 distinct statements, their texts fixed (values never
 * enter them), so 64 keeps every one prepared once per connection; mysql2's default, 16,000 per
 * connection, could with a pool of 20 exceed the server's limit for all sessions together
 * (max_prepared_stmt_count, 16,382 by default), which Leaf's servers share.
 */
const MAX_PREPARED_STATEMENTS = 64;

/** A statement on one connection: a prepared one with `values`, text without (its text is fixed). */
export type Sql = (text: string, values?: readonly SqlValue[]) => Promise<[unknown, unknown]>;

/**
 * A pool of connections to one MySQL or MariaDB database (InnoDB), as frond uses it for anything
 * it keeps there. Every operation runs on a pooled connection whose session is set (SESSION_SQL),
 * under a deadline; a connection that failed or overran is destroyed, never reused, and the pool
 * opens a new one for the next operation. Every value goes to the server as a parameter of a
 * server-side prepared statement, never in SQL text.
 */
export class MysqlConnections {
  private readonly pool: mysql.Pool;
  private readonly connectTimeoutMs: number;
  private readonly queryTimeoutMs: number;
  /** Core connections whose session settings are made (the pool hands out wrappers). */
  private readonly prepared = new WeakSet<object>();
  private readonly sessionValues: SqlValue[];

  constructor(config: NetworkSqlConfig, options: ConnectionsOptions) {
    const logger = options.logger ?? silentLogger;
    const event = options.lostEvent ?? 'store.connection_lost';
    this.connectTimeoutMs = config.connectTimeoutMs;
    this.queryTimeoutMs = config.queryTimeoutMs;
    // innodb_lock_wait_timeout counts whole seconds, from 1.
    const lockWaitSeconds = Math.max(1, Math.ceil(config.queryTimeoutMs / 1000));
    this.sessionValues = [SQL_MODE, '+00:00', String(lockWaitSeconds)];
    this.pool = mysql.createPool({
      host: config.host,
      port: config.port,
      database: config.database,
      ...(config.user === undefined ? {} : { user: config.user }),
      ...(config.password === undefined ? {} : { password: config.password }),
      connectionLimit: config.poolSize,
      maxIdle: config.poolSize,
      idleTimeout: 30_000,
      connectTimeout: config.connectTimeoutMs,
      enableKeepAlive: true,
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      // One statement per call: a value can never carry a second one, and there is no batch to
      // smuggle it into.
      multipleStatements: false,
      maxPreparedStatements: MAX_PREPARED_STATEMENTS,
      ...(config.tls && { ssl: mysqlSsl(config.tls, options.description) }),
    });
    // A pooled connection that breaks while idle (the server restarted) leaves the pool; this
    // listener keeps its 'error' event from ending the process.
    this.pool.on('connection', (connection) => {
      (connection as unknown as NodeJS.EventEmitter).on('error', (error: Error) => {
        logger.log('warn', event, { store: options.description, error: error.message });
      });
    });
  }

  /** One statement on a pooled connection under a deadline; a failed connection is destroyed. */
  run(sql: string, values?: readonly SqlValue[]): Promise<[unknown, unknown]> {
    return this.onConnection((connection) => send(connection, sql, values), 'query');
  }

  /**
   * `operation` in one transaction on one connection, under one deadline; committed if it
   * resolves, and the connection destroyed (which rolls back) if anything fails.
   */
  transaction<T>(what: string, operation: (sql: Sql) => Promise<T>): Promise<T> {
    return this.onConnection(async (connection) => {
      await send(connection, 'START TRANSACTION');
      const value = await operation((text, values) => send(connection, text, values));
      await send(connection, 'COMMIT');
      return value;
    }, what);
  }

  /**
   * `transaction`, holding the named lock (GET_LOCK) from before it starts until after it commits:
   * the transaction's first read then sees everything that another holder of the lock committed.
   * A session's lock outlives its transaction, so it is released by hand after COMMIT; a
   * connection destroyed on failure releases it with the session. `lockName` is at most 64
   * characters (MySQL's limit).
   */
  exclusiveTransaction<T>(what: string, lockName: string, operation: (sql: Sql) => Promise<T>): Promise<T> {
    return this.onConnection(async (connection) => {
      // Within the query deadline (whole seconds for GET_LOCK), so a holder that hangs fails this
      // call in time rather than at the deadline with the lock still wanted.
      const waitSeconds = Math.max(1, Math.floor(this.queryTimeoutMs / 2000));
      const [rows] = await send(connection, 'SELECT GET_LOCK(?, ?) AS got', [lockName, String(waitSeconds)]);
      if (Number((rows as { got: unknown }[])[0]?.got) !== 1)
        throw new Error(
          `${what}: another connection held the lock ${lockName} for ${waitSeconds} s (tags being added or removed); try again`,
        );
      await send(connection, 'START TRANSACTION');
      const value = await operation((text, values) => send(connection, text, values));
      await send(connection, 'COMMIT');
      await send(connection, 'DO RELEASE_LOCK(?)', [lockName]);
      return value;
    }, what);
  }

  /**
   * `work` on a pooled connection whose session settings are made, all under one deadline; the
   * connection goes back to the pool if `work` resolved, and is destroyed otherwise.
   */
  async onConnection<T>(work: (connection: mysql.PoolConnection) => Promise<T>, what: string): Promise<T> {
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
            await send(connection, SESSION_SQL, this.sessionValues);
            this.prepared.add(connection.connection);
          }
          return work(connection);
        })(),
        this.queryTimeoutMs,
        what,
      );
      healthy = true;
      return result;
    } finally {
      if (healthy) connection.release();
      else connection.destroy();
    }
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * `text` on `connection`: with values, as a server-side prepared statement (mysql2 `execute`,
 * kept per connection), the values sent apart from the text and never parsed as SQL; without, as
 * text (a fixed statement: DDL, START TRANSACTION, COMMIT), which saves the prepare.
 */
function send(
  connection: mysql.PoolConnection,
  text: string,
  values?: readonly SqlValue[],
): Promise<[unknown, unknown]> {
  return (
    values === undefined ? connection.query(text) : connection.execute(text, values as SqlValue[])
  ) as Promise<[unknown, unknown]>;
}

/** The code of a MySQL error (`ER_NO_SUCH_TABLE`), from the driver. */
export function errorCode(error: unknown): string | undefined {
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
