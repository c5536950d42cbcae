import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startFrond, tempDir } from './support/frond-process.js';
import { freePort, GrpcTestClient, selfSignedCertificate } from './support/grpc-client.js';

/**
 * Attacks on the gRPC port's shutdown and connection limit: a client that opens a TCP connection
 * and sends nothing (no HTTP/2 preface, no TLS ClientHello) is what a port scanner, a health
 * checker that only connects, or a stalled client does.
 */
const SHUTDOWN_TIMEOUT_MS = 2_000;

/** A connection that sends nothing, held open by the test (closed in `finally`). */
function silentConnection(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => resolve(socket));
    socket.on('error', reject);
  });
}

describe('attack g22: gRPC port', () => {
  for (const tls of [false, true]) {
    it(`SIGTERM with one silent connection on --grpc-port${tls ? ' (TLS)' : ''}: the node exits within --shutdown-timeout-ms`, async () => {
      const dir = tempDir();
      const grpcPort = await freePort();
      const tlsArgs = tls
        ? (({ cert, key }) => ['--tls-cert', cert, '--tls-key', key])(selfSignedCertificate(dir))
        : [];
      const node = await startFrond([
        ...['--port', '0', '--host', '127.0.0.1', '--grpc-port', String(grpcPort)],
        ...['--data-dir', join(dir, 'data'), '--shutdown-timeout-ms', String(SHUTDOWN_TIMEOUT_MS)],
        ...tlsArgs,
      ]);
      const socket = await silentConnection(grpcPort);
      try {
        // Let the node take the connection (grpc-js makes its HTTP/2 session, or starts the handshake).
        await new Promise((resolve) => setTimeout(resolve, 300));
        const started = Date.now();
        // 15 s of grace, then SIGKILL: a hang shows as SIGKILL here rather than a stuck test.
        const code = await node.stop('SIGTERM', 15_000);
        const took = Date.now() - started;
        assert.equal(
          code,
          0,
          `the node did not exit on SIGTERM (${code} after ${took} ms); last lines:\n${node.logs.slice(-2).join('\n')}`,
        );
        assert.ok(took < SHUTDOWN_TIMEOUT_MS + 5_000, `the node took ${took} ms to stop`);
      } finally {
        socket.destroy();
        await node.stop('SIGKILL');
      }
    });
  }

  it('a flood of silent gRPC connections under a low descriptor limit leaves HTTP /readyz answering', async () => {
    // ulimit -n 256: HTTP's default cap is 256 - 128 reserved; --grpc-max-connections' default is
    // 10,000, counted against no descriptor budget, so 400 silent connections take every descriptor.
    const grpcPort = await freePort();
    const node = await startFrond(
      ['--port', '0', '--host', '127.0.0.1', '--grpc-port', String(grpcPort), '--data-dir', tempDir()],
      { descriptorLimit: 256 },
    );
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 400; i++) {
        const socket = createConnection({ host: '127.0.0.1', port: grpcPort });
        socket.on('error', () => {});
        sockets.push(socket);
        if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const answer = await fetch(`${node.url}/readyz`, { signal: AbortSignal.timeout(5_000) }).then(
        (response) => String(response.status),
        (error: unknown) => `no answer: ${String(error)}`,
      );
      assert.equal(answer, '200', 'HTTP /readyz did not answer while gRPC connections held the descriptors');
      // gRPC itself still serves a new client once some connections went away.
      for (const socket of sockets.splice(0, 100)) socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const client = new GrpcTestClient(`127.0.0.1:${grpcPort}`);
      try {
        const reply = await client.ok<{ ids: string[] }>('Snowflake', { count: 1 }, { deadlineMs: 5_000 });
        assert.equal(reply.ids.length, 1);
      } finally {
        client.close();
      }
    } finally {
      for (const socket of sockets) socket.destroy();
      await node.stop('SIGTERM', 10_000);
    }
  });

  for (const port of ['grpc', 'resp'] as const)
    it(`connections refused past --${port}-max-connections log a bounded number of lines, with how many were refused`, async () => {
      const portNumber = await freePort();
      const node = await startFrond([
        ...[
          '--port',
          '0',
          '--host',
          '127.0.0.1',
          `--${port}-port`,
          String(portNumber),
          '--data-dir',
          tempDir(),
        ],
        ...[`--${port}-max-connections`, '1'],
      ]);
      const held = await silentConnection(portNumber);
      try {
        // 300 connections past the cap, one after another (each closed by the node as it arrives).
        for (let i = 0; i < 300; i++)
          await new Promise<void>((resolve) => {
            const socket = createConnection({ host: '127.0.0.1', port: portNumber });
            const timer = setTimeout(() => socket.destroy(), 2_000);
            socket.on('error', () => {});
            socket.on('close', () => {
              clearTimeout(timer);
              resolve();
            });
          });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const lines = node.logs.filter((line) => line.includes(`"${port}.connections_full"`));
        assert.ok(lines.length >= 1, `no ${port}.connections_full line`);
        // One line per refused connection lets any client write the node's log as fast as it connects.
        assert.ok(
          lines.length <= 3,
          `${lines.length} ${port}.connections_full lines for 300 refused connections`,
        );
      } finally {
        held.destroy();
        await node.stop('SIGTERM', 10_000);
      }
    });

  it('keeps metric labels bounded: gRPC calls with many tags and bad requests add no route or status beyond the fixed set', async () => {
    const grpcPort = await freePort();
    const node = await startFrond([
      ...['--port', '0', '--host', '127.0.0.1', '--grpc-port', String(grpcPort), '--data-dir', tempDir()],
      ...['--metrics-tags', '5'],
    ]);
    const client = new GrpcTestClient(`127.0.0.1:${grpcPort}`);
    try {
      for (let i = 0; i < 40; i++) {
        const tag = `g22-${randomBytes(4).toString('hex')}`;
        await client.call('Next', { tag });
        await client.call('Batch', { tag, count: i % 2 === 0 ? 10_001 : -1 });
        await client.call('Decode', { id: `x${i}` });
      }
      await client.call('Next', { tag: 'bad tag with spaces' });
      await client.call('Next', { tag: 'y'.repeat(500) });
      const text = await (await fetch(`${node.url}/metrics`)).text();
      const routes = new Set(
        [
          ...text.matchAll(/^frond_http_request_duration_seconds_count\{route="([^"]*)",status="(\d+)"\}/gm),
        ].map((match) => `${match[1]} ${match[2]}`),
      );
      const grpc = [...routes].filter((series) => series.startsWith('grpc_'));
      assert.ok(grpc.length > 0, 'no grpc series');
      assert.ok(grpc.length <= 12, `gRPC series: ${grpc.join(', ')}`);
      // Tag labels are capped by --metrics-tags (5 here), the rest summed under tag="(other)".
      const tags = new Set([...text.matchAll(/tag="(g22-[0-9a-f]{8})"/g)].map((match) => match[1]));
      assert.ok(tags.size <= 5, `${tags.size} tag labels: ${[...tags].join(', ')}`);
    } finally {
      client.close();
      await node.stop();
    }
  });
});
