import { MYSQL_TLS, mysqlSsl } from '../../sql/mysql-tls.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { parseNetworkSqlUrl, redactUrl } from '../../sql/network-sql-url.js';
import type { StoreBackend } from '../store-backend.js';
import { MYSQL_DDL, MYSQL_FROND_DDL, MysqlSegmentStore } from './mysql-segment-store.js';

/** `mysql://`: MySQL or MariaDB (InnoDB), Leaf's own database, on port 3306 unless named. */
export const mysqlBackend: StoreBackend<NetworkSqlConfig> = {
  name: 'mysql',
  prefixes: ['mysql://'],
  usage: 'mysql://USER@HOST:PORT/DB',
  ddl: [MYSQL_DDL, ...MYSQL_FROND_DDL].join(';\n\n'),
  redact: redactUrl,
  parse: (spec) => parseNetworkSqlUrl(spec, { scheme: 'mysql', defaultPort: 3306, tls: MYSQL_TLS }),
  readFiles: (config) => {
    if (config.tls) mysqlSsl(config.tls, describeNetworkSql('mysql', config));
  },
  open: (config, { logger }) => new MysqlSegmentStore(config, { logger }),
};
