import { FrondError } from '../../core/errors.js';
import { MYSQL_TLS, mysqlSsl } from '../../sql/mysql-tls.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { parseNetworkSqlUrl, redactUrl } from '../../sql/network-sql-url.js';
import { grantScript } from '../sql/table-access.js';
import type { StoreBackend } from '../store-backend.js';
import { MYSQL_DDL, MYSQL_FROND_DDL, MysqlSegmentStore } from './mysql-segment-store.js';

/** `mysql://`: MySQL or MariaDB (InnoDB), Leaf's own database, on port 3306 unless named. */
export const mysqlBackend: StoreBackend<NetworkSqlConfig> = {
  name: 'mysql',
  prefixes: ['mysql://'],
  usage: 'mysql://USER@HOST:PORT/DB',
  ddl: [MYSQL_DDL, ...Object.values(MYSQL_FROND_DDL)].join(';\n\n'),
  grants: (user) => grantScript(mysqlAccount(user)),
  redact: redactUrl,
  parse: (spec) => parseNetworkSqlUrl(spec, { scheme: 'mysql', defaultPort: 3306, tls: MYSQL_TLS }),
  readFiles: (config) => {
    if (config.tls) mysqlSsl(config.tls, describeNetworkSql('mysql', config));
  },
  open: (config, { logger, readOnly }) => new MysqlSegmentStore(config, { logger, readOnly }),
};

/**
 * `USER` or `USER@HOST` (as CURRENT_USER() names an account, the host after the last `@`) as
 * MySQL's `'user'@'host'`, the host `%` when none is given. A quote, a backslash (an escape or not,
 * by the server's sql_mode) or a control character is refused rather than escaped.
 */
function mysqlAccount(account: string): string {
  const at = account.lastIndexOf('@');
  const [user, host] = at === -1 ? [account, '%'] : [account.slice(0, at), account.slice(at + 1)];
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  const bad = (part: string) => part === '' || /['"`\\\x00-\x1f\x7f]/.test(part);
  if (bad(user) || bad(host) || user.length > 80 || host.length > 255)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `--grant-to ${JSON.stringify(account)} is not a MySQL account: USER or USER@HOST, without quotes, backslashes or control characters`,
    );
  return `'${user}'@'${host}'`;
}
