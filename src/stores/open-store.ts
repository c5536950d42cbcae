import { FrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { SegmentStore } from '../core/segment-store.js';
import { MYSQL_DDL, MysqlSegmentStore } from './mysql/mysql-segment-store.js';
import { POSTGRES_DDL, PostgresSegmentStore } from './postgres/postgres-segment-store.js';
import type { ServerStoreConfig } from './server-store.js';
import { SQLITE_DDL, SqliteSegmentStore } from './sqlite/sqlite-segment-store.js';

export const STORE_SPECS = 'sqlite:PATH, postgres://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB';

export type StoreDialect = 'sqlite' | 'postgres' | 'mysql';

/** The DDL that creates `leaf_alloc` in each dialect, for `frond db init --print`. */
export const DDL: Record<StoreDialect, string> = {
  sqlite: SQLITE_DDL,
  postgres: POSTGRES_DDL,
  mysql: MYSQL_DDL,
};

/** A database store creates its table on demand; SQLite does it when it opens the file. */
export interface InitializableStore extends SegmentStore {
  init?(): Promise<'created' | 'exists'>;
}

export interface OpenStoreOptions {
  /** Receives connection failures of database pools (they never end the process). */
  logger?: Logger;
}

/** The dialect a `--store` value names, or INVALID_CONFIG. */
export function dialectOf(spec: string): StoreDialect {
  if (spec.startsWith('sqlite:')) return 'sqlite';
  if (/^postgres(ql)?:\/\//.test(spec)) return 'postgres';
  if (spec.startsWith('mysql://')) return 'mysql';
  throw new FrondError(
    'INVALID_CONFIG',
    `unsupported --store ${JSON.stringify(redact(spec))}: use ${STORE_SPECS}`,
  );
}

/**
 * Opens the store a `--store` value names. Database pools connect on first use, so a node starts
 * while its database is down and serves as soon as it is back; `leaf_alloc` is created then if it
 * is missing.
 */
export function openStore(spec: string, options: OpenStoreOptions = {}): InitializableStore {
  const dialect = dialectOf(spec);
  if (dialect === 'sqlite') {
    const path = spec.slice('sqlite:'.length);
    if (path === '')
      throw new FrondError('INVALID_CONFIG', '--store sqlite: needs a path, e.g. sqlite:./data/frond.db');
    return new SqliteSegmentStore(path);
  }
  const server = parseServerUrl(spec, dialect);
  const logger = options.logger === undefined ? {} : { logger: options.logger };
  return dialect === 'postgres'
    ? new PostgresSegmentStore({ ...server, ...logger })
    : new MysqlSegmentStore({ ...server, ...logger });
}

/** Query parameters a database URL may carry, with their defaults and bounds. */
const URL_PARAMETERS = {
  // 4 connections: one node runs at most one load per tag at a time, and a load takes one round trip.
  pool: { key: 'poolSize', fallback: 4, min: 1, max: 100 },
  connect_timeout_ms: { key: 'connectTimeoutMs', fallback: 5_000, min: 100, max: 120_000 },
  query_timeout_ms: { key: 'queryTimeoutMs', fallback: 5_000, min: 100, max: 120_000 },
} as const;

/**
 * `postgres://USER:PASSWORD@HOST:PORT/DB?pool=4&connect_timeout_ms=5000&query_timeout_ms=5000`
 * (the same for mysql://). Every mistake is one line of INVALID_CONFIG, without the password.
 */
export function parseServerUrl(spec: string, dialect: 'postgres' | 'mysql'): ServerStoreConfig {
  const example = `${dialect}://USER@HOST:PORT/DB`;
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw invalid(`--store ${JSON.stringify(redact(spec))} is not a valid URL: use ${example}`);
  }
  const shown = redact(spec);
  if (url.hostname === '') throw invalid(`--store ${shown} names no host: use ${example}`);
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/'))
    throw invalid(`--store ${shown} names no database (one path segment): use ${example}`);
  const config: ServerStoreConfig = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? (dialect === 'postgres' ? 5432 : 3306) : Number(url.port),
    user: url.username === '' ? undefined : decodeURIComponent(url.username),
    password: url.password === '' ? undefined : decodeURIComponent(url.password),
    database,
    poolSize: URL_PARAMETERS.pool.fallback,
    connectTimeoutMs: URL_PARAMETERS.connect_timeout_ms.fallback,
    queryTimeoutMs: URL_PARAMETERS.query_timeout_ms.fallback,
  };
  for (const [name, text] of url.searchParams) {
    const parameter = Object.hasOwn(URL_PARAMETERS, name)
      ? URL_PARAMETERS[name as keyof typeof URL_PARAMETERS]
      : undefined;
    if (parameter === undefined) {
      throw invalid(
        `--store ${shown}: unknown parameter ${JSON.stringify(name)}; use ${Object.keys(URL_PARAMETERS).join(', ')}`,
      );
    }
    const value = /^[0-9]{1,9}$/.test(text) ? Number(text) : Number.NaN;
    if (!(value >= parameter.min && value <= parameter.max)) {
      throw invalid(
        `--store ${shown}: ${name}=${JSON.stringify(text)} is invalid; use an integer from ${parameter.min} to ${parameter.max}`,
      );
    }
    config[parameter.key] = value;
  }
  return config;
}

/** The spec with any password replaced, fit for an error message or a log line. */
function redact(spec: string): string {
  return spec.replace(/^([a-z]+:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}
