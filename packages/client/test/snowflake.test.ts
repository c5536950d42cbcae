import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BufferedClient } from '../src/client.js';
import { isFrondClientError } from '../src/errors.js';
import { convertersFor, type IdType } from '../src/id-type.js';
import { resolveOptions } from '../src/options.js';
import {
  decodeSnowflake,
  LEAF_EPOCH,
  LEAF_LAYOUT_BITS,
  type SnowflakeLayoutOptions,
  snowflakeLayout,
} from '../src/snowflake.js';
import { FakeSource, manualClock, turn } from './support/fake-source.js';

const SNOWFLAKE = 2127473511642435588n;

function clientOver<T extends IdType>(source: FakeSource, idType: T, now: () => number, maxAgeMs = 1_000) {
  return new BufferedClient(
    source,
    convertersFor(idType),
    resolveOptions({ urls: ['http://127.0.0.1:1'], idType, now, snowflakeMaxAgeMs: maxAgeMs }),
  );
}

describe('decodeSnowflake', () => {
  it('splits 41 bits of time, 10 of worker and 12 of sequence, from Leaf’s epoch by default', () => {
    const id = (123_456_789n << 22n) | (513n << 12n) | 4095n;
    const parts = decodeSnowflake(id);
    assert.equal(parts.timestamp, LEAF_EPOCH + 123_456_789);
    assert.equal(parts.time.getTime(), parts.timestamp);
    assert.equal(parts.workerId, 513);
    assert.equal(parts.sequence, 4095);
    assert.equal(decodeSnowflake(String(id), 0).timestamp, 123_456_789);
  });

  it('takes bigint, decimal strings and safe numbers, and refuses what it cannot decode exactly', () => {
    assert.equal(decodeSnowflake(SNOWFLAKE.toString()).id, SNOWFLAKE);
    assert.equal(decodeSnowflake(4096 + 5).sequence, 5);
    for (const bad of [2 ** 60, -1n, 1n << 63n, '12x', '', 1.5]) {
      assert.throws(
        () => decodeSnowflake(bad),
        (error) => isFrondClientError(error, 'INVALID_ID'),
      );
    }
  });
});

describe('decodeSnowflake in another layout', () => {
  it("splits the servers' layout: 39+16+8 in 10 ms units, the time the first ms of its unit", () => {
    const id = (1_234_567_890n << 24n) | (40_000n << 8n) | 200n;
    const layout = { snowflakeLayout: '39+16+8', timeUnitMs: 10 };
    const parts = decodeSnowflake(id, layout);
    assert.equal(parts.timestamp, LEAF_EPOCH + 12_345_678_900);
    assert.equal(parts.workerId, 40_000);
    assert.equal(parts.sequence, 200);
    assert.deepEqual(decodeSnowflake(id, snowflakeLayout(layout)), parts);
    assert.equal(decodeSnowflake(id, { ...layout, epoch: 0 }).timestamp, 12_345_678_900);
    // Through the client's options, as the servers' flags say them.
    const client = new BufferedClient(
      new FakeSource(),
      convertersFor('bigint'),
      resolveOptions({ urls: ['http://127.0.0.1:1'], ...layout }),
    );
    assert.deepEqual(client.decodeSnowflake(id), parts);
    client.close();
  });

  it("keeps Leaf's 41+10+12 in ms by default, and a number as an epoch with Leaf's bits", () => {
    const id = (123_456_789n << 22n) | (513n << 12n) | 4095n;
    assert.deepEqual(decodeSnowflake(id, { snowflakeLayout: LEAF_LAYOUT_BITS }), decodeSnowflake(id));
    assert.equal(decodeSnowflake(id, 0).timestamp, 123_456_789);
  });

  it('refuses a layout no server takes with INVALID_ARGUMENT, in decodeSnowflake and in createClient', () => {
    const bad: SnowflakeLayoutOptions[] = [
      { snowflakeLayout: '40+10+12' },
      { snowflakeLayout: '41+22+0' },
      { snowflakeLayout: '18+22+23' },
      { snowflakeLayout: 'leaf' },
      { timeUnitMs: 0 },
      { timeUnitMs: 1001 },
      { epoch: -1 },
    ];
    for (const layout of bad) {
      assert.throws(
        () => decodeSnowflake(1n, layout),
        (error) => isFrondClientError(error, 'INVALID_ARGUMENT'),
        JSON.stringify(layout),
      );
      assert.throws(
        () => resolveOptions({ urls: ['http://127.0.0.1:1'], ...layout }),
        (error) => isFrondClientError(error, 'INVALID_ARGUMENT'),
        JSON.stringify(layout),
      );
    }
  });
});

