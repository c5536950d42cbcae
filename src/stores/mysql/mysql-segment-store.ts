import mysql from 'mysql2/promise';
import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import {
  type NewTag,
  type OpaqueSetting,
  opaqueNameUsed,
  type TagRow,
  type TagStore,
} from '../../core/tag-admin.js';
import { PLAIN_KIND } from '../../core/tag-kind.js';
import type { FencedAdvance, FenceOps, FenceOutcome, FenceRequest } from '../fencing/fence.js';
import {
  COLUMNS,
  type NetworkSqlOptions,
  type OptionRow,
  onceUntilFailure,
  opaqueMap,
  optionsOf,
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
 * frond's own tables, beside Leaf's (which stays as it is): the fence row, one per database, and
 * the highest max_id granted per tag, written in the same transaction as every fenced advance
 * (docs/databases.md, "Failover, restore and split brain").
 */
export const MYSQL_FROND_DDL = [
  `CREATE TABLE IF NOT EXISTS \`frond_fence\` (
  \`id\` tinyint NOT NULL,
  \`epoch\` bigint NOT NULL,
  \`identity\` varchar(128) NOT NULL,
  \`fenced_at\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS \`frond_high_water\` (
  \`biz_tag\` varchar(128) NOT NULL,
  \`max_id\` bigint NOT NULL,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
  `CREATE TABLE IF NOT EXISTS \`frond_tag_options\` (
  \`biz_tag\` varchar(128) NOT NULL,
  \`opaque_domain\` varchar(16) NOT NULL,
  \`key_check\` varchar(32) NOT NULL,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
];

/**
 * `column` holds the tag `?` spelled exactly (two parameters, both the tag). MySQL's and MariaDB's
 * default collations match `Orders`, `ORDERS` and `orders ` with a row `orders`: the first test finds
 * the row by its key, the second keeps it only if the bytes are the same (issue 16, item 2), so a
 * case variant advances no row and is TAG_NOT_FOUND. Converted to utf8mb4 first, so a latin1 or
 * utf8mb3 column compares as the UTF-8 the tag is sent in.
 */
const exactTag = (column: string) =>
  `${column} = ? AND CAST(CONVERT(${column} USING utf8mb4) AS BINARY) = CAST(? AS BINARY)`;

/** A fenced advance that InnoDB picked as a deadlock victim is tried this often in all. */
const DEADLOCK_ATTEMPTS = 10;

/** The server a statement runs on: a replica promoted in a failover has its own server_id. */
const IDENTITY_SQL = 'CAST(@@server_id AS CHAR)';
/**
 * The fence row names this server (compared as bytes: the row's and the session's collations
 * differ). Kept in a user variable, which a statement-based binlog carries by value, so a replica
 * applying the UPDATE does not compare against its own server_id.
 */
const FENCE_CURRENT = 'CAST(@frond_identity AS BINARY) <=> CAST(@@server_id AS BINARY)';

/**
 * The fenced advance, one batch and one transaction: the fence row is read under a shared lock
 * (only a fence waits for it) and compared with this server; the tag's row advances only if they
 * match, from at least the highest max_id frond recorded for it, and the new max_id is recorded.
 */
const advanceFencedSql = (byStep: boolean) => {
  const by = byStep ? '?' : 'step';
  // The floor a restored leaf_alloc goes on from: its own max_id, or frond's record when higher.
  const floor =
    'GREATEST(max_id, COALESCE((SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = ?), max_id))';
  return `SET @frond_epoch = NULL, @frond_identity = NULL;
START TRANSACTION;
SELECT epoch, identity INTO @frond_epoch, @frond_identity FROM frond_fence WHERE id = 1 LOCK IN SHARE MODE;
SET @frond_current = ${FENCE_CURRENT};
UPDATE leaf_alloc SET max_id = ${floor} + ${by} WHERE ${exactTag('biz_tag')} AND @frond_current = 1 AND ${floor} <= ${MAX_SEGMENT_ID} - ${by};
INSERT INTO frond_high_water (biz_tag, max_id) SELECT biz_tag, max_id FROM leaf_alloc WHERE ${exactTag('biz_tag')} AND @frond_current = 1
  ON DUPLICATE KEY UPDATE max_id = GREATEST(frond_high_water.max_id, VALUES(max_id));
SELECT @frond_epoch AS epoch, ${IDENTITY_SQL} AS identity, @frond_current AS current, l.max_id, l.step,
  (SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = ?) AS high_water
  FROM (SELECT 1) one LEFT JOIN leaf_alloc l ON ${exactTag('l.biz_tag')};
COMMIT`;
};

/**
 * Leaf's allocation, word for word, sent as one batch so that it costs one round trip instead of
 * four. If a statement fails, the server skips the rest and the transaction stays open; the
 * connection is then destroyed, which rolls it back.
 */
const ADVANCE_BY_TABLE_STEP = `START TRANSACTION;
UPDATE leaf_alloc SET max_id = max_id + step WHERE ${exactTag('biz_tag')} AND max_id <= ${MAX_SEGMENT_ID} - step;
SELECT max_id, step FROM leaf_alloc WHERE ${exactTag('biz_tag')};
COMMIT`;
const ADVANCE_BY = `START TRANSACTION;
UPDATE leaf_alloc SET max_id = max_id + ? WHERE ${exactTag('biz_tag')} AND max_id <= ${MAX_SEGMENT_ID} - ?;
SELECT max_id, step FROM leaf_alloc WHERE ${exactTag('biz_tag')};
COMMIT`;

/**
 * `leaf_alloc` in MySQL or MariaDB (InnoDB), shared by any number of nodes and by Leaf's own
 * servers: the row lock the UPDATE holds until COMMIT keeps two allocations apart. Every operation
 * runs on a pooled connection under a deadline; a connection that failed or overran is destroyed,
 * never reused, and the pool opens a new one for the next operation.
 */
export class MysqlSegmentStore implements TagStore, FenceOps {
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
        ? await this.query(ADVANCE_BY_TABLE_STEP, [tag, tag, tag, tag])
        : await this.query(ADVANCE_BY, [step, tag, tag, step, tag, tag]);
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
    return {
      maxId: BigInt(row.max_id),
      step: step ?? tableStep,
      tableStep,
      kind: PLAIN_KIND /* TRANSITIONAL: read with the grant */,
    };
  }

  async advanceFenced(tag: string, step?: number): Promise<FencedAdvance | undefined> {
    const results = await this.withDeadlockRetry(() =>
      step === undefined
        ? this.query(advanceFencedSql(false), [tag, tag, tag, tag, tag, tag, tag, tag, tag])
        : this.query(advanceFencedSql(true), [tag, step, tag, tag, tag, step, tag, tag, tag, tag, tag]),
    );
    const parts = results[0] as unknown[];
    const update = parts[4] as mysql.ResultSetHeader;
    const row = (
      parts[6] as {
        epoch: string | null;
        identity: string;
        current: number | string;
        max_id: string | null;
        step: number | null;
        high_water: string | null;
      }[]
    )[0];
    if (row === undefined) throw new Error('the fenced advance returned no row');
    const epoch = row.epoch === null ? 0 : Number(row.epoch);
    if (Number(row.current) !== 1) return { kind: 'unfenced', epoch, identity: row.identity };
    if (row.max_id === null || row.step === null) return undefined;
    const tableStep = Number(row.step);
    if (update.affectedRows === 0) {
      // Nothing reserved: the next range would pass 2^63 - 1, or the row came after the UPDATE.
      const used = step ?? tableStep;
      const floor = maxOf(BigInt(row.max_id), row.high_water === null ? undefined : BigInt(row.high_water));
      if (floor > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, floor, used);
      return undefined;
    }
    return {
      kind: 'granted',
      allocation: {
        maxId: BigInt(row.max_id),
        step: step ?? tableStep,
        tableStep,
        kind: PLAIN_KIND /* TRANSITIONAL: read with the grant */,
      },
      epoch,
      identity: row.identity,
    };
  }

  /**
   * InnoDB answers a deadlock by rolling the whole transaction back, so nothing was reserved and
   * the load may be tried again at once (first loads of several tags insert their
   * frond_high_water rows side by side, and the gap locks of REPEATABLE READ can cross).
   */
  private async withDeadlockRetry<T>(operation: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await operation();
      } catch (error) {
        if (
          attempt >= DEADLOCK_ATTEMPTS ||
          (errorCode(error) !== 'ER_LOCK_DEADLOCK' &&
            errorCode((error as Error).cause) !== 'ER_LOCK_DEADLOCK')
        )
          throw error;
        // Apart at random, so the two transactions that crossed do not cross again: up to 5, 10,
        // 15 … ms (0.2 s in all at most), well inside a load's deadline.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
      }
    }
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    return this.guard(async () => {
      await this.ensureTable();
      // The first fence of a database inserts its row while other nodes' advances hold share locks
      // on the gap where it goes: InnoDB may pick either as a deadlock victim and roll it back whole,
      // so it is simply run again.
      return this.withDeadlockRetry(() =>
        this.transaction(async (sql) => {
          const [identityRows] = await sql(`SELECT ${IDENTITY_SQL} AS identity`);
          const identity = (identityRows as { identity: string }[])[0]?.identity as string;
          const lock = async () =>
            (
              (await sql('SELECT epoch, identity FROM frond_fence WHERE id = 1 FOR UPDATE'))[0] as {
                epoch: string;
                identity: string;
              }[]
            )[0];
          let row = await lock();
          if (row === undefined) {
            // A database frond never fenced: it records this one and raises nothing.
            await sql('INSERT IGNORE INTO frond_fence (id, epoch, identity) VALUES (1, ?, ?)', [
              request.aboveEpoch + 1,
              identity,
            ]);
            row = (await lock()) as { epoch: string; identity: string };
            return { epoch: Number(row.epoch), identity: row.identity, fenced: false, tags: 0 };
          }
          if (row.identity === identity && Number(row.epoch) > request.observedEpoch) {
            return { epoch: Number(row.epoch), identity, fenced: false, tags: 0 };
          }
          // A tag within the skip of 2^63 - 1 is raised to it, and so is used up, not overflowed.
          const [raised] = await sql(
            `UPDATE leaf_alloc SET max_id = CASE WHEN max_id > ${MAX_SEGMENT_ID} - ? THEN ${MAX_SEGMENT_ID} ELSE max_id + ? END`,
            [request.skip.toString(), request.skip.toString()],
          );
          for (const [tag, maxId] of request.atLeast) {
            await sql('UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ? AND max_id < ?', [
              maxId.toString(),
              tag,
              maxId.toString(),
            ]);
          }
          const epoch = Math.max(Number(row.epoch), request.aboveEpoch) + 1;
          await sql(
            'UPDATE frond_fence SET epoch = ?, identity = ?, fenced_at = CURRENT_TIMESTAMP WHERE id = 1',
            [epoch, identity],
          );
          return { epoch, identity, fenced: true, tags: (raised as mysql.ResultSetHeader).affectedRows };
        }),
      );
    });
  }

  async listTags(): Promise<string[]> {
    const [rows] = await this.query('SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag');
    return (rows as { biz_tag: string }[]).map((row) => row.biz_tag);
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const [rows] = await this.query(`SELECT ${COLUMNS} FROM leaf_alloc WHERE ${exactTag('biz_tag')}`, [
      tag,
      tag,
    ]);
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

  async tagOptions(tag: string): Promise<{ opaque: OpaqueSetting | null } | undefined> {
    const [rows] = await this.query(
      'SELECT o.opaque_domain, o.key_check FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag WHERE l.biz_tag = ?',
      [tag],
    );
    return optionsOf((rows as OptionRow[])[0]);
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    const [rows] = await this.query('SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options');
    return opaqueMap(rows as OptionRow[]);
  }

  async addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): Promise<void> {
    try {
      await this.guard(async () => {
        await this.ensureTable();
        await this.transaction(async (sql) => {
          // A name frond_high_water knows and leaf_alloc no longer holds served plain IDs
          // (opaqueNameUsed); a row that is there fails the insert below (TAG_EXISTS). No lock:
          // without its leaf_alloc row no advance can record the name meanwhile.
          const [used] = await sql(
            `SELECT 1 AS used FROM frond_high_water WHERE ${exactTag('biz_tag')}
              AND NOT EXISTS (SELECT 1 FROM leaf_alloc WHERE ${exactTag('biz_tag')})`,
            [tag.tag, tag.tag, tag.tag, tag.tag],
          );
          if ((used as unknown[]).length > 0) throw opaqueNameUsed(tag.tag);
          await sql('INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check) VALUES (?, ?, ?)', [
            tag.tag,
            opaque.domain,
            opaque.keyCheck,
          ]);
          await sql('INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES (?, ?, ?, ?)', [
            tag.tag,
            tag.start.toString(),
            tag.step,
            tag.description ?? null,
          ]);
        });
      });
    } catch (error) {
      if (errorCode((error as Error).cause) === 'ER_DUP_ENTRY') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
  }

  async setStep(tag: string, step: number): Promise<void> {
    const [result] = await this.query(`UPDATE leaf_alloc SET step = ? WHERE ${exactTag('biz_tag')}`, [
      step,
      tag,
      tag,
    ]);
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
  private run(sql: string, values?: unknown[]): Promise<[unknown, unknown]> {
    return this.onConnection(
      (connection) => connection.query(sql, values) as Promise<[unknown, unknown]>,
      'query',
    );
  }

  /**
   * `operation` in one transaction on one connection, under one deadline; committed if it
   * resolves, and the connection destroyed (which rolls back) if anything fails.
   */
  private transaction<T>(
    operation: (sql: (text: string, values?: unknown[]) => Promise<[unknown, unknown]>) => Promise<T>,
  ): Promise<T> {
    return this.onConnection(async (connection) => {
      await connection.query('START TRANSACTION');
      const value = await operation(
        (text, values) => connection.query(text, values) as Promise<[unknown, unknown]>,
      );
      await connection.query('COMMIT');
      return value;
    }, 'fence');
  }

  /**
   * `work` on a pooled connection whose session settings are made, all under one deadline; the
   * connection goes back to the pool if `work` resolved, and is destroyed otherwise.
   */
  private async onConnection<T>(
    work: (connection: mysql.PoolConnection) => Promise<T>,
    what: string,
  ): Promise<T> {
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

  /** leaf_alloc (created if missing, never altered), then frond's own tables. */
  private async checkTable(): Promise<TableCheck> {
    const found = await this.checkLeafTable();
    for (const ddl of MYSQL_FROND_DDL) await this.run(ddl);
    return found;
  }

  private async checkLeafTable(): Promise<TableCheck> {
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

function maxOf(a: bigint, b: bigint | undefined): bigint {
  return b !== undefined && b > a ? b : a;
}
