import type { WorkerLease } from '../../core/worker-id-source.js';

/** The table every SQL lease lives in, in the segment store's database or one of its own. */
export const LEASE_TABLE = 'frond_worker_lease';

/** Every column frond reads or writes, for the probe that checks the table has them. */
export const LEASE_COLUMNS = 'name, worker_id, holder, claimed_at, expires_at, last_timestamp, updated_at';

/** A row of the table as a claim reads it: `live` by the database's own clock. */
export interface LeaseRow {
  workerId: number;
  lastTimestamp: number;
  live: boolean;
}

/** Who asks: the `--name` the rows belong to and this session's holder text. */
export interface Claimant {
  name: string;
  /** `<random token> <identity>`: equal only for this session, readable by people. */
  holder: string;
  ttlMs: number;
}

/**
 * `frond_worker_lease` in one database (PostgreSQL or MySQL/MariaDB): the statements, each a guarded
 * write whose WHERE holds only while the claim is this session's and unexpired by the database's
 * clock, so no answer here depends on the node's clock. Driver errors are thrown as they are; the
 * backend names them.
 */
export interface LeaseTable {
  /** Creates the table if it is missing (a probe first, so a table that exists needs no CREATE grant). */
  ensure(): Promise<void>;
  /**
   * In one transaction, holding the name's lock (claims of one name queue; heartbeats and records
   * do not take it): reads the name's rows, asks `order` for the worker IDs to try, and claims the
   * first one whose row is absent or expired. Undefined when none could be claimed.
   */
  claim(claimant: Claimant, order: (rows: LeaseRow[]) => number[]): Promise<WorkerLease | undefined>;
  /** `expires_at = now + ttl` while held; false when the claim is gone (expired or another holder). */
  heartbeat(claimant: Claimant, workerId: number): Promise<boolean>;
  /** `last_timestamp` raised to `timestamp` (never lowered) while held; false when not held. */
  record(claimant: Claimant, workerId: number, timestamp: number): Promise<boolean>;
  /** `record` and the claim expired at once, in one statement; false when not held. */
  release(claimant: Claimant, workerId: number, lastTimestamp: number): Promise<boolean>;
  /**
   * Whatever this session still holds expired at once, nothing recorded: found by its holder, so a
   * claim whose answer never arrived (committed after the node gave up waiting) is freed too.
   */
  expire(claimant: Claimant): Promise<void>;
  /** Whether a driver error says the table is missing (dropped while nodes run). */
  isMissingTable(error: unknown): boolean;
  /** Whether a driver error says a column frond needs is missing (a table made by hand). */
  isMissingColumn(error: unknown): boolean;
  end(): Promise<void>;
}
