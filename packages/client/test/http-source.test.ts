import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { backoffDelay } from '../src/backoff.js';
import { isFrondClientError } from '../src/errors.js';
import { HttpIdSource, type HttpSourceOptions } from '../src/http-source.js';

type Answer = Response | Error | 'hang';

/** A fetch that answers from a script per URL host and records every call. */
function scriptedFetch(script: Record<string, Answer[]>) {
  const calls: string[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    calls.push(`${url.host}${url.pathname}${url.search}`);
    const answer = script[url.host]?.shift() ?? new Error(`no scripted answer for ${url.host}`);
    if (answer === 'hang') {
      return new Promise<Response>((_, reject) => {
        init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      });
    }
    if (answer instanceof Error) throw answer;
    return answer;
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

function ok(ids: string[]): Response {
  return new Response(JSON.stringify({ ids }), { status: 200 });
}

/** The server's grant of these IDs: runs `[start, end)` of the consecutive ones. */
function granted(ids: string[]): Response {
  const ranges: { start: string; end: string }[] = [];
  for (const id of ids.map(BigInt)) {
    const last = ranges.at(-1);
    if (last !== undefined && BigInt(last.end) === id) last.end = String(id + 1n);
    else ranges.push({ start: String(id), end: String(id + 1n) });
  }
  return new Response(JSON.stringify({ ranges, count: ids.length }), { status: 200 });
}

function failure(status: number, code: string): Response {
  return new Response(JSON.stringify({ error: { code, message: `${code} happened` } }), { status });
}

function refused(): Error {
  return new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
}

function source(fetch: typeof globalThis.fetch, options: Partial<HttpSourceOptions> = {}): HttpIdSource {
  return new HttpIdSource({
    urls: ['http://a', 'http://b'],
    fetch,
    timeoutMs: 1_000,
    maxAttempts: 6,
    retryBudgetMs: 10_000,
    backoff: { initialMs: 1, maxMs: 4 },
    headers: {},
    // 0: the first URL is the first choice, and jitter is at its lowest.
    random: () => 0,
    now: Date.now,
    ...options,
  });
}

describe('backoffDelay', () => {
  it('doubles the cap per round up to the maximum and draws from its upper half', () => {
    const options = { initialMs: 50, maxMs: 1_000 };
    assert.deepEqual(
      [0, 1, 2, 3, 4, 5, 6].map((round) => backoffDelay(round, options, () => 0)),
      [25, 50, 100, 200, 400, 500, 500],
    );
    assert.deepEqual(
      [0, 1, 5].map((round) => backoffDelay(round, options, () => 0.999_999)),
      [50, 100, 1_000],
    );
  });
});

describe('HttpIdSource', () => {
  it('reads a grant as runs of consecutive IDs, from one request for millions', async () => {
    const { fetch, calls } = scriptedFetch({
      a: [
        new Response(
          JSON.stringify({
            ranges: [
              { start: '5', end: '8' },
              { start: '20', end: '5000022' },
            ],
            count: 5_000_005,
          }),
        ),
      ],
    });
    const batch = await source(fetch).segment('order', 5_000_005);
    assert.deepEqual(batch, { runs: [5, 8, 20, 5_000_022], bases: [undefined, undefined], count: 5_000_005 });
    assert.deepEqual(calls, ['a/v1/ranges/order?count=5000005']);
  });

  it('reads ranges beyond 2^53 and negative ones exactly, as runs offset from a bigint base', async () => {
    const top = 2n ** 63n - 1n;
    const ids = ['-3', '-2', '9007199254740990', '9007199254740991', '9007199254740992', String(top - 1n)];
    const { fetch } = scriptedFetch({ a: [granted(ids)] });
    const batch = await source(fetch).segment('t', ids.length);
    // 2^53 - 2 .. 2^53 is one run that passes 2^53 - 1: kept from its start as a base.
    assert.deepEqual(batch, {
      runs: [-3, -1, 0, 3, 0, 1],
      bases: [undefined, 9007199254740990n, top - 1n],
      count: 6,
    });
  });

  it("encodes a tag the way the server decodes it: 'a:b', '订单', 'a b', 'a/b', 'a%b'", async () => {
    const { fetch, calls } = scriptedFetch({
      a: [granted(['1']), granted(['1']), granted(['1']), granted(['1']), granted(['1'])],
    });
    const http = source(fetch);
    for (const tag of ['a:b', '订单', 'a b', 'a/b', 'a%b']) await http.segment(tag, 1);
    assert.deepEqual(calls, [
      'a/v1/ranges/a%3Ab?count=1',
      'a/v1/ranges/%E8%AE%A2%E5%8D%95?count=1',
      'a/v1/ranges/a%20b?count=1',
      'a/v1/ranges/a%2Fb?count=1',
      'a/v1/ranges/a%25b?count=1',
    ]);
  });

  it('fails over to the next URL at once on a network error, and keeps using the one that answered', async () => {
    const { fetch, calls } = scriptedFetch({ a: [refused()], b: [granted(['1']), granted(['2'])] });
    const http = source(fetch);
    await http.segment('t', 1);
    await http.segment('t', 1);
    assert.deepEqual(calls, ['a/v1/ranges/t?count=1', 'b/v1/ranges/t?count=1', 'b/v1/ranges/t?count=1']);
  });

  it('retries 503 with backoff after every URL failed once, then succeeds', async () => {
    const { fetch, calls } = scriptedFetch({
      a: [failure(503, 'SEGMENT_UNAVAILABLE'), failure(503, 'SEGMENT_UNAVAILABLE'), granted(['9'])],
      b: [failure(503, 'SEGMENT_UNAVAILABLE'), failure(503, 'SEGMENT_UNAVAILABLE')],
    });
    const batch = await source(fetch).segment('t', 1);
    assert.deepEqual(batch.runs, [9, 10]);
    assert.equal(calls.length, 5);
  });

  it('retries 429 but not other 4xx: a 404 is final after one request, typed and not retryable', async () => {
    const limited = scriptedFetch({ a: [failure(429, 'RATE_LIMITED')], b: [granted(['1'])] });
    await source(limited.fetch).segment('t', 1);
    assert.equal(limited.calls.length, 2);

    const missing = scriptedFetch({ a: [failure(404, 'TAG_NOT_FOUND')], b: [granted(['1'])] });
    const error = await source(missing.fetch)
      .segment('nope', 1)
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
    assert.ok(isFrondClientError(error, 'TAG_NOT_FOUND'));
    assert.equal(error.status, 404);
    assert.equal(error.retryable, false);
    assert.equal(error.attempts, 1);
    assert.equal(error.url, 'http://a');
    assert.equal(missing.calls.length, 1);
  });

  it('gives up after maxAttempts with the last error, still marked retryable', async () => {
    const { fetch, calls } = scriptedFetch({
      a: Array.from({ length: 10 }, () => failure(503, 'STORE_UNAVAILABLE')),
      b: Array.from({ length: 10 }, () => refused()),
    });
    const error = await source(fetch, { maxAttempts: 5 })
      .segment('t', 1)
      .then(
        () => assert.fail('resolved'),
        (e: unknown) => e,
      );
    assert.ok(isFrondClientError(error, 'STORE_UNAVAILABLE'), String(error));
    assert.equal(error.attempts, 5);
    assert.equal(error.retryable, true);
    assert.match(error.message, /after 5 attempt\(s\) over 2 URL\(s\)/);
    assert.equal(calls.length, 5);
  });

  it('stops retrying once the retry budget is spent, even with attempts left', async () => {
    const { fetch, calls } = scriptedFetch({ a: Array.from({ length: 50 }, () => refused()) });
    const started = Date.now();
    await assert.rejects(
      source(fetch, {
        urls: ['http://a'],
        maxAttempts: 50,
        retryBudgetMs: 150,
        backoff: { initialMs: 40, maxMs: 40 },
      }).segment('t', 1),
      (error) => isFrondClientError(error, 'NETWORK_ERROR'),
    );
    assert.ok(Date.now() - started < 1_000);
    // Pauses of 20–40 ms within 150 ms: at most 8 attempts, whatever the 50 allowed.
    assert.ok(calls.length >= 2 && calls.length <= 9, `${calls.length} calls`);
  });

  it('times out a server that does not answer and fails over to the next one', async () => {
    const { fetch, calls } = scriptedFetch({ a: ['hang'], b: [granted(['3'])] });
    const started = Date.now();
    const batch = await source(fetch, { timeoutMs: 50 }).segment('t', 1);
    assert.deepEqual(batch.runs, [3, 4]);
    assert.deepEqual(calls, ['a/v1/ranges/t?count=1', 'b/v1/ranges/t?count=1']);
    assert.ok(Date.now() - started < 1_000);
  });

  it('reports TIMEOUT when no server answers in time', async () => {
    const { fetch } = scriptedFetch({ a: ['hang'], b: ['hang'] });
    await assert.rejects(source(fetch, { timeoutMs: 20, maxAttempts: 2 }).segment('t', 1), (error) => {
      assert.ok(isFrondClientError(error, 'TIMEOUT'));
      return error.retryable && error.attempts === 2;
    });
  });

  it('treats a non-frond error page as HTTP_ERROR, retryable for 502', async () => {
    const { fetch, calls } = scriptedFetch({
      a: [new Response('<html>bad gateway</html>', { status: 502 })],
      b: [new Response('<html>nope</html>', { status: 500 })],
    });
    await assert.rejects(source(fetch).segment('t', 1), (error) => {
      assert.ok(isFrondClientError(error, 'HTTP_ERROR'));
      return error.status === 500 && !error.retryable;
    });
    assert.equal(calls.length, 2);
  });

  it('rejects a 200 answer that is not increasing runs of decimal IDs as INVALID_RESPONSE, without retrying', async () => {
    const range = (start: string, end: string) => ({ start, end });
    for (const body of [
      { ranges: [range('5', '8'), range('3', '4')] },
      { ranges: [range('5', '5')] },
      { ranges: [range('9', '4')] },
      { ranges: [] },
      { ranges: [range('1', '9223372036854775808')] },
      { ranges: [range('-9223372036854775809', '1')] },
      { ranges: [range('1.5', '3')] },
      { ranges: [range('1', '3e2')] },
      { ranges: [{ start: 1, end: 3 }] },
      { ranges: [null] },
      { ranges: [range('0', '9007199254740991'), range('9007199254740991', '9007199254740993')] },
      { ids: ['1', '2'] },
      'not json',
    ]) {
      const text = typeof body === 'string' ? body : JSON.stringify(body);
      const { fetch, calls } = scriptedFetch({ a: [new Response(text)] });
      await assert.rejects(source(fetch).segment('t', 2), (error) =>
        isFrondClientError(error, 'INVALID_RESPONSE'),
      );
      assert.equal(calls.length, 1, text);
    }
  });

  it('on close, aborts the request in flight and the backoff sleep with CLIENT_CLOSED', async () => {
    const hanging = scriptedFetch({ a: ['hang'] });
    const inFlight = source(hanging.fetch, { urls: ['http://a'], timeoutMs: 60_000 });
    const request = inFlight.segment('t', 1);
    setTimeout(() => inFlight.close(), 10);
    await assert.rejects(request, (error) => isFrondClientError(error, 'CLIENT_CLOSED'));

    const failing = scriptedFetch({ a: [refused(), refused()] });
    const sleeping = source(failing.fetch, {
      urls: ['http://a'],
      retryBudgetMs: 120_000,
      backoff: { initialMs: 60_000, maxMs: 60_000 },
    });
    const started = Date.now();
    const retry = sleeping.segment('t', 1);
    setTimeout(() => sleeping.close(), 10);
    await assert.rejects(retry, (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
    assert.ok(Date.now() - started < 1_000, 'the 30–60 s backoff timer was cancelled');
    await assert.rejects(sleeping.segment('t', 1), (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
  });

  it('checks snowflake answers: 1 to 19 decimal digits', async () => {
    const good = scriptedFetch({ a: [ok(['2127473511642435588'])] });
    assert.deepEqual(await source(good.fetch).snowflakes(1), ['2127473511642435588']);
    const bad = scriptedFetch({ a: [ok(['-1'])] });
    await assert.rejects(source(bad.fetch).snowflakes(1), (error) =>
      isFrondClientError(error, 'INVALID_RESPONSE'),
    );
  });
});
