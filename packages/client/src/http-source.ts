import { type BackoffOptions, backoffDelay, sleep } from './backoff.js';
import { closedError, FrondClientError } from './errors.js';
import type { IdSource } from './id-source.js';
import { parseSegmentRanges, type SegmentRuns } from './segment-runs.js';

export interface HttpSourceOptions {
  /** Base URLs without a trailing slash, e.g. `http://10.0.0.1:8080`. */
  urls: readonly string[];
  fetch: typeof globalThis.fetch;
  /** One request, body included. */
  timeoutMs: number;
  /** Requests per call, across all URLs. */
  maxAttempts: number;
  /** No new attempt starts this long after the first one began. */
  retryBudgetMs: number;
  backoff: BackoffOptions;
  headers: Readonly<Record<string, string>>;
  random: () => number;
  now: () => number;
}

/**
 * Statuses worth another attempt: overloaded or briefly unavailable, on this node or a proxy. The
 * status decides, not the code, so a proxy's 502 is retried too.
 */
export const RETRYABLE_STATUS = new Set([429, 502, 503, 504]);
const SNOWFLAKE_DECIMAL = /^[0-9]{1,19}$/;
/** The most IDs `/v1/segment` answers in one request. */
const MAX_OPAQUE_BATCH = 10_000;
const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Opaque IDs (positive decimal strings, in no order) as runs of one ID each. */
function singleRuns(ids: unknown): SegmentRuns {
  if (!Array.isArray(ids) || ids.length === 0) throw invalid('expected a non-empty "ids" array');
  const runs: number[] = [];
  const bases: (bigint | undefined)[] = [];
  for (const id of ids) {
    if (typeof id !== 'string' || !SNOWFLAKE_DECIMAL.test(id))
      throw invalid(`opaque ID ${JSON.stringify(String(id).slice(0, 40))} is not 1 to 19 decimal digits`);
    const big = BigInt(id);
    if (big > 2n ** 63n - 1n) throw invalid(`opaque ID ${id} is past 2^63 - 1`);
    if (big <= SAFE) {
      runs.push(Number(big), Number(big) + 1);
      bases.push(undefined);
    } else {
      runs.push(0, 1);
      bases.push(big);
    }
  }
  return { runs, bases, count: ids.length };
}

/** A formatted tag's numbers (non-empty strings, in the order served) as one run of their positions. */
function textRuns(ids: unknown): SegmentRuns {
  if (!Array.isArray(ids) || ids.length === 0) throw invalid('expected a non-empty "ids" array');
  for (const id of ids)
    if (typeof id !== 'string' || id === '')
      throw invalid(`formatted number ${JSON.stringify(String(id).slice(0, 40))} is not a non-empty string`);
  return { runs: [0, ids.length], bases: [undefined], count: ids.length, texts: ids as string[] };
}

/**
 * The batch API over `fetch`. Each call tries the URL that answered last, then the others in turn;
 * after every URL has failed once in a round, it waits with exponential backoff and jitter. 503,
 * 429, 502, 504, network errors and timeouts are retried; any other answer is final. The URL that
 * answers becomes the first choice, so after a failover requests go straight to the live server.
 */
export class HttpIdSource implements IdSource {
  private preferred: number;
  /** Tags the server said are opaque: asked for lists, not ranges, from then on. */
  private readonly opaqueTags = new Set<string>();
  /** Tags the server said are formatted (FORMAT_NO_RANGES): lists of text numbers from then on. */
  private readonly formattedTags = new Set<string>();
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<AbortController>();

  constructor(private readonly options: HttpSourceOptions) {
    if (options.urls.length === 0) throw new Error('HttpIdSource needs at least one URL');
    // A random first choice spreads many clients over the servers.
    this.preferred = Math.floor(options.random() * options.urls.length) % options.urls.length;
  }

