import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { TcpProxy } from './support/tcp-proxy.js';
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
  it('creates a tag declared opaque in a --config file once the store, down at start, is back, and is unready until then', async (t) => {
    const db = await database.open(t);
    if (db === undefined) return;
    const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };
    const proxy = await TcpProxy.start({ port: 5432 });
    t.after(() => proxy.close());
    const dir = tempDir('frond-node-');
    const tag = `declared-${randomBytes(4).toString('hex')}`;
    const configFile = join(dir, 'frond.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        'no-snowflake': true,
        store: db.urlVia(proxy.port),
        'opaque-tag': [`${tag}=digits:12`],
      }),
    );
    proxy.cut();
    const node = await startFrond(['--config', configFile, '--port', '0', '--data-dir', dir], { env });
    t.after(() => node.stop());
    const down = await get(node, '/readyz');
    assert.equal(down.status, 503, down.text);
    assert.match(down.text, /declared opaque tags not yet checked/);
    assert.ok(node.logs.some((line) => line.includes('opaque.declaration_unchecked')));

    proxy.restore();
    // Tried again every 5 s: bounded at 20 s. (The segment check turns with the next load or tag read.)
    const opaqueOk = (reply: { text: string }) =>
      (JSON.parse(reply.text) as { checks: { opaque: { ok: boolean } } }).checks.opaque.ok;
    assert.equal(opaqueOk(down), false);
    let ready = down;
    for (let waited = 0; waited < 20_000 && !opaqueOk(ready); waited += 250) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      ready = await get(node, '/readyz');
    }
    assert.ok(opaqueOk(ready), ready.text);
    const reply = await get(node, `/v1/segment/${tag}?count=200`);
    assert.equal(reply.status, 200, reply.text);
    const ids = (JSON.parse(reply.text) as { ids: string[] }).ids;
    assert.equal(new Set(ids).size, 200);
    for (const id of ids) assert.match(id, /^[0-9]{1,12}$/);
    const rows = await db.sql('SELECT opaque_domain AS domain FROM frond_tag_options WHERE biz_tag = $1', [
      tag,
    ]);
    assert.deepEqual(rows, [{ domain: 'digits:12' }]);
  });

  it('refuses a bad or conflicting declaration with one line and a non-zero exit', async (t) => {
    const db = await database.open(t);
    if (db === undefined) return;
    const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };
    const plain = `plain-${randomBytes(4).toString('hex')}`;
    assert.equal((await runFrond(['tag', 'add', plain, '--store', db.url])).code, 0);
    const serve = (declaration: string) =>
      runFrond(
        [
          'serve',
          '--port',
          '0',
          '--data-dir',
          tempDir('frond-node-'),
          '--no-snowflake',
          '--store',
          db.url,
          '--opaque-tag',
          declaration,
        ],
        { env },
      );
    for (const [declaration, message] of [
      ['orders=digits:99', /^frond: --opaque-tag "orders=digits:99": .*digits/],
      ['orders', /^frond: --opaque-tag "orders" must be TAG=DOMAIN/],
      [`${plain}=bits:53`, new RegExp(`^frond: tag ${plain} is a plain tag in the store`)],
    ] as const) {
      const result = await serve(declaration);
      assert.notEqual(result.code, 0, declaration);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    }
  });
});
