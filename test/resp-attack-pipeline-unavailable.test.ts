import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type FrondProcess, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { freePort } from './support/tls-databases.js';

/**
 * Attack finding (fails on 61c5c28): pipelined INCRs from a few connections on a healthy SQLite
 * store are answered `-SEGMENT_UNAVAILABLE no IDs buffered for tag …; retry` — a waiter that loses
 * the race for 8 segment loads in a row (segment-buffer waitForId) gives up, though no load failed.
 */

/** Sends `count` pipelined INCRs on one connection, reads until `count` replies came (or 30 s). */
function pipeline(port: number, tag: string, count: number): Promise<string[]> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const replies: string[] = [];
    let rest = '';
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(replies);
    };
    const timer = setTimeout(done, 30_000);
    socket.on('data', (chunk) => {
      const lines = (rest + chunk.toString('latin1')).split('\r\n');
      rest = lines.pop() ?? '';
      replies.push(...lines);
      if (replies.length >= count) done();
    });
    socket.on('error', done);
    socket.write(`INCR ${tag}\r\n`.repeat(count));
  });
}

describe('RESP attack: pipelined INCRs on a healthy store', () => {
  let frond: FrondProcess;
  let respPort: number;
  const tag = randomTag();

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
      body: JSON.stringify({ tag, step: 50 }),
    });
    assert.equal(response.status, 201, await response.text());
  });
  after(() => frond?.stop());

  it('answers every INCR with an ID, none with SEGMENT_UNAVAILABLE, none twice', async () => {
    const all = (await Promise.all([0, 1, 2, 3].map(() => pipeline(respPort, tag, 20_000)))).flat();
    const errors = all.filter((line) => line.startsWith('-'));
    assert.deepEqual(errors.slice(0, 3), [], `${errors.length} of ${all.length} replies are errors`);
    assert.equal(all.length, 80_000);
    assert.equal(new Set(all).size, all.length, 'an ID answered twice');
  });
});
