import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type FrondProcess, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { freePort } from './support/tls-databases.js';

/**
 * Attack finding (fails on 61c5c28): a client that pipelines batches without reading, then goes
 * away, leaves its unread commands in the parser; each settled reply resumes the dead connection
 * (RespConnection.drainQueue -> resume -> readCommands never checks socket.destroyed), so the node
 * goes on issuing IDs for nobody, at full CPU, long after the client left.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RESP attack: a client that leaves with commands unread', () => {
  let frond: FrondProcess;
  let respPort: number;
  const tag = randomTag();
  const nextId = async () => {
    const response = await fetch(`${frond.url}/v1/segment/${tag}`);
    const body = (await response.json()) as { ids: string[] };
    return BigInt(body.ids[0] as string);
  };

  before(async () => {
    respPort = await freePort();
    frond = await startFrond([
      '--port',
      '0',
      '--resp-port',
      String(respPort),
      '--data-dir',
      tempDir(),
      '--log-format',
      'json',
    ]);
    const response = await fetch(`${frond.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag }),
    });
    assert.equal(response.status, 201, await response.text());
  });
  after(() => frond?.stop());

  it('stops issuing IDs for a connection once it is closed', async () => {
    // 20 connections send 5,000 batches each (IDS of 10,000, SNOWFLAKE 10,000), read no reply, leave.
    const sockets = Array.from({ length: 20 }, (_, c) => {
      const socket = connect(respPort, '127.0.0.1');
      socket.on('error', () => {});
      socket.pause();
      socket.write((c % 2 ? `IDS ${tag} 10000\r\n` : 'SNOWFLAKE 10000\r\n').repeat(5_000));
      return socket;
    });
    await sleep(8_000);
    for (const socket of sockets) socket.destroy();
    await sleep(1_000);
    const left = await nextId();
    await sleep(3_000);
    const later = await nextId();
    // Only this test's HTTP call takes IDs now: the tag should move by one, not by millions.
    assert.ok(later - left < 100_000n, `the tag moved ${later - left} IDs in 3 s after its client left`);
  });
});
