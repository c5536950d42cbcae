import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { testDatabase } from './support/test-database.js';

const database = testDatabase('postgres');

async function get(node: FrondProcess, path: string): Promise<{ status: number; text: string }> {
  const response = await fetch(node.url + path);
  return { status: response.status, text: await response.text() };
}

describe('opaque IDs from several nodes on PostgreSQL', () => {
  after(() => database.drop());

  it('never hands out an opaque ID twice from 3 nodes, one SIGKILLed and restarted under load, and every one decodes', async (t) => {
    const db = await database.open(t);
    if (db === undefined) return;
    const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };
    const tag = 'opaque-orders';
    const added = await runFrond(
      ['tag', 'add', tag, '--opaque', 'bits:40', '--step', '50', '--store', db.url],
      { env },
    );
    assert.equal(added.code, 0, added.stderr);
    const dirs = [tempDir('frond-node-'), tempDir('frond-node-'), tempDir('frond-node-')];
    const args = (dir: string) => ['--port', '0', '--data-dir', dir, '--no-snowflake', '--store', db.url];
    const nodes = await Promise.all(dirs.map((dir) => startFrond(args(dir), { env })));
    const ids: string[] = [];
    try {
      const load = async (i: number, rounds: number) => {
        for (let r = 0; r < rounds; r++) {
          const node = nodes[i] as FrondProcess;
          const one = await get(node, `/api/segment/get/${tag}`);
          if (one.status === 200) ids.push(one.text);
          const many = await get(node, `/v1/segment/${tag}?count=300`);
          if (many.status === 200) ids.push(...(JSON.parse(many.text) as { ids: string[] }).ids);
        }
      };
      const first = Promise.all([load(1, 40), load(2, 40)]);
      await load(0, 10);
      // Killed with encoded IDs and segments in hand: the restarted node must not repeat any of them.
      await (nodes[0] as FrondProcess).stop('SIGKILL');
      nodes[0] = await startFrond(args(dirs[0] as string), { env });
      await Promise.all([first, load(0, 30)]);
    } finally {
      await Promise.all(nodes.map((node) => node.stop()));
    }
    assert.ok(ids.length > 20_000, `${ids.length} IDs`);
    assert.equal(new Set(ids).size, ids.length, 'an opaque ID was handed out twice');
    for (const id of ids) {
      const n = BigInt(id);
      assert.ok(n >= 1n && n < 2n ** 40n, id);
    }
    // Decoding maps them back to distinct segment IDs (a sample, through the CLI).
    for (const id of ids.slice(0, 3)) {
      const decoded = await runFrond(['decode', '--tag', tag, id, '--store', db.url], { env });
      assert.equal(decoded.code, 0, decoded.stderr);
      assert.match(decoded.stdout, /"segmentId":"[1-9][0-9]*"/);
    }
  });
});
