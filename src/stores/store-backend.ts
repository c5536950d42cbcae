import type { Logger } from '../core/logger.js';
import type { TagCatalogue } from '../core/tag-catalogue.js';
import type { SegmentPrimitive } from './segment-primitive.js';

/** What `init` found: a table it created, or one that was there (and was left as it was). */
export type TableCheck = 'created' | 'exists';

/**
 * A store as `openStore` hands it out: its segment primitive (what `FencedStore` wraps, the only
 * way a node advances a tag) and its tag catalogue, two interfaces that one object of the backend
 * implements over the same tables and connections. `close` closes both.
 */
export interface OpenedStore extends SegmentPrimitive, TagCatalogue {
  /**
   * Creates leaf_alloc if it is missing (`frond db init`); never alters one. Absent where opening
   * the store already did it (SQLite creates the table when it opens the file).
   */
  init?(): Promise<TableCheck>;
  /**
   * Whether the account frond connects as may serve segments: the tables are there (created when
   * missing, if it may) and every privilege serving needs is granted; else INVALID_CONFIG naming
   * what is missing (STORE_UNAVAILABLE when the database does not answer). Absent where there is no
   * account (SQLite: the file's permissions are checked when it opens).
   */
  checkServing?(): Promise<void>;
}

export interface OpenStoreOptions {
  /** Receives connection failures of database pools (they never end the process). */
  logger?: Logger;
  /**
   * Creates no table (`frond db check`): a database without frond's tables is read as one frond
   * never served from. SQLite ignores it: its file is frond's own, made with every table.
   */
  readOnly?: boolean;
}

/**
 * One store backend, as the registry (store-registry.ts) lists it: everything frond needs to know
 * about a `--store` value of this kind, so that adding a backend touches no central switch. `C` is
 * what `parse` makes of a `--store` value and `open` takes. The registry holds every backend as a
 * plain `StoreBackend` (C = unknown): `open` is declared as a method, so a backend of any `C` fits,
 * and the registry hands `open` only what the same backend's `parse` returned.
 */
export interface StoreBackend<C = unknown> {
  /** The dialect's name, e.g. `postgres`. */
  readonly name: string;
  /**
   * How a `--store` value of this backend starts (its URL scheme, with `//` where the backend
   * needs a host): `sqlite:`, or `postgres://` and `postgresql://`.
   */
  readonly prefixes: readonly string[];
  /** The form of a `--store` value, for "use …" in error messages: `postgres://USER@HOST:PORT/DB`. */
  readonly usage: string;
  /** The DDL that creates `leaf_alloc`, without the final `;` (`frond db init --print` adds it). */
  readonly ddl: string;
  /**
   * The GRANTs that give the account `user` what frond needs (`frond db init --print --grant-to`),
   * each line ending in `;`; INVALID_ARGUMENT for a name it cannot quote. Absent where a store has
   * no accounts (SQLite).
   */
  grants?(user: string): string;
  /** The `--store` value fit for an error message or a log line: a password becomes `***`. */
  redact(spec: string): string;
  /** Reads a `--store` value; every mistake is one line of INVALID_CONFIG, without the password. */
  parse(spec: string): C;
  /**
   * Reads the files the value names (a database URL's TLS files) without connecting: a start
   * stops on one that cannot be read before it takes the port or writes anything, in one line
   * naming `--store`. Absent: the value names no file to read (SQLite's own file is opened).
   */
  readFiles?(config: C): void;
  /**
   * Opens the store without connecting: a database pool connects on first use, so a node starts
   * while its database is down and serves as soon as it is back.
   */
  open(config: C, options: OpenStoreOptions): OpenedStore;
}
