import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, connect, createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ConnectionOptions } from 'node:tls';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { type FrondProcess, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { freePort } from './support/tls-databases.js';

const run = promisify(execFile);

interface Node {
  frond: FrondProcess;
  respPort: number;
  dataDir: string;
}

async function startNode(
  extra: string[] = [],
  dataDir = tempDir(),
  env: NodeJS.ProcessEnv = {},
): Promise<Node> {
  const respPort = await freePort();
  const frond = await startFrond(
    ['--port', '0', '--resp-port', String(respPort), '--data-dir', dataDir, '--log-format', 'json', ...extra],
    { env },
  );
  assert.ok(
    frond.logs.some((line) => line.includes('"resp.listening"')),
    frond.logs.join('\n'),
  );
  return { frond, respPort, dataDir };
}

async function createTag(node: Node, tag: string, body: Record<string, unknown> = {}): Promise<void> {
  const response = await fetch(`${node.frond.url}/v1/tags`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ tag, ...body }),
  });
  assert.equal(response.status, 201, await response.text());
}

/** ioredis with no retries (a failure is the test's), integers as strings (64-bit IDs stay exact). */
interface ClientOptions {
  password?: string;
  tls?: ConnectionOptions;
}

function client(port: number, options: ClientOptions = {}): Redis {
  return new Redis({
    host: '127.0.0.1',
    port,
    stringNumbers: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 10_000,
    ...options,
  });
}

async function redisError(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (caught) {
    return (caught as Error).message;
  }
  assert.fail('expected an error reply');
}

/** Writes raw bytes to the port and reads what comes back until the server closes or `ms` pass. */
function raw(port: number, bytes: Buffer | string, ms = 2_000): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let got = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(got);
    };
    const timer = setTimeout(done, ms);
    socket.on('data', (chunk) => {
      got += chunk.toString('latin1');
    });
    socket.on('close', done);
    socket.on('error', done);
    socket.write(bytes);
  });
}

