// What the stores on a database server, reached over the network, share (PostgreSQL, MySQL);
// SQLite is embedded and has its own. The URL that configures them is read in network-sql-url.ts.
import type { Logger } from '../../core/logger.js';
import type { OpaqueSetting, TagRow } from '../../core/tag-admin.js';
import type { NetworkSqlTls } from './network-sql-tls.js';

/** A database server's store, as a `postgres://` or `mysql://` URL describes it. */
export interface NetworkSqlConfig {
  host: string;
  port: number;
  user: string | undefined;
  password: string | undefined;
  database: string;
  /** Connections per node. Loads are single-flight per tag, so a few serve many tags. */
  poolSize: number;
  /** Bounds both a new connection and the wait for a free one. */
  connectTimeoutMs: number;
  /** Bounds one statement, on the server and in the client (a network that went silent). */
  queryTimeoutMs: number;
  /** TLS to the server (the URL's TLS parameters); absent: plain TCP. */
  tls?: NetworkSqlTls;
}

export interface NetworkSqlOptions extends NetworkSqlConfig {
  logger?: Logger;
}

/** A `leaf_alloc` row as both drivers return it: BIGINT as text, so values above 2^53 stay exact. */
export interface RawRow {
  biz_tag: string;
  max_id: string;
  step: number;
  description: string | null;
  update_time: Date | null;
}

export const COLUMNS = 'biz_tag, max_id, step, description, update_time';

export function toTagRow(row: RawRow): TagRow {
  return {
    tag: row.biz_tag,
    maxId: BigInt(row.max_id),
    step: Number(row.step),
    description: row.description,
    updateTime: row.update_time,
  };
}

/**
 * Runs `task` on the first call and hands every later call the same promise; a failed run is
 * forgotten, so the next call tries again (a database that was down at start is checked once it
 * is back).
 */
export function onceUntilFailure(task: () => Promise<unknown>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => {
    done ??= task().then(
      () => undefined,
      (error: unknown) => {
        done = undefined;
        throw error;
      },
    );
    return done;
  };
}

/** A row of `frond_tag_options` (LEFT JOINed: null columns for a plain tag). */
export interface OptionRow {
  biz_tag?: string;
  opaque_domain: string | null;
  key_check: string | null;
}

/** `tagOptions`' answer from the joined row: undefined without a leaf_alloc row. */
export function optionsOf(row: OptionRow | undefined): { opaque: OpaqueSetting | null } | undefined {
  if (row === undefined) return undefined;
  return {
    opaque:
      row.opaque_domain === null || row.key_check === null
        ? null
        : { domain: row.opaque_domain, keyCheck: row.key_check },
  };
}

export function opaqueMap(rows: readonly OptionRow[]): Map<string, OpaqueSetting> {
  const map = new Map<string, OpaqueSetting>();
  for (const row of rows) {
    const setting = optionsOf(row)?.opaque;
    if (setting && row.biz_tag !== undefined) map.set(row.biz_tag, setting);
  }
  return map;
}
