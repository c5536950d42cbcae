import { LEASE_DDL } from '../../src/worker-ids/sql/sql-lease-backend.js';
import type { TestDatabase } from './test-database.js';

/** `frond_worker_lease` in a test database, read and written as other nodes (or an operator) would. */
export interface LeaseRows {
  /** Creates the table (IF NOT EXISTS), as `frond db init` does. */
  create(): Promise<void>;
  /** Claims every worker ID of `name` but `keep` for `ms`, as other live nodes would: holder `other`. */
  holdAllBut(name: string, keep: readonly number[], ms?: number): Promise<void>;
  /** Expires `workerId`'s claim now, whoever holds it, keeping its last timestamp: as a lapsed lease. */
  expire(name: string, workerId: number): Promise<void>;
  /** Whether `workerId` is claimed and unexpired, by the database's clock. */
  live(name: string, workerId: number): Promise<boolean>;
  /** `last_timestamp` of `workerId` (0 without a row). */
  recorded(name: string, workerId: number): Promise<number>;
  /** The live holders of `name`'s worker IDs now, by worker ID. */
  holders(name: string): Promise<Map<number, string>>;
}

export function leaseRows(database: TestDatabase): LeaseRows {
  const pg = database.dialect === 'postgres';
  const now = pg ? 'statement_timestamp()' : 'UTC_TIMESTAMP(3)';
  const p = (i: number) => (pg ? `$${i}` : '?');
  return {
    async create() {
      await database.sql(LEASE_DDL[database.dialect] as string);
    },
    async holdAllBut(name, keep, ms = 120_000) {
      await this.create();
      const until = pg
        ? `${now} + interval '${ms} milliseconds'`
        : `${now} + INTERVAL ${ms * 1000} MICROSECOND`;
      const values: string[] = [];
      for (let id = 0; id < 1024; id++)
        if (!keep.includes(id)) values.push(`(${p(1)}, ${id}, 'other', ${now}, ${until}, 0, ${now})`);
      // One name parameter, repeated: PostgreSQL numbers it once, MySQL takes one value per `?`.
      await database.sql(
        `INSERT INTO frond_worker_lease (name, worker_id, holder, claimed_at, expires_at, last_timestamp, updated_at) VALUES ${values.join(', ')}`,
        pg ? [name] : values.map(() => name),
      );
    },
    async expire(name, workerId) {
      await database.sql(
        `UPDATE frond_worker_lease SET expires_at = ${now} WHERE name = ${p(1)} AND worker_id = ${p(2)}`,
        [name, workerId],
      );
    },
    async live(name, workerId) {
      const rows = await database.sql(
        `SELECT 1 AS live FROM frond_worker_lease WHERE name = ${p(1)} AND worker_id = ${p(2)} AND expires_at > ${now}`,
        [name, workerId],
      );
      return rows.length > 0;
    },
    async recorded(name, workerId) {
      const rows = await database.sql(
        `SELECT last_timestamp FROM frond_worker_lease WHERE name = ${p(1)} AND worker_id = ${p(2)}`,
        [name, workerId],
      );
      return Number(rows[0]?.last_timestamp ?? 0);
    },
    async holders(name) {
      const rows = await database.sql(
        `SELECT worker_id, holder FROM frond_worker_lease WHERE name = ${p(1)} AND expires_at > ${now}`,
        [name],
      );
      return new Map(rows.map((row) => [Number(row.worker_id), String(row.holder)]));
    },
  };
}
