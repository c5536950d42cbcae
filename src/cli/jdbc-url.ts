// Leaf's `leaf.jdbc.url` as its drivers read it (issue 12, item 5): one host or several, the
// drivers' multi-host protocols, and every query property either carried over, known to need
// nothing, refused with what to do instead, or warned about. None is dropped silently. The TLS
// properties are jdbc-tls.ts's.
//
// Leaf hands the URL to Druid unchanged (leaf-server/src/main/java/com/sankuai/inf/leaf/server/
// service/SegmentService.java: `dataSource.setUrl(properties.getProperty(LEAF_JDBC_URL))`), so
// what the URL means is what Connector/J, MariaDB Connector/J or pgJDBC make of it.
import { FrondError } from '../core/errors.js';
import { isJdbcTlsKey, type JdbcDialect, tlsParametersFromJdbc } from './jdbc-tls.js';

/** The store URL a JDBC URL becomes, and a line for each property frond does not use. */
export interface StoreFromJdbc {
  store: string;
  warnings: string[];
}

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}

/**
 * Connector/J's and MariaDB Connector/J's protocols. Without one, a host list is Connector/J's
 * failover (the first host that answers); `loadbalance`, `failover`, `sequential` and `aurora` also
 * connect to any host that answers, so each becomes the store's host list (frond's one statement per
 * load is a transaction on whichever host takes it, as Leaf's). `replication` writes to its first
 * host only (the others are read replicas), as frond only writes.
 */
const MYSQL_PROTOCOLS = ['', 'loadbalance', 'failover', 'sequential', 'aurora', 'replication'];

/**
 * Properties that need nothing in frond: it always speaks UTF-8 (utf8mb4) and its pool reconnects on
 * its own. `characterEncoding` is listed only for its UTF-8 values (checked below).
 */
const NOTHING_TO_DO: Record<JdbcDialect, string[]> = {
  mysql: ['useunicode', 'autoreconnect', 'characterencoding'],
  mariadb: ['useunicode', 'autoreconnect', 'characterencoding'],
  postgresql: [],
};

/** Timeouts: the store's parameter, and the unit of the driver's value in ms. */
const TIMEOUTS: Record<JdbcDialect, Record<string, [string, number]>> = {
  // Connector/J and MariaDB Connector/J count in ms.
  mysql: { connecttimeout: ['connect_timeout_ms', 1], sockettimeout: ['query_timeout_ms', 1] },
  mariadb: { connecttimeout: ['connect_timeout_ms', 1], sockettimeout: ['query_timeout_ms', 1] },
  // pgJDBC counts in seconds.
  postgresql: {
    connecttimeout: ['connect_timeout_ms', 1000],
    logintimeout: ['connect_timeout_ms', 1000],
    sockettimeout: ['query_timeout_ms', 1000],
  },
};
/** The store's bounds of connect_timeout_ms and query_timeout_ms (network-sql-url.ts). */
const TIMEOUT_MIN_MS = 100;
const TIMEOUT_MAX_MS = 120_000;

/**
 * `jdbc:mysql://h1:3306,h2/db?…`, `jdbc:mysql:loadbalance://…`, `jdbc:mariadb://…`,
 * `jdbc:postgresql://h1,h2:5433/db?targetServerType=primary` and `jdbc:postgresql:db` become
 * `mysql://user:pass@h1:3306,h2:3306/db?…` or `postgres://…/db?target_session_attrs=read-write`.
 */
