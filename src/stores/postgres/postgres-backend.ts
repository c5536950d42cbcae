import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { parseNetworkSqlUrl, redactUrl } from '../../sql/network-sql-url.js';
import { POSTGRES_TLS, postgresSsl } from '../../sql/postgres-tls.js';
import type { StoreBackend } from '../store-backend.js';
import { POSTGRES_DDL, POSTGRES_FROND_DDL, PostgresSegmentStore } from './postgres-segment-store.js';

/** `postgres://` (or `postgresql://`, as libpq writes it): PostgreSQL on port 5432 unless named. */
export const postgresBackend: StoreBackend<NetworkSqlConfig> = {
  name: 'postgres',
  prefixes: ['postgres://', 'postgresql://'],
  usage: 'postgres://USER@HOST:PORT/DB',
  ddl: [POSTGRES_DDL, ...POSTGRES_FROND_DDL].join(';\n\n'),
  redact: redactUrl,
  parse: (spec) => parseNetworkSqlUrl(spec, { scheme: 'postgres', defaultPort: 5432, tls: POSTGRES_TLS }),
  readFiles: (config) => {
    if (config.tls) postgresSsl(config.tls, describeNetworkSql('postgres', config));
  },
  open: (config, { logger }) => new PostgresSegmentStore(config, { logger }),
};
