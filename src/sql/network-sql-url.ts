import { FrondError } from '../core/errors.js';
import type { NetworkSqlConfig } from './network-sql.js';
import type { NetworkSqlTlsParameters } from './network-sql-tls.js';

/** Query parameters a database URL may carry, with their defaults and bounds. */
const URL_PARAMETERS = {
  // 4 connections: one node runs at most one load per tag at a time, and a load takes one round trip.
  pool: { key: 'poolSize', fallback: 4, min: 1, max: 100 },
  connect_timeout_ms: { key: 'connectTimeoutMs', fallback: 5_000, min: 100, max: 120_000 },
  query_timeout_ms: { key: 'queryTimeoutMs', fallback: 5_000, min: 100, max: 120_000 },
} as const;

/** The dialect a URL is read for: its scheme in messages, and the port when the URL names none. */
export interface NetworkSqlDialect {
  scheme: string;
  defaultPort: number;
  /** The dialect's TLS parameters (network-sql-tls.ts); without them a URL asks for none. */
  tls?: NetworkSqlTlsParameters;
}

/**
 * `postgres://USER:PASSWORD@HOST:PORT/DB?pool=4&connect_timeout_ms=5000&query_timeout_ms=5000`
 * (the same for mysql://). Every mistake is one line of INVALID_CONFIG, without the password.
 */
export function parseNetworkSqlUrl(spec: string, dialect: NetworkSqlDialect): NetworkSqlConfig {
  const example = `${dialect.scheme}://USER@HOST:PORT/DB`;
  // Several hosts (`h1:5432,h2:5432`, what a multi-host JDBC URL becomes): one pool follows one
  // address, so the primary must be found through a name, VIP or proxy that moves on failover.
  const authority = /^[a-z]+:\/\/([^/?#]*)/i.exec(spec)?.[1] ?? '';
  if (authority.slice(authority.lastIndexOf('@') + 1).includes(','))
    throw invalid(
      `--store ${JSON.stringify(redactUrl(spec))} names several hosts, which frond does not take: point it at the primary through one name, VIP or proxy that follows a failover (docs/databases.md)`,
    );
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw invalid(`--store ${JSON.stringify(redactUrl(spec))} is not a valid URL: use ${example}`);
  }
  const shown = redactUrl(spec);
  if (url.hostname === '') throw invalid(`--store ${shown} names no host: use ${example}`);
  const database = decodeUserInfo(url.pathname.replace(/^\//, ''), shown, 'database name');
  if (database === '' || database.includes('/'))
    throw invalid(`--store ${shown} names no database (one path segment): use ${example}`);
  const config: NetworkSqlConfig = {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port === '' ? dialect.defaultPort : Number(url.port),
    user: url.username === '' ? undefined : decodeUserInfo(url.username, shown, 'user'),
    password: url.password === '' ? undefined : decodeUserInfo(url.password, shown, 'password'),
    database,
    poolSize: URL_PARAMETERS.pool.fallback,
    connectTimeoutMs: URL_PARAMETERS.connect_timeout_ms.fallback,
    queryTimeoutMs: URL_PARAMETERS.query_timeout_ms.fallback,
  };
  const tlsValues = new Map<string, string>();
  for (const [name, text] of url.searchParams) {
    if (dialect.tls?.names.includes(name)) {
      tlsValues.set(name, text);
      continue;
    }
    const parameter = Object.hasOwn(URL_PARAMETERS, name)
      ? URL_PARAMETERS[name as keyof typeof URL_PARAMETERS]
      : undefined;
    if (parameter === undefined) {
      throw invalid(
        `--store ${shown}: unknown parameter ${JSON.stringify(name)}; use ${[...Object.keys(URL_PARAMETERS), ...(dialect.tls?.names ?? [])].join(', ')}`,
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
  const tls = tlsValues.size === 0 ? undefined : dialect.tls?.read(tlsValues, { shown, host: config.host });
  if (tls !== undefined) config.tls = tls;
  return config;
}

/**
 * A URL fit for an error message or a log line: its whole user-info replaced (`scheme://***@host…`),
 * up to the last `@`, since a password typed without percent-encoding may hold `@`, `/`, `:`, `?`
 * or `#` and then no URL parser finds where it ends. An authority with no `@` whose "port" is not
 * a number (`postgres://user:secret/db`, the `@` forgotten) is hidden too. The registry uses it for
 * a `--store` value no backend takes.
 */
export function redactUrl(spec: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(spec)?.[0];
  if (scheme === undefined) return spec;
  const rest = spec.slice(scheme.length);
  const at = rest.lastIndexOf('@');
  if (at >= 0) return `${scheme}***@${rest.slice(at + 1)}`;
  const authority = /^[^/?#]*/.exec(rest)?.[0] ?? '';
  const hostPort = /^(\[[0-9a-f:.]*\]|[^:[\]]*)(:[0-9]*)?$/i;
  if (authority.split(',').every((item) => hostPort.test(item))) return spec;
  return `${scheme}***${rest.slice(authority.length)}`;
}

/** A percent-decoded user or password; bad percent-encoding is INVALID_CONFIG, naming neither. */
function decodeUserInfo(text: string, shown: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw invalid(`--store ${shown}: the ${what} has bad percent-encoding (write % as %25)`);
  }
}

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}
