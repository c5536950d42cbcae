import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClient } from '../src/index.js';

interface Call {
  method: string;
  path: string;
  body: string | undefined;
}

/** A server of one tag: grants `[next, next + count)` on /v1/ranges, records every POST; `down` fails the POSTs. */
function fakeServer(options: { down?: boolean | 'hang' } = {}) {
  const calls: Call[] = [];
  let next = 1000n;
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    const method = init?.method ?? 'GET';
    calls.push({ method, path: url.pathname, body: typeof init?.body === 'string' ? init.body : undefined });
    if (method === 'POST') {
      if (options.down === 'hang')
        return new Promise<Response>((_, reject) =>
          init?.signal?.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError'))),
        );
      if (options.down) throw new TypeError('fetch failed');
      return new Response('{}', { status: 201 });
    }
    const count = BigInt(url.searchParams.get('count') ?? '1');
    const start = next;
    next += count;
    return new Response(
      JSON.stringify({ ranges: [{ start: String(start), end: String(next) }], count: Number(count) }),
      {
        status: 200,
      },
    );
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

describe('close() returns the unused IDs', () => {
  it('posts the rest of each tag it holds as [start, end) strings, then resolves', async () => {
    const server = fakeServer();
    const client = createClient({ urls: ['http://127.0.0.1:1'], fetch: server.fetch, idType: 'bigint' });
    const first = await client.nextId('order');
    await client.nextId('order');
    await client.close();
    const posts = server.calls.filter((call) => call.method === 'POST');
    assert.ok(posts.length >= 1, JSON.stringify(server.calls));
    assert.ok(posts.every((post) => post.path === '/v1/tags/order/gaps'));
    const ranges = posts.map((post) => JSON.parse(post.body ?? '{}') as { start: string; end: string });
    // The first unused ID is the one after the last handed out; the ranges run to the end of what was granted.
    assert.equal(ranges[0]?.start, String(first + 2n));
    for (const range of ranges) assert.ok(BigInt(range.start) < BigInt(range.end));
    assert.equal(client.closed, true);
    // Idempotent: the same promise, nothing posted twice.
    await client.close();
    assert.equal(server.calls.filter((call) => call.method === 'POST').length, posts.length);
  });

  it('never rejects and stays bounded when the server is down or does not answer', async () => {
    for (const down of [true, 'hang'] as const) {
      const server = fakeServer({ down });
      const client = createClient({
        urls: ['http://127.0.0.1:1', 'http://127.0.0.1:2'],
        fetch: server.fetch,
        timeoutMs: 300,
      });
      await client.nextId('order');
      const started = Date.now();
      await client.close();
      assert.ok(Date.now() - started < 2_000, `closed in ${Date.now() - started} ms (${down})`);
    }
  });

  it('posts nothing for a client that holds nothing', async () => {
    const server = fakeServer();
    const client = createClient({ urls: ['http://127.0.0.1:1'], fetch: server.fetch });
    await client.close();
    assert.deepEqual(server.calls, []);
  });
});
