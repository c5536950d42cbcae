import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { httpGet } from '../../../test/support/http-get.js';
import { isFrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { silentLogger } from '../../core/logger.js';
import { assertPortFree, bindHost, closeHttp, EVERY_INTERFACE, listen } from './listen.js';
import type { ListenConfig } from './serve-config.js';

const CONFIG: ListenConfig = {
  host: '127.0.0.1',
  port: 0,
  grpcPort: 0,
  grpcMaxConnections: 10_000,
  maxConnections: 64,
  requestTimeoutMs: 5_000,
  shutdownTimeoutMs: 1_000,
  tls: undefined,
};

describe('listen', () => {
  it('holds the requests that arrive before the node is ready, and answers them once it is', async () => {
    const http = await listen(CONFIG, undefined, silentLogger);
    try {
      let answered = false;
      const early = httpGet(`${http.url}/anything`).then((response) => {
        answered = true;
        return response;
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(answered, false, 'no answer before the node is ready');
      http.serve((_req, res) => res.end('ready'));
      assert.equal((await early).body, 'ready');
      assert.equal((await httpGet(`${http.url}/later`)).body, 'ready');
    } finally {
      await closeHttp(http.server, 0);
    }
  });

  it('refuses a port in use in one line naming --port, for the node and for the primary of --workers', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as { port: number };
    try {
      const taken = (error: unknown) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        error.message === `port ${port} on 127.0.0.1 is in use (--port)`;
      await assert.rejects(listen({ ...CONFIG, port }, undefined, silentLogger), taken);
      await assert.rejects(assertPortFree({ host: '127.0.0.1', port }), taken);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    // Free again: the check lets it go at once.
    await assertPortFree({ host: '127.0.0.1', port });
    await assertPortFree({ host: '127.0.0.1', port });
  });

  it('listens on :: for IPv6 and IPv4 clients, and on 0.0.0.0 where the machine has no IPv6', async () => {
    const http = await listen({ ...CONFIG, host: EVERY_INTERFACE }, undefined, silentLogger);
    try {
      http.serve((_req, res) => res.end('dual'));
      const { port } = http.server.address() as { port: number };
      assert.equal(http.url, `http://[::]:${port}`);
      assert.equal((await httpGet(`http://127.0.0.1:${port}/`)).body, 'dual');
      assert.equal((await httpGet(`http://[::1]:${port}/`)).body, 'dual');
    } finally {
      await closeHttp(http.server, 0);
    }
    // A kernel without IPv6 refuses the socket (EAFNOSUPPORT): the node falls back to IPv4 and says so.
    const server = createServer();
    const original = server.listen.bind(server);
    server.listen = ((options: { host: string }, callback: () => void) => {
      if (options.host !== '::') return original(options, callback);
      queueMicrotask(() =>
        server.emit('error', Object.assign(new Error('listen EAFNOSUPPORT'), { code: 'EAFNOSUPPORT' })),
      );
      return server;
    }) as typeof server.listen;
    const warned: string[] = [];
    const logger: Logger = { log: (_level, event) => void warned.push(event) };
    try {
      assert.equal(await bindHost(server, { host: EVERY_INTERFACE, port: 0 }, logger), '0.0.0.0');
      assert.equal((server.address() as { address: string }).address, '0.0.0.0');
      assert.deepEqual(warned, ['http.no_ipv6']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    // Another failure, or another host, stops the start with its one line.
    await assert.rejects(
      bindHost(createServer(), { host: '10.255.255.254', port: 0 }, logger),
      (error) =>
        isFrondError(error, 'INVALID_CONFIG') && /is not an address of this machine/.test(error.message),
    );
  });
});
