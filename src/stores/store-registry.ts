import { FrondError } from '../core/errors.js';
import { redactUrl } from '../sql/network-sql-url.js';
import { mysqlBackend } from './mysql/mysql-backend.js';
import { postgresBackend } from './postgres/postgres-backend.js';
import { sqliteBackend } from './sqlite/sqlite-backend.js';
import type { OpenedStore, OpenStoreOptions, StoreBackend } from './store-backend.js';

/**
 * Every store backend, one line each. A new backend is a folder exporting a `StoreBackend`, one
 * line here, and `describeSegmentStore` (test/segment-store.suite.ts) passing against it; `--store`
 * parsing, its error messages and `frond db init [--print]` follow from this list.
 */
export const STORE_BACKENDS: readonly StoreBackend[] = [
  sqliteBackend, // sqlite:PATH, the default
  postgresBackend, // postgres://, postgresql://
  mysqlBackend, // mysql://
];

/** The forms a `--store` value may take: `sqlite:PATH, postgres://… or mysql://…`. */
export const STORE_SPECS = listed(STORE_BACKENDS.map((backend) => backend.usage));

/** The backend that takes a `--store` value, or INVALID_CONFIG naming the forms there are. */
export function backendOf(spec: string): StoreBackend {
  const backend = STORE_BACKENDS.find((b) => b.prefixes.some((prefix) => spec.startsWith(prefix)));
  if (backend !== undefined) return backend;
  throw new FrondError(
    'INVALID_CONFIG',
    `unsupported --store ${JSON.stringify(redactUrl(spec))}: use ${STORE_SPECS}`,
  );
}

/**
 * Opens the store a `--store` value names. Database pools connect on first use, so a node starts
 * while its database is down and serves as soon as it is back; `leaf_alloc` is created then if it
 * is missing.
 */
export function openStore(spec: string, options: OpenStoreOptions = {}): OpenedStore {
  const backend = backendOf(spec);
  return backend.open(backend.parse(spec), options);
}

/**
 * Reads the files a `--store` value names (its TLS files), without connecting: one that cannot be
 * read is INVALID_CONFIG naming `--store` and its parameter (`StoreBackend.readFiles`).
 */
export function readStoreFiles(spec: string): void {
  const backend = backendOf(spec);
  backend.readFiles?.(backend.parse(spec));
}

/** `a, b or c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`;
}
