import type { Logger } from '../../core/logger.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { PostgresConnections, sqlState } from '../../sql/postgres-connections.js';
import { type Claimant, LEASE_COLUMNS, type LeaseRow, type LeaseTable } from './lease-table.js';

/**
 * One row per worker ID of a `--name` that was ever leased. `expires_at` is the database's clock
 * plus the TTL at the holder's last confirmed heartbeat; a row whose `expires_at` has passed (by
 * the same clock) is free. `last_timestamp` only grows: the highest time any holder recorded.
 */
export const POSTGRES_LEASE_DDL = `CREATE TABLE IF NOT EXISTS frond_worker_lease (
  name           VARCHAR(200) NOT NULL,
  worker_id      INTEGER      NOT NULL CHECK (worker_id >= 0),
  holder         VARCHAR(200) NOT NULL,
  claimed_at     TIMESTAMPTZ  NOT NULL,
  expires_at     TIMESTAMPTZ  NOT NULL,
  last_timestamp BIGINT       NOT NULL DEFAULT 0,
  updated_at     TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (name, worker_id)
)`;

/**
 * The database's time for every comparison and every expiry: `statement_timestamp()`, the start of
 * the statement, at or after the moment the database received it (so an expiry set from it is at
 * least TTL after the node sent the statement) and at or before the moment it compares (so a claim
 * it finds expired had expired). `now()` would be the transaction's start, earlier still.
 */
const NOW = 'statement_timestamp()';
const EXPIRY = `${NOW} + $4::integer * interval '1 millisecond'`;

/** Claims of one name queue on this lock ('frwl', apart from the segment store's 'frnd' locks). */
const NAME_LOCK = 'SELECT pg_advisory_xact_lock(1718777708, hashtext($1::text))';
const READ = `SELECT worker_id, last_timestamp, expires_at > ${NOW} AS live FROM frond_worker_lease WHERE name = $1`;
/** A row that was leased before and has expired: taken over, its last_timestamp kept. */
const TAKE = `UPDATE frond_worker_lease
   SET holder = $3, claimed_at = ${NOW}, expires_at = ${EXPIRY}, updated_at = ${NOW}
 WHERE name = $1 AND worker_id = $2 AND expires_at <= ${NOW}
RETURNING last_timestamp`;
/** A worker ID never leased under this name. */
const INSERT = `INSERT INTO frond_worker_lease (name, worker_id, holder, claimed_at, expires_at, last_timestamp, updated_at)
VALUES ($1, $2, $3, ${NOW}, ${EXPIRY}, 0, ${NOW})
ON CONFLICT (name, worker_id) DO NOTHING
RETURNING last_timestamp`;
/** Only this session, only before the claim expired: the guard of every write after the claim. */
const HELD = `name = $1 AND worker_id = $2 AND holder = $3 AND expires_at > ${NOW}`;
// An expiry never moves back, even if the database's clock did.
const HEARTBEAT = `UPDATE frond_worker_lease SET expires_at = GREATEST(expires_at, ${EXPIRY}), updated_at = ${NOW} WHERE ${HELD}`;
const RECORD = `UPDATE frond_worker_lease SET last_timestamp = GREATEST(last_timestamp, $4::bigint), updated_at = ${NOW} WHERE ${HELD}`;
const RELEASE = `UPDATE frond_worker_lease SET last_timestamp = GREATEST(last_timestamp, $4::bigint), expires_at = ${NOW}, updated_at = ${NOW} WHERE ${HELD}`;
const EXPIRE = `UPDATE frond_worker_lease SET expires_at = ${NOW}, updated_at = ${NOW}
 WHERE name = $1 AND holder = $2 AND expires_at > ${NOW}`;

/** PostgreSQL's undefined_table, undefined_column, duplicate_table and unique_violation (two CREATEs at once). */
const UNDEFINED_TABLE = '42P01';
const UNDEFINED_COLUMN = '42703';
const CREATE_RACE = new Set(['42P07', '23505']);

/** `frond_worker_lease` in PostgreSQL. */
export class PostgresLeaseTable implements LeaseTable {
  private readonly connections: PostgresConnections;

  constructor(config: NetworkSqlConfig, logger: Logger | undefined) {
    this.connections = new PostgresConnections(config, {
      description: describeNetworkSql('postgres', config),
      logger,
      lostEvent: 'worker.connection_lost',
    });
  }

  async ensure(): Promise<void> {
    try {
      await this.connections.query(`SELECT ${LEASE_COLUMNS} FROM frond_worker_lease WHERE false`);
      return;
    } catch (error) {
      if (!this.isMissingTable(error)) throw error;
    }
    try {
      await this.connections.query(POSTGRES_LEASE_DDL);
    } catch (error) {
      if (!CREATE_RACE.has(sqlState(error) ?? '')) throw error;
    }
  }

  claim(claimant: Claimant, order: (rows: LeaseRow[]) => number[]): Promise<WorkerLease | undefined> {
    const { name, holder, ttlMs } = claimant;
    return this.connections.transaction(async (client) => {
      await client.query(NAME_LOCK, [name]);
      const read = await client.query<{ worker_id: number; last_timestamp: string; live: boolean }>(READ, [
        name,
      ]);
      const rows = read.rows.map((row) => ({
        workerId: row.worker_id,
        lastTimestamp: Number(row.last_timestamp),
        live: row.live,
      }));
      const known = new Set(rows.map((row) => row.workerId));
      for (const workerId of order(rows)) {
        const result = await client.query<{ last_timestamp: string }>(known.has(workerId) ? TAKE : INSERT, [
          name,
          workerId,
          holder,
          ttlMs,
        ]);
        const row = result.rows[0];
        if (row !== undefined) return { workerId, lastTimestamp: Number(row.last_timestamp) };
      }
      return undefined;
    });
  }

  async heartbeat(claimant: Claimant, workerId: number): Promise<boolean> {
    return this.held(HEARTBEAT, claimant, workerId, claimant.ttlMs);
  }

  record(claimant: Claimant, workerId: number, timestamp: number): Promise<boolean> {
    return this.held(RECORD, claimant, workerId, String(timestamp));
  }

  release(claimant: Claimant, workerId: number, lastTimestamp: number): Promise<boolean> {
    return this.held(RELEASE, claimant, workerId, String(lastTimestamp));
  }

  async expire(claimant: Claimant): Promise<void> {
    await this.connections.query({ text: EXPIRE, values: [claimant.name, claimant.holder] });
  }

  isMissingTable(error: unknown): boolean {
    return sqlState(error) === UNDEFINED_TABLE;
  }

  isMissingColumn(error: unknown): boolean {
    return sqlState(error) === UNDEFINED_COLUMN;
  }

  end(): Promise<void> {
    return this.connections.end();
  }

  /** One guarded statement: true when it changed this session's row. */
  private async held(text: string, claimant: Claimant, workerId: number, value: number | string) {
    const result = await this.connections.query({
      text,
      values: [claimant.name, workerId, claimant.holder, value],
    });
    return result.rowCount === 1;
  }
}
