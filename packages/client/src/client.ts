import { closedError, FrondClientError } from './errors.js';
import { HttpIdSource } from './http-source.js';
import type { BufferState } from './id-buffer.js';
import type { IdSource } from './id-source.js';
import { convertersFor, type IdConverters, type IdOf, type IdType } from './id-type.js';
import { type ClientOptions, type ResolvedOptions, resolveOptions, SERVER_MAX_COUNT } from './options.js';
import { SegmentIdBuffer } from './segment-id-buffer.js';
import { decodeSnowflake, type SnowflakeParts } from './snowflake.js';
import { SnowflakeIdBuffer } from './snowflake-id-buffer.js';

/** A frond client; `Id` is `bigint`, `string` or `number` after the `idType` option. */
export interface FrondClient<Id> {
  /**
   * The next segment ID of `tag`: from memory when buffered (almost always), else after a fetch. A
   * formatted tag's number (`ORD-20261201-000123`) is a string, whatever `idType`.
   */
  nextId(tag: string): Promise<Id>;
  /** `count` (1 to 1,000,000) segment IDs of `tag`, increasing unless a failover happened in between. */
  nextIds(tag: string, count: number): Promise<Id[]>;
  /**
   * The next segment ID of `tag` if one is buffered, else `undefined` (and a fetch starts, so a later
   * call finds IDs). Never waits. Throws INVALID_TAG for a malformed tag and CLIENT_CLOSED once closed.
   */
  tryNextId(tag: string): Id | undefined;
  /** A snowflake ID no older than `snowflakeMaxAgeMs`. In `number` mode it rejects with UNSAFE_INTEGER. */
  snowflake(): Promise<Id>;
  /** `count` (1 to 1,000,000) snowflake IDs. */
  snowflakes(count: number): Promise<Id[]>;
  /** Time, worker and sequence of a snowflake ID, computed locally with the client's `snowflakeLayout`, `timeUnitMs` and `epoch`. */
  decodeSnowflake(id: bigint | string | number): SnowflakeParts;
  /** The buffers' state: for tests, dashboards and tuning. */
  state(): ClientState;
  /**
   * Drops buffered IDs, aborts requests and retry timers, rejects pending calls; idempotent. The
   * segment IDs granted and not handed out are returned to the server (`POST
   * /v1/tags/{tag}/gaps`, recorded there as gaps, never issued again): the promise settles when
   * that is done, within `RETURN_TIMEOUT_MS` at most, and never rejects. Everything else is
   * done before `close()` returns.
   */
  close(): Promise<void>;
  /** `close()`, for `await using ids = createClient(…)`. */
  [Symbol.asyncDispose](): Promise<void>;
  /** `close()`, for `using ids = createClient(…)`: closing is synchronous. */
  [Symbol.dispose](): void;
  readonly closed: boolean;
}

export interface ClientState {
  /** One entry per tag used so far. */
  tags: Record<string, BufferState>;
  snowflake: BufferState;
}

/**
 * The most `close()` spends returning unused IDs (or the client's `timeoutMs`, if shorter): a
 * process that exits must not wait for a server that is down; what is not returned is only unrecorded.
 */
export const RETURN_TIMEOUT_MS = 2_000;

/** The server's tag rule (src/core/tag.ts): Leaf's varchar(128), any characters but controls. */
const MAX_TAG_LENGTH = 128;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `tag` cannot be a tag, or undefined: the same answer the server gives (400 INVALID_TAG). */
export function tagProblem(tag: string): string | undefined {
  if (typeof tag !== 'string' || tag === '') return 'a tag is 1 to 128 characters; this one is empty';
  if (tag.length > MAX_TAG_LENGTH) {
    let count = 0;
    for (const _ of tag) if (++count > MAX_TAG_LENGTH) break;
    if (count > MAX_TAG_LENGTH) return 'a tag is 1 to 128 characters; this one is longer';
  }
  if (LONE_SURROGATE.test(tag)) return 'a tag is text: this one has a lone UTF-16 surrogate';
  if (CONTROL.test(tag)) return 'a tag has no control characters (U+0000 to U+001F, U+007F to U+009F)';
  if (tag === '.' || tag === '..')
    return `a tag cannot be ${JSON.stringify(tag)} alone: no URL path carries it`;
  return undefined;
}
/** A bound on one call, so a typo cannot ask for billions of IDs. */
const MAX_IDS_PER_CALL = 1_000_000;

/**
 * Creates a client for one or more frond servers. It keeps a double buffer per tag, fed by the
 * batch API, so most calls never leave the process.
 *
 * @example
 * const ids = createClient({ urls: ['http://10.0.0.1:8080', 'http://10.0.0.2:8080'] });
 * const orderId = await ids.nextId('order'); // 1000n
 */