  /**
   * `count` IDs of `tag` in one grant of runs (`GET /v1/ranges/{tag}`): a few bytes for millions.
   * An opaque tag has no runs (the server answers OPAQUE_NO_RANGES): its IDs come from
   * `/v1/segment/{tag}`, already permuted by the server (the key never leaves it), up to 10,000 a
   * request, each a run of one, in the order the server gave them.
   */
  async segment(tag: string, count: number): Promise<SegmentRuns> {
    const path = encodeURIComponent(tag);
    if (!this.opaqueTags.has(tag) && !this.formattedTags.has(tag)) {
      try {
        const body = await this.get(`/v1/ranges/${path}?count=${count}`);
        if (typeof body !== 'object' || body === null) throw invalid('expected a JSON object');
        return parseSegmentRanges((body as { ranges?: unknown }).ranges);
      } catch (error) {
        if (!(error instanceof FrondClientError)) throw error;
        if (error.code === 'OPAQUE_NO_RANGES') this.opaqueTags.add(tag);
        else if (error.code === 'FORMAT_NO_RANGES') this.formattedTags.add(tag);
        else throw error;
      }
    }
    const ids = idsOf(await this.get(`/v1/segment/${path}?count=${Math.min(count, MAX_OPAQUE_BATCH)}`));
    return this.formattedTags.has(tag) ? textRuns(ids) : singleRuns(ids);
  }

  async snowflakes(count: number): Promise<string[]> {
    const ids = idsOf(await this.get(`/v1/snowflake?count=${count}`));
    if (!Array.isArray(ids) || ids.length === 0) throw invalid('expected a non-empty "ids" array');
    for (const id of ids) {
      if (typeof id !== 'string' || !SNOWFLAKE_DECIMAL.test(id))
        throw invalid(
          `snowflake ID ${JSON.stringify(String(id).slice(0, 40))} is not 1 to 19 decimal digits`,
        );
    }
    return ids as string[];
  }

  close(): void {
    this.closing.abort();
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
  }

  /**
   * `POST /v1/tags/{tag}/gaps` for each range, to the URL that answered last, then to the others,
   * all within `timeoutMs`; the server records each as a gap (`range_unused`). An opaque or
   * formatted tag's IDs are not ranges of the table: nothing is sent for them. Never rejects.
   */
  async returnUnused(
    tag: string,
    ranges: readonly { start: bigint; end: bigint }[],
    timeoutMs: number,
  ): Promise<void> {
    if (ranges.length === 0 || this.opaqueTags.has(tag) || this.formattedTags.has(tag)) return;
    const deadline = this.options.now() + timeoutMs;
    const path = `/v1/tags/${encodeURIComponent(tag)}/gaps`;
    for (const range of ranges) {
      const body = JSON.stringify({ start: range.start.toString(), end: range.end.toString() });
      for (let attempt = 0; attempt < this.options.urls.length; attempt++) {
        const remaining = deadline - this.options.now();
        if (remaining <= 0) return;
        const index = (this.preferred + attempt) % this.options.urls.length;
        if (await this.postOnce(this.options.urls[index] as string, path, body, remaining)) break;
      }
    }
  }

