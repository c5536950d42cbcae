import { createHash } from 'node:crypto';
import type { Logger } from '../../core/logger.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import { errorCode, INT, MysqlConnections } from '../../sql/mysql-connections.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { type Claimant, LEASE_COLUMNS, type LeaseRow, type LeaseTable } from './lease-table.js';

/**
 * As POSTGRES_LEASE_DDL. The times are DATETIME(3) in UTC (`UTC_TIMESTAMP(3)`), which neither the
 * session's time zone changes nor 2038 ends (TIMESTAMP's range); the name is ASCII and compared
 * byte for byte, as ZooKeeper and etcd compare the paths it names there.
 */
export const MYSQL_LEASE_DDL = `CREATE TABLE IF NOT EXISTS \`frond_worker_lease\` (
  \`name\` varchar(200) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  \`worker_id\` int NOT NULL,
  \`holder\` varchar(200) NOT NULL,
  \`claimed_at\` datetime(3) NOT NULL,
  \`expires_at\` datetime(3) NOT NULL,
  \`last_timestamp\` bigint NOT NULL DEFAULT 0,
  \`updated_at\` datetime(3) NOT NULL,
  PRIMARY KEY (\`name\`, \`worker_id\`)
) ENGINE=InnoDB`;

/**
 * The database's time: the statement's start (MySQL and MariaDB read the clock once per statement),
 * at or after the moment the statement arrived and at or before the moment it compares.
 */
const NOW = 'UTC_TIMESTAMP(3)';
const EXPIRY = `${NOW} + INTERVAL ${INT} MICROSECOND`;

// In a claim transaction, after the name's lock: the first read takes the snapshot, so it sees
// every claim committed before the lock was had.
const READ = `SELECT worker_id, last_timestamp, expires_at > ${NOW} AS live FROM frond_worker_lease WHERE name = ?`;
const TAKE = `UPDATE frond_worker_lease SET holder = ?, claimed_at = ${NOW}, expires_at = ${EXPIRY}, updated_at = ${NOW}
 WHERE name = ? AND worker_id = ${INT} AND expires_at <= ${NOW}`;
/** A locking read: the row as it is now (it is this transaction's, locked by TAKE), not the snapshot's. */
const TAKEN = `SELECT last_timestamp FROM frond_worker_lease WHERE name = ? AND worker_id = ${INT} FOR UPDATE`;
const INSERT = `INSERT INTO frond_worker_lease (name, worker_id, holder, claimed_at, expires_at, last_timestamp, updated_at)
VALUES (?, ${INT}, ?, ${NOW}, ${EXPIRY}, 0, ${NOW})`;
/** Only this session, only before the claim expired; its values come after the SET's. */
const HELD = `name = ? AND worker_id = ${INT} AND holder = ? AND expires_at > ${NOW}`;
const HEARTBEAT = `UPDATE frond_worker_lease SET expires_at = GREATEST(expires_at, ${EXPIRY}), updated_at = ${NOW} WHERE ${HELD}`;
const RECORD = `UPDATE frond_worker_lease SET last_timestamp = GREATEST(last_timestamp, ${INT}), updated_at = ${NOW} WHERE ${HELD}`;
const RELEASE = `UPDATE frond_worker_lease SET last_timestamp = GREATEST(last_timestamp, ${INT}), expires_at = ${NOW}, updated_at = ${NOW} WHERE ${HELD}`;
const EXPIRE = `UPDATE frond_worker_lease SET expires_at = ${NOW}, updated_at = ${NOW}
 WHERE name = ? AND holder = ? AND expires_at > ${NOW}`;

/** `frond_worker_lease` in MySQL or MariaDB (InnoDB). */
export class MysqlLeaseTable implements LeaseTable {
  private readonly connections: MysqlConnections;

  constructor(config: NetworkSqlConfig, logger: Logger | undefined) {
    this.connections = new MysqlConnections(config, {
      description: describeNetworkSql('mysql', config),
      logger,
      lostEvent: 'worker.connection_lost',
    });
  }

  async ensure(): Promise<void> {
    try {
      await this.connections.run(`SELECT ${LEASE_COLUMNS} FROM frond_worker_lease WHERE 1 = 0`);
      return;
    } catch (error) {
      if (!this.isMissingTable(error)) throw error;
    }
    await this.connections.run(MYSQL_LEASE_DDL);
  }

  claim(claimant: Claimant, order: (rows: LeaseRow[]) => number[]): Promise<WorkerLease | undefined> {
    const { name, holder, ttlMs } = claimant;
    const micros = String(ttlMs * 1000);
    return this.connections.exclusiveTransaction('claim a worker ID', nameLock(name), async (sql) => {
      const [read] = await sql(READ, [name]);
      const rows: LeaseRow[] = (read as { worker_id: number; last_timestamp: string; live: number }[]).map(
        (row) => ({
          workerId: Number(row.worker_id),
          lastTimestamp: Number(row.last_timestamp),
          live: Number(row.live) === 1,
        }),
      );
      const known = new Set(rows.map((row) => row.workerId));
      for (const workerId of order(rows)) {
        if (known.has(workerId)) {
          const [taken] = await sql(TAKE, [holder, micros, name, String(workerId)]);
          if ((taken as { affectedRows: number }).affectedRows !== 1) continue;
          const [row] = await sql(TAKEN, [name, String(workerId)]);
          const last = (row as { last_timestamp: string }[])[0]?.last_timestamp;
          return { workerId, lastTimestamp: Number(last) };
        }
        try {
          await sql(INSERT, [name, String(workerId), holder, micros]);
          return { workerId, lastTimestamp: 0 };
        } catch (error) {
          // Inserted meanwhile by someone without the lock (by hand): InnoDB undoes only the statement.
          if (errorCode(error) !== 'ER_DUP_ENTRY') throw error;
        }
      }
      return undefined;
    });
  }

  heartbeat(claimant: Claimant, workerId: number): Promise<boolean> {
    return this.held(HEARTBEAT, [String(claimant.ttlMs * 1000)], claimant, workerId);
  }

  record(claimant: Claimant, workerId: number, timestamp: number): Promise<boolean> {
    return this.held(RECORD, [String(timestamp)], claimant, workerId);
  }

  release(claimant: Claimant, workerId: number, lastTimestamp: number): Promise<boolean> {
    return this.held(RELEASE, [String(lastTimestamp)], claimant, workerId);
  }

  async expire(claimant: Claimant): Promise<void> {
    await this.connections.run(EXPIRE, [claimant.name, claimant.holder]);
  }

  isMissingTable(error: unknown): boolean {
    return errorCode(error) === 'ER_NO_SUCH_TABLE';
  }

  isMissingColumn(error: unknown): boolean {
    return errorCode(error) === 'ER_BAD_FIELD_ERROR';
  }

  end(): Promise<void> {
    return this.connections.end();
  }

  /** One guarded statement: true when it matched this session's row. */
  private async held(text: string, set: string[], claimant: Claimant, workerId: number): Promise<boolean> {
    const [result] = await this.connections.run(text, [
      ...set,
      claimant.name,
      String(workerId),
      claimant.holder,
    ]);
    // Rows matched, not only changed: mysql2 connects with FOUND_ROWS.
    return (result as { affectedRows: number }).affectedRows === 1;
  }
}

/** GET_LOCK's name for claims of one `--name` (64 characters at most: a hash of the name). */
function nameLock(name: string): string {
  return `frond_worker_lease:${createHash('sha1').update(name).digest('hex')}`;
}
