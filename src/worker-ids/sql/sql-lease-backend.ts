import { randomBytes } from 'node:crypto';
import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import { MYSQL_TLS } from '../../sql/mysql-tls.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { parseNetworkSqlUrl } from '../../sql/network-sql-url.js';
import { POSTGRES_TLS } from '../../sql/postgres-tls.js';
import { type LeaseBackend, LeaseLostError, type LeaseSession } from '../lease/lease-worker-id-source.js';
import { workerIdCandidates } from '../lease/worker-id-candidates.js';
import { type Claimant, LEASE_TABLE, type LeaseTable } from './lease-table.js';
import { MYSQL_LEASE_DDL, MysqlLeaseTable } from './mysql-lease-table.js';
import { POSTGRES_LEASE_DDL, PostgresLeaseTable } from './postgres-lease-table.js';

/** A database for leases, as its URL names it. */
export interface LeaseDatabase {
  dialect: 'postgres' | 'mysql';
  config: NetworkSqlConfig;
}

/** The DDL of `frond_worker_lease` by dialect (the store registry's backend names), without the final `;`. */
export const LEASE_DDL: Readonly<Record<string, string>> = {
  postgres: POSTGRES_LEASE_DDL,
  mysql: MYSQL_LEASE_DDL,
};

/**
 * Reads a lease database's URL (`postgres://`, `postgresql://`, `mysql://`), as `--store` reads
 * one: every mistake is one line of INVALID_CONFIG without the password, naming `setting`.
 */
export function parseLeaseDatabase(spec: string, setting: string): LeaseDatabase | undefined {
  const dialect = /^postgres(ql)?:\/\//.test(spec)
    ? 'postgres'
    : spec.startsWith('mysql://')
      ? 'mysql'
      : undefined;
  if (dialect === undefined) return undefined;
  try {
    const config =
      dialect === 'postgres'
        ? parseNetworkSqlUrl(spec, { scheme: 'postgres', defaultPort: 5432, tls: POSTGRES_TLS })
        : parseNetworkSqlUrl(spec, { scheme: 'mysql', defaultPort: 3306, tls: MYSQL_TLS });
    return { dialect, config };
  } catch (error) {
    // The URL layer names `--store`, the setting it reads most often.
    if (isFrondError(error) && error.message.startsWith('--store '))
      throw new FrondError(error.code, `${setting} ${error.message.slice('--store '.length)}`, {
        cause: error,
      });
    throw error;
  }
}

/** `postgres://frond@db1:5432/ids`, without the password. */
export function describeLeaseDatabase(database: LeaseDatabase): string {
  return describeNetworkSql(database.dialect, database.config);
}

/** A pool on the lease database: created for each session, ended with it. */
export function openLeaseTable(database: LeaseDatabase, logger?: Logger): LeaseTable {
  return database.dialect === 'postgres'
    ? new PostgresLeaseTable(database.config, logger)
    : new MysqlLeaseTable(database.config, logger);
}

/**
 * Creates `frond_worker_lease` in the database `spec` names if it is missing (`frond db init`);
 * false for a store that is no database server (SQLite), which holds no leases.
 */
export async function initLeaseTable(spec: string): Promise<boolean> {
  const database = parseLeaseDatabase(spec, '--store');
  if (database === undefined) return false;
  const table = openLeaseTable({ ...database, config: { ...database.config, poolSize: 1 } });
  try {
    await table.ensure();
  } finally {
    await table.end();
  }
  return true;
}

export interface SqlLeaseOptions {
  database: LeaseDatabase;
  /** `--name`: the rows of the table this fleet uses. */
  name: string;
  /** Written into `holder` after the session's token, for people reading the table. */
  identity: string;
  ttlMs: number;
  /** Bounds connecting and every statement (the generic source bounds them too). */
  timeoutMs: number;
  /** The layout's largest worker ID (2^worker bits - 1): no claim goes past it. */
  maxWorkerId?: number;
  logger?: Logger;
}

/** The table's `holder` is at most this long. */
const HOLDER_LENGTH = 200;

/**
 * Lease mode in a SQL database (`frond_worker_lease`): a row per worker ID of the name, claimed in
 * one transaction, kept by heartbeats that push `expires_at` (the database's clock) one TTL ahead,
 * and free once the database's clock passes it. Every write after the claim is guarded by the
 * session's holder token and `expires_at > now()`, so a node that lost its claim (frozen, cut off)
 * cannot move the record its successor waits for, nor extend a claim another node now holds.
 *
 * A session is a random token and a pool of its own: a loss gets a new token, and connections a
 * dead network left hanging are dropped with the old pool.
 */
export class SqlLeaseBackend implements LeaseBackend {
  readonly description: string;
  private readonly database: LeaseDatabase;

