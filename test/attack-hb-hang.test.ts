// Attack on the stop's bound: the database hangs (a TCP proxy that forwards nothing) when a node
// gets SIGTERM. The node must exit within --hand-back-timeout-ms + --shutdown-timeout-ms (plus the
// process's own start-up of the stop), even with a keep-alive client connected, and its next start
// (database back) must neither repeat an ID nor fence, and must list what the stop could not hand
// back as gaps.
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, describe, it } from 'node:test';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { SERVICE_NAME, type ServerDialect, testDatabase } from './support/test-database.js';

const HAND_BACK_MS = 1_000;
const SHUTDOWN_MS = 2_000;
/** Slack for a loaded 2-core machine: the stop's logging, the store's close, the process exit. */
const SLACK_MS = 3_000;

function get(url: string, agent: Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent, timeout: 8_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

for (const dialect of ['postgres', 'mysql'] as ServerDialect[]) {
  describe(`attack: SIGTERM with ${SERVICE_NAME[dialect]} hanging`, () => {
    const holder = testDatabase(dialect);
    after(() => holder.drop());

    it('exits within the bound with a keep-alive client; the next start repeats nothing and lists the gap', async (t) => {
      const db = await holder.open(t);
      if (db === undefined) return;
      const init = await runFrond(['db', 'init', '--store', db.url]);
      assert.equal(init.code, 0, init.stderr);
      const tag = randomTag('ahb');
      const added = await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--store', db.url]);
      assert.equal(added.code, 0, added.stderr);
      const proxy = await TcpProxy.start({ port: Number(new URL(db.url).port) });
      const dataDir = tempDir('frond-attack-hang-');
      const args = [
        '--port',
        '0',
        '--no-snowflake',
        '--store',
        db.urlVia(proxy.port),
        '--data-dir',
        dataDir,
        '--hand-back-timeout-ms',
        String(HAND_BACK_MS),
        '--shutdown-timeout-ms',
        String(SHUTDOWN_MS),
      ];
      const agent = new Agent({ keepAlive: true });
      const served: bigint[] = [];
      try {
        const node = await startFrond(args);
        for (let i = 0; i < 30; i++) {
          const answer = await get(`${node.url}/api/segment/get/${tag}`, agent);
          assert.equal(answer.status, 200, answer.body);
          served.push(BigInt(answer.body));
        }
        proxy.blackhole();
        const started = Date.now();
        const code = await node.stop('SIGTERM', 30_000);
        const took = Date.now() - started;
        const at = (event: string) => {
          const line = node.logs.find((text) => text.includes(`"event":"${event}"`));
          assert.ok(line, `no ${event} in:\n${node.logs.join('\n')}`);
          return Date.parse((JSON.parse(line) as { time: string }).time);
        };
        const handBackMs = at('segment.hand_back_summary') - at('shutdown');
        const afterMs = at('stopped') - at('segment.hand_back_summary');
        const figures = `${code} after ${took} ms: hand-back ${handBackMs} ms, then ${afterMs} ms to "stopped"`;
        console.log(`${dialect}: ${figures}`);
        // The hand-back within its bound (a load in flight included), and nothing after it waits
        // on the database that hangs (the store's close of a pool whose query never answers).
        assert.ok(handBackMs < HAND_BACK_MS + 500, `the hand-back overran its bound: ${figures}`);
        assert.ok(afterMs < 1_500, `the stop waited on the hanging database after the hand-back: ${figures}`);
        assert.ok(took < HAND_BACK_MS + SHUTDOWN_MS + SLACK_MS, figures);
        proxy.restore();
        const again = await startFrond(args);
        try {
          for (let i = 0; i < 30; i++) {
            const answer = await get(`${again.url}/api/segment/get/${tag}`, agent);
            assert.equal(answer.status, 200, answer.body);
            served.push(BigInt(answer.body));
          }
          assert.equal(new Set(served).size, served.length, `an ID served twice: ${served.join(' ')}`);
          assert.ok(!again.logs.some((line) => line.includes('"segment.fenced"')), again.logs.join('\n'));
          const gaps = await runFrond(['tag', 'gaps', tag, '--json', '--store', db.url]);
          assert.equal(gaps.code, 0, gaps.stderr);
          const listed = (JSON.parse(gaps.stdout) as { gaps: { start: string; end: string }[] }).gaps;
          const first = served[0] as bigint;
          const last = served[served.length - 1] as bigint;
          // Every ID from the first to the last served is served or listed.
          for (let id = first; id <= last; id++)
            assert.ok(
              served.includes(id) || listed.some((gap) => BigInt(gap.start) <= id && id < BigInt(gap.end)),
              `ID ${id} neither served nor listed: gaps ${gaps.stdout}`,
            );
        } finally {
          await again.stop('SIGTERM');
        }
      } finally {
        agent.destroy();
        await proxy.close();
      }
    });
  });
}
