import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, type FrondClient, isFrondClientError } from '../src/index.js';
import { addTag, duplicatesOf, type FrondProcess, serve, sharedStore } from './support/servers.js';

/** Tags whose characters mean something in a URL (issue 16 item 5): each must reach its own row. */
const ODD_TAGS = [
  'a:b',
  '订单',
  'a b',
  'a/b',
  'a%b',
  'a%3Ab',
  'a#b',
  'a?b',
  'a+b',
  'a&b=c',
  'a;b',
  'a\'b"',
  'é/ü:ß',
  '😀',
];

// Tests against a real `frond serve` (run `npm run build` first when running this file by hand).
describe('@frond/client against a real frond serve', () => {
  const store = sharedStore();
  let server: FrondProcess;
  // Only close() is needed: the built package's client (below) is another declaration of the type.
  // `close(): unknown`: the package built from main may still have a close() that returns nothing.
  const clients: { close(): unknown }[] = [];

  function client<C extends { close(): unknown }>(made: C): C {
    clients.push(made);
    return made;
  }

  before(async () => {
    await Promise.all(['order', 'many', 'load', 'paced', ...ODD_TAGS].map((tag) => addTag(store, tag)));
    server = await serve(store, 1);
  });

  after(async () => {
    for (const made of clients) made.close();
    await server?.stop();
  });

  it('is importable as @frond/client from the repository root (the built package)', async () => {
    const pkg = await import('@frond/client');
    const made = client(pkg.createClient({ urls: [server.url], idType: 'string' }));
    assert.match(await made.nextId('order'), /^[0-9]+$/);
  });

  it("sends tags as the server reads them: 'a:b', 'a%3Ab', '订单', 'a b', 'a/b', 'a#b', 'a?b', … each reach their own row", async () => {
    const made = client(createClient({ urls: [server.url], idType: 'string' }));
    // Each row starts at 1 (frond tag add): a tag mangled on the way would be TAG_NOT_FOUND or share a row.
    for (const tag of ODD_TAGS) {
      assert.equal(await made.nextId(tag), '1', tag);
      assert.deepEqual(await made.nextIds(tag, 2), ['2', '3'], tag);
    }
  });

  it('hands out increasing IDs through nextId, nextIds and tryNextId', async () => {
    const made = client(createClient({ urls: [server.url] }));
    const first = await made.nextId('order');
    const many = await made.nextIds('order', 2_500);
    const ids = [first, ...many];
    for (let i = 1; i < ids.length; i++) assert.ok((ids[i] as bigint) > (ids[i - 1] as bigint));
    // The refill is in flight; on a loaded machine it may take more than a few ms (bounded: 2 s).
    let buffered = made.tryNextId('order');
    for (let i = 0; i < 100 && buffered === undefined; i++) {
      await sleep(20);
      buffered = made.tryNextId('order');
    }
    assert.equal(typeof buffered, 'bigint');
    assert.ok((buffered as bigint) > (ids.at(-1) as bigint));
  });

  it('keeps IDs unique across several clients taking at once', async () => {
    const made = Array.from({ length: 4 }, () =>
      client(createClient({ urls: [server.url], idType: 'number' })),
    );
    const taken = await Promise.all(
      made.flatMap((one, index) =>
        Array.from({ length: 4 }, async () => {
          const ids: number[] = [];
          for (let round = 0; round < 200; round++) {
            if (index % 2 === 0) ids.push(...(await one.nextIds('many', 1 + (round % 50))));
            else ids.push(await one.nextId('many'));
          }
          return ids;
        }),
      ),
    );
    const all = taken.flat();
    assert.equal(all.length, 2 * 4 * (200 * 25.5 + 200));
    assert.deepEqual(duplicatesOf(all), []);
  });

  it('refills the buffer ahead of a steady caller: after the first 200 ms no call waits for the network', async (t) => {
    const made = client(createClient({ urls: [server.url], idType: 'number' }));
    let taken = 0;
    let misses = 0;
    let lateMisses = 0;
    const seen = new Set<number>();
    // About 40 IDs per millisecond for ~1.5 s: ticks of 1 ms (or a little more) with 40 IDs each.
    for (let tick = 0; tick < 1_500; tick++) {
      await sleep(1);
      for (let k = 0; k < 40; k++) {
        let id = made.tryNextId('paced');
        if (id === undefined) {
          misses++;
          if (tick >= 200) lateMisses++;
          id = await made.nextId('paced');
        }
        seen.add(id);
        taken++;
      }
    }
    const state = made.state().tags.paced;
    t.diagnostic(
      `paced: ${taken} IDs, ${misses} empty-buffer calls (${lateMisses} after 200 ms), ${state?.fetches} fetches, batch ${state?.batchSize}`,
    );
    assert.equal(seen.size, taken);
    assert.ok(state !== undefined && state.batchSize >= 1_000, `batch size ${state?.batchSize}`);
    // The design aims at zero; a loaded CI machine may pause the server for a moment.
    assert.ok(lateMisses <= taken / 1_000, `${lateMisses} calls waited after the warm-up`);
  });

  it('keeps up under full load: 8 callers as fast as they can, grants grow with the rate', async (t) => {
    const made = client(createClient({ urls: [server.url] }));
    const started = Date.now();
    const perCaller = 50_000;
    const taken = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const ids: bigint[] = [];
        for (let i = 0; i < perCaller; i++) ids.push(await made.nextId('load'));
        return ids;
      }),
    );
    const all = taken.flat();
    const state = made.state().tags.load;
    t.diagnostic(`load: ${all.length} IDs in ${Date.now() - started} ms, ${state?.fetches} fetches`);
    assert.equal(all.length, 8 * perCaller);
    assert.deepEqual(duplicatesOf(all), []);
    // A second of demand per grant: far beyond the 10,000 of a list of IDs.
    assert.ok((state?.batchSize ?? 0) > 10_000, `batch size ${state?.batchSize}`);
    assert.ok((state?.fetches ?? 0) < all.length / 10_000, `${state?.fetches} fetches`);
  });

  it('reports an unknown tag as TAG_NOT_FOUND (404, not retryable) after one request, even with two URLs', async () => {
    const made = client(createClient({ urls: [server.url, server.url], random: () => 0 }));
    const error = await made.nextId('no-such-tag').then(
      () => assert.fail('resolved'),
      (e: unknown) => e,
    );
    assert.ok(isFrondClientError(error, 'TAG_NOT_FOUND'), String(error));
    assert.equal(error.status, 404);
    assert.equal(error.retryable, false);
    assert.equal(error.attempts, 1);
    assert.throws(
      () => made.tryNextId('bad\ttag'),
      (e) => isFrondClientError(e, 'INVALID_TAG'),
    );
  });

  it('closes at the end of an `await using` block, as close() does: pending and later calls reject', async () => {
    let escaped: FrondClient<bigint> | undefined;
    let pending: Promise<bigint[]> | undefined;
    {
      await using ids = createClient({ urls: [server.url] });
      escaped = ids;
      assert.equal(typeof (await ids.nextId('order')), 'bigint');
      // More than is buffered: this call waits on a fetch when the block ends.
      pending = ids.nextIds('order', 500_000);
      pending.catch(() => {});
    }
    assert.equal(escaped.closed, true);
    await assert.rejects(pending, (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
    await assert.rejects(escaped.nextId('order'), (error) => isFrondClientError(error, 'CLIENT_CLOSED'));
  });

  it('refuses snowflakes in number mode with UNSAFE_INTEGER; segment IDs still work there', async () => {
    const made = client(createClient({ urls: [server.url], idType: 'number' }));
    assert.equal(typeof (await made.nextId('order')), 'number');
    await assert.rejects(made.snowflake(), (error) => {
      assert.ok(isFrondClientError(error, 'UNSAFE_INTEGER'));
      return error.retryable === false;
    });
  });

  it('decodes snowflakes locally as the server does, and buffers them only briefly', async () => {
    const made = client(createClient({ urls: [server.url] }));
    const ids = await made.snowflakes(100);
    assert.equal(duplicatesOf(ids).length, 0);
    const id = ids[99] as bigint;
    const local = made.decodeSnowflake(id);
    const remote = (await (await fetch(`${server.url}/v1/snowflake/decode/${id}`)).json()) as {
      timestamp: number;
      workerId: number;
      sequence: number;
    };
    assert.deepEqual(
      { timestamp: local.timestamp, workerId: local.workerId, sequence: local.sequence },
      { timestamp: remote.timestamp, workerId: remote.workerId, sequence: remote.sequence },
    );
    assert.equal(local.workerId, 1);
    assert.ok(Math.abs(local.timestamp - Date.now()) < 5_000);
    const next = await made.snowflake();
    assert.ok(Date.now() - made.decodeSnowflake(next).timestamp <= 1_000 + 50);
  });
});
