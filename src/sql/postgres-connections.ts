import pg from 'pg';
import { silentLogger } from '../core/logger.js';
import type { ConnectionsOptions, NetworkSqlConfig } from './network-sql.js';
import { postgresSsl } from './postgres-tls.js';

/** PostgreSQL reports a commit whose wait for a synchronous standby was cancelled as a WARNING. */
const SYNC_REPLICATION_CANCELLED = /canceling wait for synchronous replication/i;

/**
 * A pool of connections to one PostgreSQL database, as frond uses it for anything it keeps there
 * (leaf_alloc and frond's tables; a worker-ID lease table would be another user). The pool
 * reconnects by itself; a connection that failed or timed out is discarded, never reused.
 */
export class PostgresConnections {
  private readonly pool: pg.Pool;

  constructor(config: NetworkSqlConfig, options: ConnectionsOptions) {
    const logger = options.logger ?? silentLogger;
    const event = options.lostEvent ?? 'store.connection_lost';
    this.pool = new pg.Pool({
      host: config.host,
      port: config.port,
      database: config.database,
      ...(config.user === undefined ? {} : { user: config.user }),
      ...(config.password === undefined ? {} : { password: config.password }),
      max: config.poolSize,
      connectionTimeoutMillis: config.connectTimeoutMs,
      statement_timeout: config.queryTimeoutMs,
      // The client-side bound fires a second later, when the server could not even say it gave up.
      query_timeout: config.queryTimeoutMs + 1_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      application_name: 'frond',
      ...(config.tls && { ssl: postgresSsl(config.tls, options.description) }),
    });
    // An idle connection that breaks (the server restarted) is dropped by the pool; without this
    // listener its 'error' event would end the process.
    this.pool.on('error', (error) => {
      logger.log('warn', event, { store: options.description, error: error.message });
    });
  }

  /** One statement on a pooled connection; a failed connection is closed, not returned to the pool. */
  query<R extends pg.QueryResultRow>(config: pg.QueryConfig | string): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(config);
  }

  /**
   * `operation` on one pooled connection. A commit whose wait for a synchronous standby was
   * cancelled (a WARNING, with success) is made a failure: its outcome is not durable, so the
   * range is thrown away. A connection that failed is closed, not returned to the pool.
   */
  async onClient<T>(operation: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let warning: string | undefined;
    const onNotice = (notice: { message?: string | undefined }) => {
      if (SYNC_REPLICATION_CANCELLED.test(notice.message ?? '')) warning = notice.message;
    };
    client.on('notice', onNotice);
    // A checked-out client whose connection breaks (the server or a proxy cut it) emits 'error'
    // and the pool no longer listens for it: without this listener the process would end. The
    // query in flight fails by itself, and the client is thrown away below.
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken ??= error;
    };
    client.on('error', onError);
    let failed: unknown;
    try {
      const result = await operation(client);
      if (warning !== undefined) throw new Error(`the commit may not be replicated: ${warning}`);
      return result;
    } catch (error) {
      failed = error;
      throw error;
    } finally {
      client.off('notice', onNotice);
      client.off('error', onError);
      client.release(failed === undefined && broken === undefined ? undefined : true);
    }
  }

  /**
   * `operation` in one transaction on one connection (`onClient`): committed if it resolves,
   * rolled back if it fails (and if the connection broke, the server rolls back).
   */
  transaction<T>(operation: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.onClient(async (client) => {
      await client.query('BEGIN');
      try {
        const outcome = await operation(client);
        await client.query('COMMIT');
        return outcome;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    });
  }

  async end(): Promise<void> {
    await this.pool.end();
  }
}

/** The SQLSTATE of a PostgreSQL error (`42P01`: no such table). */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}
