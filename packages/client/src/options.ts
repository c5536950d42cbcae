import { FrondClientError } from './errors.js';
import type { IdType } from './id-type.js';
import { LEAF_EPOCH, LEAF_LAYOUT_BITS, type SnowflakeLayout, snowflakeLayout } from './snowflake.js';

/** Options of `createClient`. Only `urls` is required; every duration is in milliseconds. */
export interface ClientOptions<T extends IdType = 'bigint'> {
  /** frond servers, e.g. `['http://10.0.0.1:8080', 'http://10.0.0.2:8080']`; tried in turn on failure. */
  urls: readonly string[];
  /** How IDs are returned: `'bigint'` (default), `'string'`, or `'number'` (UNSAFE_INTEGER above 2^53 - 1). */
  idType?: T;
  /** One request, body included. Default 2,000. */
  timeoutMs?: number;
  /** Requests per fetch across all URLs, the first included. Default 6. */
  maxAttempts?: number;
  /** No new attempt starts this long after a fetch began. Default 10,000. */
  retryBudgetMs?: number;
  /** The backoff cap of the first retry round; it doubles per round. Default 50. */
  backoffInitialMs?: number;
  /** The backoff cap never grows past this. Default 1,000. */
  backoffMaxMs?: number;
  /** The smallest segment batch. Default 10. */
  minBatchSize?: number;
  /**
   * The largest segment batch, a grant of runs; the server's limit, 100,000,000, is also the
   * default. Snowflake batches stop at the server's 10,000 whatever this says.
   */
  maxBatchSize?: number;
  /** A segment batch is sized to last about this long at the caller's rate. Default 1,000. */
  batchTargetMs?: number;
  /** Buffered snowflake IDs older than this are dropped; 0 buffers none. Default 1,000. */
  snowflakeMaxAgeMs?: number;
  /** The epoch of `decodeSnowflake`; must match the servers' `--epoch`. Default Leaf's, 1288834974657. */
  epoch?: number;
  /**
   * The bits of `decodeSnowflake`, `TIME+WORKER+SEQUENCE`; must match the servers'
   * `--snowflake-layout`. Default Leaf's, `41+10+12`.
   */
  snowflakeLayout?: string;
  /** The time unit of `decodeSnowflake`, in ms; must match the servers' `--time-unit-ms`. Default 1. */
  timeUnitMs?: number;
  /** Extra request headers (an API gateway's token, say). */
  headers?: Readonly<Record<string, string>>;
  /** Defaults to the global `fetch`; tests and custom agents inject their own. */
  fetch?: typeof globalThis.fetch;
  /** Defaults to `Date.now`. */
  now?: () => number;
  /** Defaults to `Math.random`; used for jitter and the first URL. */
  random?: () => number;
}

/** The largest `count` the server accepts per list of IDs (its MAX_COUNT): snowflake batches. */
export const SERVER_MAX_COUNT = 10_000;

/** The largest `count` the server grants per `/v1/ranges` request (its MAX_RANGE_COUNT). */
export const SERVER_MAX_RANGE_COUNT = 100_000_000;

export const DEFAULTS = {
  idType: 'bigint',
  timeoutMs: 2_000,
  maxAttempts: 6,
  retryBudgetMs: 10_000,
  backoffInitialMs: 50,
  backoffMaxMs: 1_000,
  minBatchSize: 10,
  maxBatchSize: SERVER_MAX_RANGE_COUNT,
  batchTargetMs: 1_000,
  snowflakeMaxAgeMs: 1_000,
  epoch: LEAF_EPOCH,
  snowflakeLayout: LEAF_LAYOUT_BITS,
  timeUnitMs: 1,
} as const;

export interface ResolvedOptions {
  urls: string[];
  idType: IdType;
  timeoutMs: number;
  maxAttempts: number;
  retryBudgetMs: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
  minBatchSize: number;
  maxBatchSize: number;
  batchTargetMs: number;
  snowflakeMaxAgeMs: number;
  epoch: number;
  /** `snowflakeLayout`, `timeUnitMs` and `epoch`, checked. */
  layout: SnowflakeLayout;
  headers: Record<string, string>;
  fetch: typeof globalThis.fetch;
  now: () => number;
  random: () => number;
}

const KNOWN = new Set([...Object.keys(DEFAULTS), 'urls', 'headers', 'fetch', 'now', 'random']);

/** Fills in defaults and checks every value; a mistyped key is an error rather than ignored. */
export function resolveOptions(options: ClientOptions<IdType>): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw invalid('createClient needs an options object');
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw invalid(`unknown option ${JSON.stringify(key)}`);
  }
  const idType = options.idType ?? DEFAULTS.idType;
  if (idType !== 'bigint' && idType !== 'string' && idType !== 'number')
    throw invalid(`idType ${JSON.stringify(idType)} is not 'bigint', 'string' or 'number'`);
  const int = (key: keyof typeof DEFAULTS & keyof ClientOptions, min: number, max: number): number => {
    const value = (options[key] as number | undefined) ?? (DEFAULTS[key] as number);
    if (!Number.isSafeInteger(value) || value < min || value > max)
      throw invalid(`${key} ${String(value)} is out of range: use an integer from ${min} to ${max}`);
    return value;
  };
  const epoch = int('epoch', 0, Number.MAX_SAFE_INTEGER);
  const layout = snowflakeLayout({
    snowflakeLayout: options.snowflakeLayout ?? DEFAULTS.snowflakeLayout,
    timeUnitMs: int('timeUnitMs', 1, 1000),
    epoch,
  });
  const fetch = options.fetch ?? globalThis.fetch;
  if (typeof fetch !== 'function') throw invalid('no fetch: Node.js 18 or later has a global one');
  const resolved: ResolvedOptions = {
    urls: resolveUrls(options.urls),
    idType,
    timeoutMs: int('timeoutMs', 1, 600_000),
    maxAttempts: int('maxAttempts', 1, 100),
    retryBudgetMs: int('retryBudgetMs', 1, 3_600_000),
    backoffInitialMs: int('backoffInitialMs', 0, 60_000),
    backoffMaxMs: int('backoffMaxMs', 0, 600_000),
    minBatchSize: int('minBatchSize', 1, SERVER_MAX_RANGE_COUNT),
    maxBatchSize: int('maxBatchSize', 1, SERVER_MAX_RANGE_COUNT),
    batchTargetMs: int('batchTargetMs', 1, 3_600_000),
    snowflakeMaxAgeMs: int('snowflakeMaxAgeMs', 0, 3_600_000),
    epoch,
    layout,
    headers: { accept: 'application/json', ...options.headers },
    fetch,
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
  };
  if (resolved.minBatchSize > resolved.maxBatchSize)
    throw invalid(`minBatchSize ${resolved.minBatchSize} is above maxBatchSize ${resolved.maxBatchSize}`);
  return resolved;
}

function resolveUrls(urls: readonly string[] | undefined): string[] {
  if (!Array.isArray(urls) || urls.length === 0) throw invalid('urls needs at least one server URL');
  return urls.map((text: unknown) => {
    let url: URL;
    try {
      url = new URL(String(text));
    } catch {
      throw invalid(`${JSON.stringify(text)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalid(`${JSON.stringify(text)}: only http and https URLs are supported`);
    if (url.search !== '' || url.hash !== '') throw invalid(`${JSON.stringify(text)}: no query or fragment`);
    // Paths are appended (`/v1/segment/…`), so a base path such as `/frond` behind a proxy is kept.
    return url.href.replace(/\/+$/, '');
  });
}

function invalid(message: string): FrondClientError {
  return new FrondClientError('INVALID_ARGUMENT', message);
}