  /** One POST; true when the server answered 2xx, or refused for good (4xx: trying another server changes nothing). */
  private async postOnce(base: string, path: string, body: string, timeoutMs: number): Promise<boolean> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const response = await this.options.fetch(base + path, {
        method: 'POST',
        headers: { ...this.options.headers, 'content-type': 'application/json' },
        body,
        signal: controller.signal,
      });
      await response.text();
      return response.ok || (response.status >= 400 && response.status < 500 && response.status !== 429);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }

  /** GET `path` with failover and retries; resolves with the parsed JSON body of a 2xx answer. */
  async get(path: string): Promise<unknown> {
    const { urls, maxAttempts, retryBudgetMs, timeoutMs } = this.options;
    const startedAt = this.options.now();
    const deadline = startedAt + retryBudgetMs;
    let last: FrondClientError | undefined;
    let attempts = 0;
    while (attempts < maxAttempts) {
      if (this.closing.signal.aborted) throw closedError();
      if (attempts > 0 && attempts % urls.length === 0) {
        const delay = backoffDelay(attempts / urls.length - 1, this.options.backoff, this.options.random);
        if (this.options.now() + delay >= deadline) break;
        await sleep(delay, this.closing.signal);
      }
      const remaining = deadline - this.options.now();
      if (remaining <= 0) break;
      const index = (this.preferred + attempts) % urls.length;
      attempts++;
      try {
        const body = await this.once(urls[index] as string, path, Math.min(timeoutMs, remaining));
        this.preferred = index;
        return body;
      } catch (error) {
        const failure = error as FrondClientError;
        if (failure.code === 'CLIENT_CLOSED') throw failure;
        if (!failure.retryable) throw withAttempts(failure, attempts, failure.message);
        last = failure;
      }
    }
    if (last === undefined) throw closedError();
    const ms = this.options.now() - startedAt;
    throw withAttempts(
      last,
      attempts,
      `GET ${path} failed after ${attempts} attempt(s) over ${urls.length} URL(s) in ${ms} ms; last: ${last.message}`,
    );
  }

  /** One request; every failure becomes a FrondClientError that says whether to retry. */
  private async once(base: string, path: string, timeoutMs: number): Promise<unknown> {
    const url = base + path;
    const controller = new AbortController();
    this.inFlight.add(controller);
    let timedOut = false;
    // A timer of our own rather than AbortSignal.any(): it is cleared as soon as the answer is read,
    // so a client making thousands of requests leaves no pending timers or listeners behind.
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    try {
      const response = await this.options.fetch(url, {
        headers: this.options.headers,
        signal: controller.signal,
      });
      const text = await response.text();
      if (!response.ok) throw httpError(response.status, text, base);
      try {
        return JSON.parse(text) as unknown;
      } catch (cause) {
        throw new FrondClientError(
          'INVALID_RESPONSE',
          `${url} answered ${response.status} with invalid JSON`,
          {
            status: response.status,
            url: base,
            cause,
          },
        );
      }
    } catch (error) {
      if (error instanceof FrondClientError) throw error;
      if (timedOut) {
        throw new FrondClientError('TIMEOUT', `${url} did not answer within ${timeoutMs} ms`, {
          retryable: true,
          url: base,
        });
      }
      if (this.closing.signal.aborted) throw closedError();
      throw new FrondClientError('NETWORK_ERROR', `${url}: ${describeNetworkError(error)}`, {
        retryable: true,
        url: base,
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }
}

function idsOf(body: unknown): unknown {
  if (typeof body !== 'object' || body === null) throw invalid('expected a JSON object');
  return (body as { ids?: unknown }).ids;
}

function invalid(detail: string): FrondClientError {
  return new FrondClientError('INVALID_RESPONSE', `invalid response: ${detail}`);
}

/** frond's `{"error": {"code", "message"}}`, or HTTP_ERROR when the body is something else. */
function httpError(status: number, text: string, url: string): FrondClientError {
  const retryable = RETRYABLE_STATUS.has(status);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const error = (parsed as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (typeof error?.code === 'string') {
    const message = typeof error.message === 'string' ? error.message : error.code;
    return new FrondClientError(error.code, `${url} answered ${status} ${error.code}: ${message}`, {
      status,
      retryable,
      url,
    });
  }
  return new FrondClientError('HTTP_ERROR', `${url} answered ${status}: ${text.slice(0, 200)}`, {
    status,
    retryable,
    url,
  });
}

function withAttempts(error: FrondClientError, attempts: number, message: string): FrondClientError {
  return new FrondClientError(error.code, message, {
    status: error.status,
    retryable: error.retryable,
    url: error.url,
    attempts,
    cause: error.cause,
  });
}

/** `fetch failed` says little; the cause has the errno (ECONNREFUSED, ECONNRESET, …). */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  if (typeof cause?.code === 'string') return `${error.message} (${cause.code})`;
  if (typeof cause?.message === 'string') return `${error.message} (${cause.message})`;
  return error.message;
}
