import { FrondError } from '../../core/errors.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { parseNetworkSqlUrl, redactUrl } from '../../sql/network-sql-url.js';
import { POSTGRES_TLS, postgresSsl } from '../../sql/postgres-tls.js';
import { grantScript } from '../sql/table-access.js';
import type { StoreBackend } from '../store-backend.js';
import { POSTGRES_DDL, POSTGRES_FROND_DDL, PostgresSegmentStore } from './postgres-segment-store.js';

/** `postgres://` (or `postgresql://`, as libpq writes it): PostgreSQL on port 5432 unless named. */
export const postgresBackend: StoreBackend<NetworkSqlConfig> = {
  name: 'postgres',
  prefixes: ['postgres://', 'postgresql://'],
  usage: 'postgres://USER@HOST:PORT/DB',
  ddl: [POSTGRES_DDL, ...Object.values(POSTGRES_FROND_DDL)].join(';\n\n'),
  grants: (user) => grantScript(postgresRole(user)),
  redact: redactUrl,
  parse: (spec) => parseNetworkSqlUrl(spec, { scheme: 'postgres', defaultPort: 5432, tls: POSTGRES_TLS }),
  readFiles: (config) => {
    if (config.tls) postgresSsl(config.tls, describeNetworkSql('postgres', config));
  },
  open: (config, { logger, readOnly }) => new PostgresSegmentStore(config, { logger, readOnly }),
};

/** A role name as a quoted identifier (`"leaf"`, a `"` doubled); a control character is refused. */
function postgresRole(user: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (user === '' || user.length > 63 || /[\x00-\x1f\x7f]/.test(user))
    throw new FrondError(
      'INVALID_ARGUMENT',
      `--grant-to ${JSON.stringify(user)} is not a PostgreSQL role name: 1 to 63 characters, none a control character`,
    );
  return `"${user.replace(/"/g, '""')}"`;
}
