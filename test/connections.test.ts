import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens `count` TCP connections that never send a byte; resolves once each is open or refused. */
async function idleConnections(port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => resolve());
          socket.on('error', () => resolve());
          socket.setTimeout(5000, () => resolve());
          sockets.push(socket);
        }),
    ),
  );
  return sockets;
}

describe('connections under a low descriptor limit (issue 16, item 14)', () => {
  it('under ulimit -n 256, 400 idle connections leave the snowflake record and the open connections working', async () => {
    const node = await startFrond(['--port', '0', '--data-dir', tempDir(), '--no-segment'], {
      descriptorLimit: 256,
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let idle: Socket[] = [];
    try {
      const listening = JSON.parse(node.logs.find((line) => line.includes('"listening"')) as string) as {
        maxConnections: number;
        descriptorLimit: number;
      };
      assert.equal(listening.descriptorLimit, 256);
      assert.equal(listening.maxConnections, 128);
      // One keep-alive connection is in before the flood; requests keep it from going idle.
      assert.equal((await httpGet(`${node.url}/api/snowflake/get/k`, { agent })).status, 200);
      const port = Number(new URL(node.url).port);
      idle = await idleConnections(port, 400);
      // The record is written every 500 ms, 2 s ahead: 3 s covers several records and the 2 s.
      const statuses: number[] = [];
      for (let i = 0; i < 15; i++) {
        statuses.push((await httpGet(`${node.url}/api/snowflake/get/k`, { agent })).status);
        await sleep(200);
      }
      assert.deepEqual(new Set(statuses), new Set([200]), statuses.join(','));
      assert.ok(!node.logs.some((line) => line.includes('snowflake.record_failed')), 'a record failed');
      const closed = idle.filter((socket) => socket.destroyed || socket.readyState !== 'open').length;
      assert.ok(closed >= 400 - 128, `only ${closed} of 400 idle connections were refused`);
      for (const socket of idle) socket.destroy();
      idle = [];
      await sleep(300);
      // Once they are gone, new connections are served again.
      assert.equal((await httpGet(`${node.url}/readyz`)).status, 200);
      assert.equal((await httpGet(`${node.url}/api/snowflake/get/k`)).status, 200);
    } finally {
      for (const socket of idle) socket.destroy();
      agent.destroy();
      await node.stop();
    }
  });
});