describe('RESP port: ioredis', () => {
  let node: Node;
  const tag = randomTag();
  let redis: Redis;

  before(async () => {
    node = await startNode();
    await createTag(node, tag);
    redis = client(node.respPort);
  });
  after(async () => {
    redis?.disconnect();
    await node?.frond.stop();
  });

  it('answers INCR as an integer and GET as a bulk string, one tag counting up', async () => {
    assert.equal(await redis.incr(tag), '1');
    assert.equal(await redis.get(tag), '2');
    assert.equal(await redis.incr(tag), '3');
  });

  it('answers IDS with integers, RANGES with [start, end) pairs', async () => {
    const ids = (await redis.call('IDS', tag, '5')) as string[];
    assert.deepEqual(ids, ['4', '5', '6', '7', '8']);
    const ranges = (await redis.call('RANGES', tag, '10')) as string[][];
    assert.deepEqual(ranges, [['9', '19']]);
    assert.equal(await redis.incr(tag), '19');
  });

  it('answers SNOWFLAKE and SNOWFLAKE N, and DECODE as field/value pairs', async () => {
    const one = (await redis.call('SNOWFLAKE')) as string;
    assert.match(one, /^[0-9]{15,19}$/);
    const many = (await redis.call('SNOWFLAKE', '3')) as string[];
    assert.equal(many.length, 3);
    assert.ok(many.every((id) => BigInt(id) > BigInt(one)));
    const decoded = (await redis.call('DECODE', one)) as string[];
    assert.equal(decoded[0], 'id');
    assert.equal(decoded[1], one);
    assert.deepEqual(
      decoded.filter((_, i) => i % 2 === 0),
      ['id', 'timestamp', 'time', 'workerId', 'sequence'],
    );
  });

  it('carries frond error codes and Redis error words', async () => {
    assert.match(await redisError(redis.incr(randomTag('missing'))), /^TAG_NOT_FOUND tag /);
    assert.match(await redisError(redis.call('IDS', tag, '0')), /^INVALID_COUNT /);
    assert.match(await redisError(redis.call('IDS', tag, '10001')), /^INVALID_COUNT /);
    assert.match(await redisError(redis.call('DECODE', 'abc')), /^INVALID_ID /);
    assert.match(await redisError(redis.call('INCR')), /^ERR wrong number of arguments for 'incr'/);
    assert.match(await redisError(redis.call('READONLY')), /^ERR unknown command 'READONLY'/);
    assert.match(await redisError(redis.select(3)), /^ERR DB index/);
    assert.equal(await redis.select(0), 'OK');
    assert.equal(await redis.ping(), 'PONG');
    assert.equal(await redis.echo('订单'), '订单');
    assert.equal(await redis.client('SETNAME', 'app-1'), 'OK');
    assert.equal(await redis.client('GETNAME'), 'app-1');
  });

  it('answers 1,000 pipelined commands in order, all IDs unique, across a segment load', async () => {
    const other = randomTag();
    await createTag(node, other, { step: 100 });
    const pipeline = redis.pipeline();
    for (let i = 0; i < 1000; i++) pipeline.incr(other);
    const results = (await pipeline.exec()) ?? [];
    const ids = results.map(([failure, value]) => {
      assert.equal(failure, null);
      return Number(value);
    });
    assert.deepEqual(
      ids,
      Array.from({ length: 1000 }, (_, i) => i + 1),
    );
  });

  it('keeps IDs unique across 20 pipelined connections and HTTP', async () => {
    const shared = randomTag();
    await createTag(node, shared, { step: 200 });
    const clients = Array.from({ length: 20 }, () => client(node.respPort));
    try {
      const batches = await Promise.all(
        clients.map(async (each) => {
          const pipeline = each.pipeline();
          for (let i = 0; i < 300; i++) pipeline.incr(shared);
          return ((await pipeline.exec()) ?? []).map(([failure, value]) => {
            assert.equal(failure, null);
            return value as string;
          });
        }),
      );
      const http = await (await fetch(`${node.frond.url}/v1/segment/${shared}?count=100`)).json();
      const all = [...batches.flat(), ...(http as { ids: string[] }).ids];
      assert.equal(all.length, 6100);
      assert.equal(new Set(all).size, all.length);
      for (const batch of batches)
        for (let i = 1; i < batch.length; i++) assert.ok(Number(batch[i]) > Number(batch[i - 1]));
    } finally {
      for (const each of clients) each.disconnect();
    }
  });

  it('survives garbage bytes: an error reply and a close, and the node still serves', async () => {
    for (const bytes of [
      '*1\r\n$-5\r\n',
      '*1\r\n$99999999999\r\n',
      `*9999999\r\n`,
      '*1\r\n$3\r\nabcXY',
      Buffer.from(randomBytes(4096)),
      `*2\r\n$4\r\nINCR\r\n$${70_000}\r\n`,
    ]) {
      const reply = await raw(node.respPort, bytes);
      assert.ok(reply === '' || reply.startsWith('-'), JSON.stringify(reply.slice(0, 100)));
    }
    // An unterminated line past 1 MiB is refused, not buffered on.
    const long = await raw(node.respPort, Buffer.alloc(1024 * 1024 + 10, 0x61), 5_000);
    assert.match(long, /^-ERR Protocol error/);
    const fresh = client(node.respPort);
    try {
      assert.equal(await fresh.ping(), 'PONG');
      assert.match(String(await fresh.incr(tag)), /^[0-9]+$/);
    } finally {
      fresh.disconnect();
    }
  });

  it('answers QUIT with OK and closes; an inline command works as telnet sends it', async () => {
    assert.equal(await raw(node.respPort, 'PING\r\nQUIT\r\nPING\r\n'), '+PONG\r\n+OK\r\n');
  });
});