  constructor(private readonly options: SqlLeaseOptions) {
    const { config } = options.database;
    // Each session's pool: two connections (a heartbeat and a record may overlap), each bounded
    // by the coordinator timeout when it is shorter than the URL's.
    this.database = {
      dialect: options.database.dialect,
      config: {
        ...config,
        poolSize: Math.min(config.poolSize, 2),
        connectTimeoutMs: Math.min(config.connectTimeoutMs, options.timeoutMs),
        queryTimeoutMs: Math.min(config.queryTimeoutMs, options.timeoutMs),
      },
    };
    this.description = `${describeLeaseDatabase(options.database)} ${LEASE_TABLE} --name ${options.name}`;
  }

  async open(): Promise<LeaseSession> {
    const table = openLeaseTable(this.database, this.options.logger);
    try {
      await table.ensure();
    } catch (error) {
      await table.end().catch(() => {});
      if (table.isMissingColumn(error))
        throw new FrondError(
          'INVALID_CONFIG',
          `${this.description}: ${LEASE_TABLE} lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
          { cause: error },
        );
      return sql(this.description, 'check the table', Promise.reject(error));
    }
    const token = randomBytes(8).toString('hex');
    const claimant: Claimant = {
      name: this.options.name,
      holder: `${token} ${this.options.identity}`.slice(0, HOLDER_LENGTH),
      ttlMs: this.options.ttlMs,
    };
    return new SqlLeaseSession(table, claimant, this.description, this.options.maxWorkerId ?? MAX_WORKER_ID);
  }
}

class SqlLeaseSession implements LeaseSession {
  readonly ttlMs: number;
  private workerId: number | undefined;
  /** The highest timestamp this session read or wrote: a record at or below it needs no statement. */
  private held = 0;
  /** A claim was sent: from then on the session may hold a row, until the release lands. */
  private claiming = false;
  private released = false;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly table: LeaseTable,
    private readonly claimant: Claimant,
    private readonly description: string,
    private readonly maxWorkerId: number,
  ) {
    this.ttlMs = claimant.ttlMs;
  }

  async claim(preferred: number | undefined): Promise<WorkerLease> {
    this.claiming = true;
    let free = 0;
    const lease = await sql(
      this.description,
      'claim',
      this.table.claim(this.claimant, (rows) => {
        const taken = new Set(rows.filter((row) => row.live).map((row) => row.workerId));
        const lastTimestamps = new Map(rows.map((row) => [row.workerId, row.lastTimestamp]));
        const candidates = workerIdCandidates({
          taken,
          lastTimestamps,
          preferred,
          maxWorkerId: this.maxWorkerId,
        });
        free = candidates.length;
        // The name's lock keeps other claims out, so the first is free; a few more for rows
        // written by hand meanwhile.
        return candidates.slice(0, 4);
      }),
    );
    if (lease === undefined)
      throw new FrondError(
        'WORKER_ID_UNAVAILABLE',
        free === 0
          ? `all ${this.maxWorkerId + 1} worker IDs are held by live leases in ${this.description}`
          : `${this.description}: the worker IDs that were free were claimed meanwhile; retrying`,
      );
    this.workerId = lease.workerId;
    this.held = lease.lastTimestamp;
    return lease;
  }

  async heartbeat(): Promise<void> {
    const workerId = this.claimed();
    if (!(await sql(this.description, 'heartbeat', this.table.heartbeat(this.claimant, workerId))))
      throw this.lost(workerId);
  }

  async record(timestamp: number): Promise<void> {
    if (timestamp <= this.held) return;
    const workerId = this.claimed();
    if (!(await sql(this.description, 'record', this.table.record(this.claimant, workerId, timestamp))))
      throw this.lost(workerId);
    this.held = timestamp;
  }

  async release(lastTimestamp: number): Promise<void> {
    try {
      const workerId = this.workerId;
      if (workerId === undefined) return;
      const last = Math.max(this.held, lastTimestamp);
      if (!(await sql(this.description, 'release', this.table.release(this.claimant, workerId, last))))
        throw this.lost(workerId);
      this.released = true;
    } finally {
      await this.close();
    }
  }

  /**
   * Frees whatever the session still holds (a loss the node decided, a claim whose answer came too
   * late, a release that failed), then ends its pool. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const holding = this.claiming && !this.released;
      this.workerId = undefined;
      if (holding) await this.table.expire(this.claimant).catch(() => {});
      await this.table.end().catch(() => {});
    })();
    return this.closing;
  }

  private claimed(): number {
    if (this.workerId === undefined || this.closing !== undefined)
      throw new LeaseLostError(`${this.description}: this session holds no worker ID`);
    return this.workerId;
  }

  private lost(workerId: number): LeaseLostError {
    return new LeaseLostError(
      `${this.description}: the claim on worker ID ${workerId} expired or is another holder's (${this.claimant.holder})`,
    );
  }
}

/** A driver's error as WORKER_ID_UNAVAILABLE with what was being done: the source retries it. */
async function sql<T>(description: string, what: string, promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    if (isFrondError(error)) throw error;
    throw new FrondError('WORKER_ID_UNAVAILABLE', `${description}: ${what}: ${describeError(error)}`, {
      cause: error,
    });
  }
}