describe('ID types', () => {
  it('hands out segment IDs as bigint by default, or as strings or numbers', async () => {
    const now = Date.now;
    assert.equal(await clientOver(new FakeSource(), 'bigint', now).nextId('t'), 1n);
    assert.equal(await clientOver(new FakeSource(), 'string', now).nextId('t'), '1');
    assert.equal(await clientOver(new FakeSource(), 'number', now).nextId('t'), 1);
  });

  it('refuses a snowflake above 2^53 - 1 in number mode with UNSAFE_INTEGER instead of rounding it', async () => {
    const source = new FakeSource();
    source.next = Number.MAX_SAFE_INTEGER - 1;
    const client = clientOver(source, 'number', Date.now);
    assert.equal(await client.snowflake(), Number.MAX_SAFE_INTEGER - 1);
    assert.equal(await client.snowflake(), Number.MAX_SAFE_INTEGER);
    // 2^53 and above: the next decimal strings from the source.
    await assert.rejects(client.snowflake(), (error) => {
      assert.ok(isFrondClientError(error, 'UNSAFE_INTEGER'));
      return !error.retryable && /9007199254740992/.test(error.message);
    });
    const big = clientOver(new FakeSource(), 'bigint', Date.now);
    assert.equal(typeof (await big.snowflake()), 'bigint');
  });
});

describe('snowflake buffer', () => {
  it('hands out a buffered snowflake only while its batch is younger than snowflakeMaxAgeMs', async () => {
    const clock = manualClock();
    const source = new FakeSource();
    const client = clientOver(source, 'number', clock.now, 1_000);
    const first = await client.snowflakes(20);
    assert.equal(first.length, 20);
    // The caller took 20 at once: the next batch is sized for that rate (10,000, the cap).
    const second = await client.snowflake();
    clock.advance(999);
    const young = await client.snowflake();
    assert.equal(young, second + 1, 'still within 1 s: from the buffer');
    clock.advance(1);
    await turn(2);
    const fresh = await client.snowflake();
    assert.ok(fresh > young + 1, 'the aged batch was dropped, not handed out');
  });

  it('with snowflakeMaxAgeMs 0, keeps nothing: calls waiting together share one request of exactly their count', async () => {
    const source = new FakeSource();
    const snowflakeRequests: number[] = [];
    const original = source.snowflakes.bind(source);
    source.snowflakes = (count) => {
      snowflakeRequests.push(count);
      return original(count);
    };
    const client = clientOver(source, 'number', Date.now, 0);
    const ids = await Promise.all([client.snowflake(), client.snowflake(), client.snowflake()]);
    assert.equal(new Set(ids).size, 3);
    assert.deepEqual(snowflakeRequests, [1, 2]);
    assert.equal(client.state().snowflake.available, 0);
    await client.snowflake();
    assert.deepEqual(snowflakeRequests, [1, 2, 1]);
  });
});

describe('createClient options', () => {
  it('rejects unknown options, bad URLs and out-of-range numbers with INVALID_ARGUMENT', () => {
    const bad = [
      { urls: [] },
      { urls: ['ftp://x'] },
      { urls: ['not a url'] },
      { urls: ['http://a?x=1'] },
      { urls: ['http://a'], timeoutMs: 0 },
      { urls: ['http://a'], maxBatchSize: 100_000_001 },
      { urls: ['http://a'], minBatchSize: 20, maxBatchSize: 10 },
      { urls: ['http://a'], idType: 'float' },
      { urls: ['http://a'], timeout: 5 },
    ];
    for (const options of bad) {
      assert.throws(
        () => resolveOptions(options as never),
        (error) => isFrondClientError(error, 'INVALID_ARGUMENT'),
        JSON.stringify(options),
      );
    }
  });

  it('keeps a base path and drops trailing slashes', () => {
    assert.deepEqual(resolveOptions({ urls: ['http://a:8080/', 'https://b/frond//'] }).urls, [
      'http://a:8080',
      'https://b/frond',
    ]);
  });
});