describe('RESP port: tokens and TLS', () => {
  const token = `t${randomBytes(8).toString('hex')}`;
  let node: Node;
  const tag = randomTag();
  let tls: { cert: string; key: string };

  before(async () => {
    tls = selfSigned(tempDir());
    node = await startNode(['--token', token, '--tls-cert', tls.cert, '--tls-key', tls.key]);
    const response = await fetch(`${node.frond.url.replace('https', 'http')}/healthz`).catch(() => undefined);
    assert.equal(response, undefined, 'the HTTP port speaks TLS');
  });
  after(() => node?.frond.stop());

  const tlsClient = (options: ClientOptions = {}) =>
    client(node.respPort, { tls: { ca: readFileSync(tls.cert), servername: '127.0.0.1' }, ...options });

  it('refuses ID commands before AUTH (NOAUTH), a wrong token (WRONGPASS), and serves after AUTH', async () => {
    const redis = tlsClient();
    try {
      assert.equal(await redis.ping(), 'PONG');
      assert.match(await redisError(redis.incr(tag)), /^NOAUTH /);
      assert.match(await redisError(redis.auth('not-the-token')), /^WRONGPASS /);
      assert.match(await redisError(redis.call('SNOWFLAKE')), /^NOAUTH /);
      assert.equal(await redis.auth(token), 'OK');
      assert.match(await redisError(redis.incr(tag)), /^TAG_NOT_FOUND /);
      assert.match((await redis.call('SNOWFLAKE')) as string, /^[0-9]+$/);
    } finally {
      redis.disconnect();
    }
  });

  it('takes the token as ioredis sends it (password option), over TLS', async () => {
    const redis = tlsClient({ password: token });
    try {
      assert.match((await redis.call('SNOWFLAKE')) as string, /^[0-9]+$/);
    } finally {
      redis.disconnect();
    }
  });

  it('refuses plain TCP on a TLS port without crashing', async () => {
    const reply = await raw(node.respPort, 'PING\r\n');
    assert.ok(!reply.startsWith('+PONG'));
    const redis = tlsClient({ password: token });
    try {
      assert.equal(await redis.ping(), 'PONG');
    } finally {
      redis.disconnect();
    }
  });
});

describe('RESP port: opaque tags', () => {
  const secret = randomBytes(32).toString('hex');
  let node: Node;
  const tag = randomTag();

  before(async () => {
    node = await startNode([], tempDir(), { FROND_OPAQUE_SECRET: secret });
    await createTag(node, tag, { step: 1000, opaque: 'digits:10' });
  });
  after(() => node?.frond.stop());

  it('answers opaque IDs, distinct, interleaved with HTTP, and refuses RANGES (OPAQUE_NO_RANGES)', async () => {
    const redis = client(node.respPort);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 50; i++) ids.push(String(await redis.incr(tag)));
      ids.push(...((await redis.call('IDS', tag, '200')) as string[]));
      const http = (await (await fetch(`${node.frond.url}/v1/segment/${tag}?count=50`)).json()) as {
        ids: string[];
      };
      ids.push(...http.ids);
      ids.push((await redis.get(tag)) as string);
      for (const id of ids) assert.match(id, /^[1-9][0-9]{9}$/);
      assert.equal(new Set(ids).size, ids.length);
      // The 301st ID issued is segment ID 301, as HTTP would have answered it.
      const decoded = (await (
        await fetch(`${node.frond.url}/v1/opaque/decode/${tag}?id=${ids[300]}`)
      ).json()) as { segmentId: string };
      assert.equal(decoded.segmentId, '301');
      assert.match(await redisError(redis.call('RANGES', tag, '10')), /^OPAQUE_NO_RANGES /);
    } finally {
      redis.disconnect();
    }
  });
});

