import { performance } from 'node:perf_hooks';
import { FrondError } from '../../core/errors.js';
import { string } from '../../core/option-entry.js';
import { redactUrl } from '../../sql/network-sql-url.js';
import { leaseSource } from '../lease/lease-options.js';
import type { CoordinatorBackend } from '../worker-id-backend.js';
import { parseLeaseDatabase, SqlLeaseBackend } from './sql-lease-backend.js';

const FLAG = '--worker-lease-store';
/** The value that puts the leases in the segment store's database (`--store`). */
const SAME_AS_STORE = 'store';
const URLS = 'postgres://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB';

/**
 * Worker IDs leased from `frond_worker_lease` in PostgreSQL or MySQL/MariaDB: the segment store's
 * database (`--worker-lease-store store`) or one of its own (a URL). Always lease mode.
 */
export const sqlBackend: CoordinatorBackend<'workerLeaseStore'> = {
  kind: 'sql',
  option: string({
    name: 'workerLeaseStore',
    flag: 'worker-lease-store',
    default: undefined,
    placeholder: 'URL|store',
    secret: true,
    help: `leased worker IDs in the table \`frond_worker_lease\` of a PostgreSQL or MySQL/MariaDB database: \`store\` (the one \`--store\` names) or its own \`postgres://…\`/\`mysql://…\` URL; see [docs/worker-ids.md](docs/worker-ids.md)`,
  }),
  endpointsUsage: `${URLS}, or store`,
  isEndpoint: (endpoint) => /^(postgres(ql)?|mysql):\/\//.test(endpoint),
  endpointsOf(value, settings) {
    const trimmed = value.trim();
    if (trimmed === '') return [];
    if (trimmed === SAME_AS_STORE) {
      const store = settings.store;
      if (store === undefined || parseLeaseDatabase(store, '--store') === undefined)
        throw new FrondError(
          'INVALID_ARGUMENT',
          `${FLAG} store needs --store ${URLS} (${store === undefined ? 'none is given: the data dir holds an SQLite file' : "an SQLite file is one machine's"}), which every node reaches; or give ${FLAG} a URL of its own`,
        );
      return [store];
    }
    if (parseLeaseDatabase(trimmed, FLAG) === undefined)
      throw new FrondError(
        'INVALID_ARGUMENT',
        `${FLAG} ${JSON.stringify(redactUrl(trimmed))} is invalid: use ${URLS}, or store for the database of --store`,
      );
    return [trimmed];
  },
  leafLayout: false,
  open(config, identity, context) {
    const url = config.endpoints[0] as string;
    const database = parseLeaseDatabase(url, FLAG);
    if (database === undefined) throw new FrondError('INVALID_CONFIG', `${FLAG}: not a database URL`);
    const backend = new SqlLeaseBackend({
      database,
      name: config.name,
      identity: `${identity.host}:${identity.port}`,
      ttlMs: config.workerLeaseTtlMs,
      timeoutMs: config.coordinatorTimeoutMs,
      maxWorkerId: context.maxWorkerId,
      logger: context.logger,
    });
    return leaseSource(backend, config, context, () => performance.now());
  },
};
