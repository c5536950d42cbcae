import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { silentLogger } from '../../core/logger.js';
import { LEAF_LAYOUT } from '../../core/snowflake-layout.js';
import type { TagIssuer } from '../opaque/tag-issuer.js';
import { openRespServer, type RespServer, type RespServerOptions } from './resp-server.js';

/**
 * An issuer whose IDs are ready for tag `ready` and wait for `release()` for tag `slow`: the order
 * of replies and what a shutdown does with those in flight, without a store.
 */
function fakeIssuer() {
  let next = 1;
  const waiting: (() => void)[] = [];
  const issuer = {
    tryOne: (tag: string) => (tag === 'ready' ? next++ : undefined),
    one: (tag: string) =>
      new Promise<number>((resolve) => {
        if (tag === 'ready') resolve(next++);
        else waiting.push(() => resolve(next++));
      }),
    many: async (_tag: string, count: number) => Array.from({ length: count }, () => next++),
    ranges: async () => [],
  };
  return {
    issuer: issuer as unknown as TagIssuer,
    waiting: () => waiting.length,
    release: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
  };
}

const servers: RespServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function open(issuer: TagIssuer, options: Partial<RespServerOptions> = {}): Promise<RespServer> {
  const server = await openRespServer(
    {
      host: '127.0.0.1',
      port: 0,
      tls: undefined,
      maxConnections: 100,
      idleTimeoutMs: 0,
      maxInFlight: 1024,
      shutdownTimeoutMs: 2_000,
      ...options,
    },
    silentLogger,
  );
  server.serve({ issuer, snowflake: undefined, layout: LEAF_LAYOUT, tokens: [], logger: silentLogger });
  servers.push(server);
  return server;
}

/** A raw client: what it has read so far, and whether the server closed it. */
function rawClient(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  const state = { text: '', closed: false };
  socket.on('data', (chunk) => {
    state.text += chunk.toString('latin1');
  });
  socket.on('close', () => {
    state.closed = true;
  });
  socket.on('error', () => {});
  return { socket, state };
}

async function until(check: () => boolean, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('RESP server', () => {
  it('answers in order when a command before ready ones waits for a segment', async () => {
    const fake = fakeIssuer();
    const server = await open(fake.issuer);
    const { socket, state } = rawClient(server.port);
    socket.write('INCR slow\r\nINCR ready\r\nPING\r\nINCR ready\r\n');
    await until(() => fake.waiting() === 1, 'the slow command');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(state.text, '', 'nothing overtakes the waiting reply');
    fake.release();
    await until(() => state.text.split('\r\n').length > 4, 'the replies');
    assert.equal(state.text, ':3\r\n:1\r\n+PONG\r\n:2\r\n');
    socket.destroy();
  });

  it('stops reading past maxInFlight unanswered commands, and reads on once they are answered', async () => {
    const fake = fakeIssuer();
    const server = await open(fake.issuer, { maxInFlight: 4 });
    const { socket, state } = rawClient(server.port);
    socket.write('INCR slow\r\n'.repeat(10));
    await until(() => fake.waiting() === 4, 'four commands in flight');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(fake.waiting(), 4, 'the fifth is not read while four wait');
    for (let round = 0; round < 5 && state.text.split('\r\n').length <= 10; round++) {
      fake.release();
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
    await until(() => state.text.split('\r\n').length > 10, 'ten replies');
    assert.deepEqual(
      state.text.trim().split('\r\n'),
      Array.from({ length: 10 }, (_, i) => `:${i + 1}`),
    );
    socket.destroy();
  });

  it('on close, finishes the replies in flight, then ends the connection', async () => {
    const fake = fakeIssuer();
    const server = await open(fake.issuer);
    servers.pop();
    const { socket, state } = rawClient(server.port);
    socket.write('INCR ready\r\nINCR slow\r\n');
    await until(() => fake.waiting() === 1, 'the slow command');
    const closed = server.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write('INCR ready\r\n');
    fake.release();
    await closed;
    await until(() => state.closed, 'the close');
    // The command sent after the close began is not read: no ID is taken for it.
    assert.equal(state.text, ':1\r\n:2\r\n');
  });

  it('closes an idle connection after idleTimeoutMs, and refuses connections past maxConnections', async () => {
    const fake = fakeIssuer();
    const server = await open(fake.issuer, { idleTimeoutMs: 200, maxConnections: 2 });
    const a = rawClient(server.port);
    const b = rawClient(server.port);
    a.socket.write('PING\r\n');
    b.socket.write('PING\r\n');
    await until(() => a.state.text === '+PONG\r\n' && b.state.text === '+PONG\r\n', 'two connections');
    const c = rawClient(server.port);
    await until(() => c.state.closed, 'the third refused');
    await until(() => a.state.closed && b.state.closed, 'idle ones closed', 3_000);
    const d = rawClient(server.port);
    d.socket.write('PING\r\n');
    await until(() => d.state.text === '+PONG\r\n', 'a new connection once the others are gone');
    d.socket.destroy();
  });

  it('holds a connection that arrives before serve, and answers it once served', async () => {
    const fake = fakeIssuer();
    const server = await openRespServer(
      {
        host: '127.0.0.1',
        port: 0,
        tls: undefined,
        maxConnections: 10,
        idleTimeoutMs: 0,
        maxInFlight: 16,
        shutdownTimeoutMs: 1_000,
      },
      silentLogger,
    );
    servers.push(server);
    const { socket, state } = rawClient(server.port);
    socket.write('INCR ready\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(state.text, '');
    server.serve({
      issuer: fake.issuer,
      snowflake: undefined,
      layout: LEAF_LAYOUT,
      tokens: [],
      logger: silentLogger,
    });
    await until(() => state.text === ':1\r\n', 'the reply once served');
    socket.destroy();
  });

  it('answers a protocol error after the replies owed, then closes', async () => {
    const fake = fakeIssuer();
    const server = await open(fake.issuer);
    const { socket, state } = rawClient(server.port);
    socket.write('INCR slow\r\n*1\r\n$-3\r\nINCR ready\r\n');
    await until(() => fake.waiting() === 1, 'the slow command');
    fake.release();
    await until(() => state.closed, 'the close');
    assert.match(state.text, /^:1\r\n-ERR Protocol error: invalid bulk length/);
    socket.destroy();
  });
});

describe('commandWeight', () => {
  it('counts a batch by its size, anything else as 1', async () => {
    const { commandWeight } = await import('./resp-server.js');
    assert.equal(commandWeight(['INCR', 'a']), 1);
    assert.equal(commandWeight(['ids', 'a', '10000']), 157);
    assert.equal(commandWeight(['SNOWFLAKE', '64']), 2);
    assert.equal(commandWeight(['SNOWFLAKE']), 1);
    assert.equal(commandWeight(['IDS', 'a', 'x']), 1);
  });
});