describe('RESP port: restarts and tools', () => {
  it('never repeats an ID across a SIGKILL and a restart on the same data dir; later IDs are greater', async () => {
    const dataDir = tempDir();
    const tag = randomTag();
    let node = await startNode([], dataDir);
    await createTag(node, tag, { step: 100 });
    const before: bigint[] = [];
    let redis = client(node.respPort);
    const pipeline = redis.pipeline();
    for (let i = 0; i < 250; i++) pipeline.incr(tag);
    for (const [failure, value] of (await pipeline.exec()) ?? []) {
      assert.equal(failure, null);
      before.push(BigInt(value as string));
    }
    redis.disconnect();
    await node.frond.stop('SIGKILL');
    node = await startNode([], dataDir);
    redis = client(node.respPort);
    try {
      const afterIds: bigint[] = [];
      for (let i = 0; i < 50; i++) afterIds.push(BigInt(await redis.incr(tag)));
      // One connection's INCRs come in order: the last is the highest.
      for (let i = 1; i < before.length; i++) assert.ok((before[i] as bigint) > (before[i - 1] as bigint));
      const highest = before.at(-1) as bigint;
      assert.ok(
        afterIds.every((id) => id > highest),
        `${afterIds[0]} after ${highest}`,
      );
      assert.equal(new Set([...before, ...afterIds]).size, 300);
    } finally {
      redis.disconnect();
      await node.frond.stop();
    }
  });

  it('redis-cli: PING, INCR, HELLO 3 (a RESP3 map), and redis-benchmark with a custom INCR', async (t) => {
    try {
      execFileSync('redis-cli', ['--version'], { stdio: 'ignore' });
    } catch {
      if (process.env.CI === 'true') throw new Error('redis-cli is missing; CI must run it');
      t.skip('redis-cli is not installed');
      return;
    }
    const node = await startNode();
    const tag = randomTag();
    await createTag(node, tag);
    const cli = async (...args: string[]) =>
      (await run('redis-cli', ['-p', String(node.respPort), ...args], { timeout: 10_000 })).stdout.trim();
    try {
      assert.equal(await cli('PING'), 'PONG');
      assert.equal(await cli('INCR', tag), '1');
      assert.equal(await cli('GET', tag), '2');
      const hello = await cli('-3', 'HELLO', '3');
      assert.match(hello, /proto\s*\n?\s*3/);
      // RESP3 after HELLO 3: DECODE is a map, which redis-cli shows as `key => value` lines.
      const decoded = await cli('-3', 'DECODE', '1234567890123');
      assert.match(decoded, /workerId/);
      const bench = await run(
        'redis-benchmark',
        ['-p', String(node.respPort), '-n', '2000', '-c', '10', '-q', 'INCR', tag],
        { timeout: 60_000 },
      );
      assert.match(bench.stdout, /requests per second/);
      assert.equal(await cli('INCR', tag), '2003');
    } finally {
      await node.frond.stop();
    }
  });

  it('stops a start whose RESP port is in use in one line, before any file is written', async () => {
    const { runFrond } = await import('./support/frond-process.js');
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const dataDir = tempDir();
    try {
      const result = await runFrond([
        'serve',
        '--resp-port',
        String(port),
        '--port',
        '0',
        '--data-dir',
        dataDir,
      ]);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr.trim(), `frond: port ${port} on 127.0.0.1 is in use (--resp-port)`);
      assert.deepEqual(readdirSync(dataDir), []);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });

  it('is refused with --workers above 1, in one line', async () => {
    const { runFrond } = await import('./support/frond-process.js');
    const result = await runFrond([
      'serve',
      '--resp-port',
      '6390',
      '--workers',
      '2',
      '--port',
      '0',
      '--data-dir',
      tempDir(),
    ]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr.trim(), /--resp-port serves one process/);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
  });
});

/** An EC key and a self-signed certificate for 127.0.0.1, made with openssl. */
function selfSigned(dir: string): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...newKey,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  chmodSync(key, 0o644);
  return { cert, key };
}
