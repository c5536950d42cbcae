// A database server reached over the network (PostgreSQL, MySQL/MariaDB), as a `postgres://` or
// `mysql://` URL configures it (network-sql-url.ts), whatever keeps its rows there: the segment
// stores (src/stores) and, in the same database, a worker-ID source's leases. SQLite is embedded
// and has its own.
import type { LogEvent, Logger } from '../core/logger.js';
import type { NetworkSqlTls } from './network-sql-tls.js';

/** A database server's connection, as a `postgres://` or `mysql://` URL describes it. */
export interface NetworkSqlConfig {
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
  database: string;
  /** Connections per node. Loads are single-flight per tag, so a few serve many tags. */
  poolSize: number;
  /** Bounds both a new connection and the wait for a free one. */
  connectTimeoutMs: number;
  /** Bounds one statement, on the server and in the client (a network that went silent). */
  queryTimeoutMs: number;
  /** TLS to the server (the URL's TLS parameters); absent: plain TCP. */
  tls?: NetworkSqlTls;
}

/** A value sent to the server as a parameter, never in SQL text (integers as decimal text). */
export type SqlValue = string | number | null;

export interface ConnectionsOptions {
  /** The database as logs name it, without the password (`describeNetworkSql`). */
  description: string;
  /** Receives a pooled connection that broke while idle; it never ends the process. */
  logger?: Logger | undefined;
  /** The event logged then; `store.connection_lost` unless a lease table says otherwise. */
  lostEvent?: LogEvent;
}

/**
 * `postgres://frond@db1:5432/ids`: the database a pool connects to, without the password, for
 * logs, pages and error messages.
 */
export function describeNetworkSql(scheme: string, config: NetworkSqlConfig): string {
  return `${scheme}://${config.user === undefined ? '' : `${config.user}@`}${config.host}:${config.port}/${config.database}`;
}