export function createClient<T extends IdType = 'bigint'>(options: ClientOptions<T>): FrondClient<IdOf<T>> {
  const resolved = resolveOptions(options);
  const source = new HttpIdSource({
    urls: resolved.urls,
    fetch: resolved.fetch,
    timeoutMs: resolved.timeoutMs,
    maxAttempts: resolved.maxAttempts,
    retryBudgetMs: resolved.retryBudgetMs,
    backoff: { initialMs: resolved.backoffInitialMs, maxMs: resolved.backoffMaxMs },
    headers: resolved.headers,
    random: resolved.random,
    now: resolved.now,
  });
  return new BufferedClient(source, convertersFor(resolved.idType as T), resolved);
}

/** The client over any `IdSource`; `createClient` gives it the HTTP one. */
export class BufferedClient<Id> implements FrondClient<Id> {
  private readonly buffers = new Map<string, SegmentIdBuffer<Id>>();
  // The last tag used and its buffer: most callers use one tag in a loop, and comparing a string
  // with itself is cheaper than a Map lookup on the hot path.
  private lastTag: string | undefined;
  private lastBuffer: SegmentIdBuffer<Id> | undefined;
  private readonly snowflakeBuffer: SnowflakeIdBuffer<Id>;
  private isClosed = false;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly source: IdSource,
    private readonly converters: IdConverters<Id>,
    private readonly options: ResolvedOptions,
  ) {
    this.snowflakeBuffer = new SnowflakeIdBuffer(source, converters.fromDecimal, options.snowflakeMaxAgeMs, {
      minBatchSize: 1,
      maxBatchSize: Math.min(options.maxBatchSize, SERVER_MAX_COUNT),
      batchTargetMs: options.batchTargetMs,
      now: options.now,
    });
  }

  get closed(): boolean {
    return this.isClosed;
  }

  tryNextId(tag: string): Id | undefined {
    return (tag === this.lastTag ? (this.lastBuffer as SegmentIdBuffer<Id>) : this.bufferOf(tag)).tryNext();
  }

  nextId(tag: string): Promise<Id> {
    if (tag === this.lastTag) return (this.lastBuffer as SegmentIdBuffer<Id>).next();
    try {
      return this.bufferOf(tag).next();
    } catch (error) {
      return Promise.reject(error);
    }
  }

  nextIds(tag: string, count: number): Promise<Id[]> {
    try {
      checkCount(count);
      return this.bufferOf(tag).nextMany(count);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  snowflake(): Promise<Id> {
    try {
      return this.snowflakeBuffer.next();
    } catch (error) {
      // The conversion refused an ID (UNSAFE_INTEGER in `number` mode).
      return Promise.reject(error);
    }
  }

  snowflakes(count: number): Promise<Id[]> {
    try {
      checkCount(count);
      return this.snowflakeBuffer.nextMany(count);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  decodeSnowflake(id: bigint | string | number): SnowflakeParts {
    return decodeSnowflake(id, this.options.layout);
  }

  state(): ClientState {
    const tags: Record<string, BufferState> = {};
    for (const [tag, buffer] of this.buffers) tags[tag] = buffer.state();
    return { tags, snowflake: this.snowflakeBuffer.state() };
  }

  close(): Promise<void> {
    if (this.closing !== undefined) return this.closing;
    this.isClosed = true;
    // Read before the buffers drop them.
    const unused = [...this.buffers].map(([tag, buffer]) => [tag, buffer.unused()] as const);
    this.source.close();
    for (const buffer of this.buffers.values()) buffer.close();
    this.snowflakeBuffer.close();
    const give = this.source.returnUnused?.bind(this.source);
    const timeoutMs = Math.min(this.options.timeoutMs, RETURN_TIMEOUT_MS);
    this.closing =
      give === undefined
        ? Promise.resolve()
        : Promise.all(
            unused.map(([tag, ranges]) => give(tag, ranges, timeoutMs).catch(() => undefined)),
          ).then(() => undefined);
    return this.closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Synchronous: the unused IDs are still returned, in the background. */
  [Symbol.dispose](): void {
    void this.close();
  }

  private bufferOf(tag: string): SegmentIdBuffer<Id> {
    let buffer = this.buffers.get(tag);
    if (buffer === undefined) {
      if (this.isClosed) throw closedError();
      const problem = tagProblem(tag);
      if (problem !== undefined) {
        throw new FrondClientError(
          'INVALID_TAG',
          `invalid tag ${JSON.stringify(String(tag).slice(0, 140))}: ${problem}`,
        );
      }
      buffer = new SegmentIdBuffer(tag, this.source, this.converters, this.options);
      this.buffers.set(tag, buffer);
    }
    this.lastTag = tag;
    this.lastBuffer = buffer;
    return buffer;
  }
}

function checkCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 1 || count > MAX_IDS_PER_CALL) {
    throw new FrondClientError(
      'INVALID_COUNT',
      `invalid count ${String(count)}: use an integer from 1 to ${MAX_IDS_PER_CALL}`,
    );
  }
}