export function storeFromJdbc(
  url: string,
  user: string | undefined,
  password: string | undefined,
  where: string,
): StoreFromJdbc {
  const text = url.trim();
  const shown = JSON.stringify(redactJdbc(text));
  // A user and password in the URL itself (`//user:pass@host`): refused before anything is parsed,
  // since a password holding `/`, `?` or `;` would otherwise be read as a host and shown.
  if (/^jdbc:[a-z:]*\/\/[^?;]*@/i.test(text))
    throw invalid(
      `${where}: give the user and password in leaf.jdbc.username and leaf.jdbc.password, not in the URL's host part`,
    );
  const match =
    /^jdbc:(mysql|mariadb)(?::([a-z]+))?:\/\/([^/?;]*)(?:\/([^?;]*))?([?;].*)?$/i.exec(text) ??
    /^jdbc:(postgresql)()(?::\/\/([^/?]*)\/|:\/?)([^?]*)(\?.*)?$/i.exec(text);
  if (!match)
    throw invalid(`${where} ${shown} is not a jdbc:mysql://, jdbc:mariadb:// or jdbc:postgresql:// URL`);
  const dialect = (match[1] as string).toLowerCase() as JdbcDialect;
  const protocol = (match[2] ?? '').toLowerCase();
  if (dialect !== 'postgresql' && !MYSQL_PROTOCOLS.includes(protocol))
    throw invalid(
      `${where}: jdbc:${dialect}:${protocol}:// is not a protocol frond takes: use jdbc:${dialect}://, or one of ${MYSQL_PROTOCOLS.filter(Boolean).join(', ')}`,
    );
  const database = match[4] ?? '';
  if (database === '') throw invalid(`${where} ${shown} names no database`);
  const warnings: string[] = [];
  const defaultPort = dialect === 'postgresql' ? 5432 : 3306;
  let hosts = parseHosts(match[3] ?? '', defaultPort, where);
  if (protocol === 'replication' && hosts.length > 1) {
    warnings.push(
      `${where}: jdbc:${dialect}:replication:// reads from ${hosts.slice(1).join(', ')}; frond only writes, so it uses the source ${hosts[0]} alone`,
    );
    hosts = hosts.slice(0, 1);
  }
  // One pool follows one address: the first host, as a JDBC driver tries first, and a warning that
  // failover needs a name, VIP or proxy in front of the primary (docs/databases.md).
  if (hosts.length > 1) {
    warnings.push(
      `${where}: frond connects to one address, so it uses ${hosts[0]} and not ${hosts.slice(1).join(', ')}; for failover, point it at the primary through a name, VIP or proxy that moves (docs/databases.md)`,
    );
    hosts = hosts.slice(0, 1);
  }

  const query = (match[5] ?? '').replace(/^[?;]/, '');
  const props = new URLSearchParams(query.replace(/;/g, '&'));
  const params: [string, string][] = [...tlsParametersFromJdbc(dialect, query, where)];
  const auth = { user, password };
  for (const [key, value] of props) {
    const lower = key.toLowerCase();
    if (isJdbcTlsKey(dialect, lower)) continue;
    if (lower === 'user' || lower === 'password') {
      // leaf.jdbc.username and leaf.jdbc.password win (Druid passes them as the driver's properties).
      auth[lower] ??= value;
      continue;
    }
    const timeout = TIMEOUTS[dialect][lower];
    if (timeout !== undefined) {
      const [name, unit] = timeout;
      const n = /^[0-9]{1,9}$/.test(value) ? Number(value) * unit : Number.NaN;
      if (!Number.isFinite(n)) throw invalid(`${where}: ${key}=${JSON.stringify(value)} is not a number`);
      if (n === 0) {
        warnings.push(
          `${where}: ${key}=0 (no timeout) is not offered: frond bounds every call, and uses its default`,
        );
        continue;
      }
      const bounded = Math.min(TIMEOUT_MAX_MS, Math.max(TIMEOUT_MIN_MS, n));
      if (bounded !== n)
        warnings.push(
          `${where}: ${key}=${value} is ${n} ms, outside ${TIMEOUT_MIN_MS}–${TIMEOUT_MAX_MS} ms; frond uses ${bounded} ms`,
        );
      const existing = params.findIndex(([name2]) => name2 === name);
      if (existing >= 0) params.splice(existing, 1);
      params.push([name, String(bounded)]);
      continue;
    }
    if (NOTHING_TO_DO[dialect].includes(lower)) {
      if (lower === 'characterencoding' && !/^utf-?8(mb4)?$/i.test(value))
        warnings.push(
          `${where}: characterEncoding=${value}: frond always speaks UTF-8 (utf8mb4) to the server`,
        );
      continue;
    }
    if (dialect === 'postgresql' && lower === 'targetservertype') {
      // pgJDBC: any, primary (master), secondary (slave), preferSecondary, preferPrimary.
      if (/^(secondary|slave|prefersecondary|preferslave)$/i.test(value))
        throw invalid(
          `${where}: targetServerType=${value}: frond writes at every segment load and a standby takes no writes; use targetServerType=primary`,
        );
      if (!/^(any|primary|master|preferprimary)$/i.test(value))
        throw invalid(`${where}: targetServerType=${JSON.stringify(value)} is not pgJDBC's`);
      continue;
    }
    if (dialect === 'postgresql' && (lower === 'currentschema' || lower === 'options'))
      throw invalid(
        `${where}: ${key}=${value} chooses where leaf_alloc is found, which frond's store URL cannot say: set the user's search_path instead (ALTER ROLE ${auth.user ?? 'leaf'} SET search_path = …) and remove ${key}`,
      );
    if (dialect !== 'postgresql' && lower === 'failoverreadonly' && hosts.length > 1) {
      warnings.push(
        `${where}: failOverReadOnly=${value}: frond writes to whichever host answers, never read-only`,
      );
      continue;
    }
    const shownValue = SECRET_KEY.test(key) ? '***' : value;
    warnings.push(`${where}: ${key}=${shownValue} means nothing to frond and is ignored`);
  }
  const scheme = dialect === 'postgresql' ? 'postgres' : 'mysql';
  const userinfo = auth.user
    ? `${encodeURIComponent(auth.user)}${auth.password ? `:${encodeURIComponent(auth.password)}` : ''}@`
    : '';
  const search = params.length === 0 ? '' : `?${new URLSearchParams(params)}`;
  return { store: `${scheme}://${userinfo}${hosts.join(',')}/${database}${search}`, warnings };
}

/** A property whose value may be a secret (a misspelt `pasword=`): never shown. */
const SECRET_KEY = /pas|pwd|secret|token|key/i;

/** The URL as messages show it: no user-info, no value of a property that may be a secret. */
function redactJdbc(text: string): string {
  return text
    .replace(/^(jdbc:[a-z:]*\/\/)[^?;]*@/i, '$1***@')
    .replace(/([?&;][^=&;]*(?:pas|pwd|secret|token|key)[^=&;]*=)[^&;]*/gi, '$1***');
}

/** `h1:3306,h2,[::1]:3307` as `host:port` with the default port filled in; `''` is localhost. */
function parseHosts(text: string, defaultPort: number, where: string): string[] {
  if (text === '') return [`localhost:${defaultPort}`];
  if (text.includes('@'))
    throw invalid(
      `${where}: give the user and password in leaf.jdbc.username and leaf.jdbc.password, not in the URL's host part`,
    );
  if (/[()=]/.test(text))
    throw invalid(
      `${where}: the address=(host=…)(port=…) form is not read by frond: list the hosts as host:port,host:port`,
    );
  return text.split(',').map((item) => {
    const host = item.trim();
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(host);
    const port = Number(match?.[2] ?? defaultPort);
    if (!match || port < 1 || port > 65_535)
      throw invalid(`${where}: ${JSON.stringify(host)} is not a host or host:port`);
    return `${match[1]}:${port}`;
  });
}
