// Attacks on what the gap report says (SQLite, real processes). A client's POST /v1/tags/{tag}/gaps
// is recorded as the client says (docs/api.md): the server checks only that the range was issued
// from the table (below max_id), so a wrong report can list IDs that were or will be served, and
// overlapping reports are listed and counted as sent. What must hold whatever a client reports: no
// ID is served twice, a clean stop never hands back under a reported range, a retry is recorded
// and counted once, and a browser page on another origin cannot record one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';

interface Answer {
  status: number;
  body: string;
}

async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return { status: response.status, body: await response.text() };
}

async function nextId(node: FrondProcess, tag: string): Promise<bigint> {
  const answer = await call(`${node.url}/api/segment/get/${encodeURIComponent(tag)}`);
  assert.equal(answer.status, 200, answer.body);
  return BigInt(answer.body);
}

async function prepared(tag: string): Promise<string> {
  const dataDir = tempDir('frond-attack-hb-');
  const init = await runFrond(['db', 'init', '--data-dir', dataDir]);
  assert.equal(init.code, 0, init.stderr);
  const added = await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--data-dir', dataDir]);
  assert.equal(added.code, 0, added.stderr);
  return dataDir;
}

interface GapJson {
  start: string;
  end: string;
  reason: string;
}

async function gapsOf(node: FrondProcess, tag: string): Promise<GapJson[]> {
  const listed = await call(`${node.url}/v1/tags/${tag}/gaps?limit=1000`);
  assert.equal(listed.status, 200, listed.body);
  return (JSON.parse(listed.body) as { gaps: GapJson[] }).gaps;
}

function post(node: FrondProcess, tag: string, body: string, headers: Record<string, string> = {}) {
  return call(`${node.url}/v1/tags/${tag}/gaps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  });
}

const SERVE = ['--port', '0', '--no-snowflake'];

describe('attack: what the gap report says', () => {
  it('a POST naming IDs the node still holds is recorded as sent; nothing is served twice and the stop never hands back under it', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    const served: bigint[] = [];
    try {
      // The node holds [1, 101) and serves 1..5; [50, 60) was never granted to any client.
      for (let i = 0; i < 5; i++) served.push(await nextId(node, tag));
      const posted = await post(node, tag, '{"start":"50","end":"60"}');
      assert.equal(posted.status, 201, posted.body);
      for (let i = 0; i < 60; i++) served.push(await nextId(node, tag));
      assert.deepEqual(
        (await gapsOf(node, tag)).map((gap) => [gap.start, gap.end, gap.reason]),
        [['50', '60', 'range_unused']],
      );
    } finally {
      await node.stop('SIGTERM');
    }
    assert.equal(new Set(served).size, served.length, 'no ID served twice');
    // 1..65 served; the stop's tail [66, 201) runs over the reported [50, 60)? No: it starts above
    // it, so it goes back whole. The next start continues at 66, below nothing reported.
    const again = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      assert.equal(await nextId(again, tag), 66n);
    } finally {
      await again.stop('SIGTERM');
    }
  });

  it('a reported range inside the tail a node holds: the stop hands back only above it, and records the rest', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    const served: bigint[] = [];
    try {
      for (let i = 0; i < 5; i++) served.push(await nextId(node, tag));
      // [70, 80) lies inside what the node still holds unserved: [6, 101) and its next segment.
      assert.equal((await post(node, tag, '{"start":"70","end":"80"}')).status, 201);
    } finally {
      await node.stop('SIGTERM');
    }
    const again = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const first = await nextId(again, tag);
      assert.ok(
        first >= 80n,
        `the first ID after the stop is ${first}: handed back under the reported [70, 80)`,
      );
      const gaps = await gapsOf(again, tag);
      const covered = (id: bigint) => gaps.some((gap) => BigInt(gap.start) <= id && id < BigInt(gap.end));
      for (let id = 6n; id < first; id++)
        assert.ok(covered(id), `ID ${id} neither served, listed, nor in the table`);
    } finally {
      await again.stop('SIGTERM');
    }
  });

  it('two overlapping returns are listed as sent (a client report), and neither is handed back under', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const granted = await call(`${node.url}/v1/ranges/${tag}?count=50`);
      assert.equal(granted.status, 200, granted.body);
      const [range] = (JSON.parse(granted.body) as { ranges: { start: string; end: string }[] }).ranges;
      assert.ok(range !== undefined);
      const s = BigInt(range.start);
      const a = await post(node, tag, JSON.stringify({ start: String(s + 10n), end: String(s + 50n) }));
      assert.equal(a.status, 201, a.body);
      const b = await post(node, tag, JSON.stringify({ start: String(s + 20n), end: String(s + 50n) }));
      assert.equal(b.status, 201, b.body);
      assert.deepEqual(
        (await gapsOf(node, tag)).map((gap) => [gap.start, gap.end, gap.reason]),
        [
          [String(s + 10n), String(s + 50n), 'range_unused'],
          [String(s + 20n), String(s + 50n), 'range_unused'],
        ],
      );
      const metrics = await call(`${node.url}/metrics`);
      const ids = /^frond_gap_ids\{reason="range_unused"\} (\d+)$/m.exec(metrics.body)?.[1];
      assert.equal(ids, '70', 'the totals count the reports as sent');
    } finally {
      await node.stop('SIGTERM');
    }
  });

  it('a retried return (the same range twice) is counted once in frond_ids_given_up_total, and answered with the stored time', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const granted = await call(`${node.url}/v1/ranges/${tag}?count=50`);
      const [range] = (JSON.parse(granted.body) as { ranges: { start: string; end: string }[] }).ranges;
      assert.ok(range !== undefined, granted.body);
      const body = JSON.stringify({ start: String(BigInt(range.start) + 10n), end: range.end });
      const first = await post(node, tag, body);
      assert.equal(first.status, 201, first.body);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const second = await post(node, tag, body);
      const [stored] = await gapsOf(node, tag);
      assert.equal(
        (JSON.parse(second.body) as { at: string }).at,
        (stored as unknown as { at: string }).at,
        `the retry answered ${second.status} ${second.body}; the row holds ${JSON.stringify(stored)}`,
      );
      const metrics = (await call(`${node.url}/metrics`)).body;
      const givenUp = /^frond_ids_given_up_total\{reason="range_unused"\} (\d+)$/m.exec(metrics)?.[1];
      const recorded = /^frond_gap_ids\{reason="range_unused"\} (\d+)$/m.exec(metrics)?.[1];
      assert.equal(givenUp, recorded, `given up ${givenUp}, recorded ${recorded}: the retry counted twice`);
    } finally {
      await node.stop('SIGTERM');
    }
  });

  it('a page on another origin cannot record a gap (a CORS simple request: text/plain, no preflight)', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      await nextId(node, tag);
      // What fetch() from https://evil.example does with mode: 'no-cors': the browser sends it.
      const forged = await post(node, tag, '{"start":"1","end":"100"}', {
        'content-type': 'text/plain;charset=UTF-8',
        origin: 'https://evil.example',
      });
      const gaps = await gapsOf(node, tag);
      assert.deepEqual(gaps, [], `a cross-origin text/plain POST answered ${forged.status}: ${forged.body}`);
    } finally {
      await node.stop('SIGTERM');
    }
  });

  it('a POST of IDs never issued (above max_id) is refused, and one below the first ID is recorded as sent', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      for (let i = 0; i < 20; i++) await nextId(node, tag);
      // max_id is 201 (two segments of 100 taken): [150, 250) reaches above it.
      const above = await post(node, tag, '{"start":"150","end":"250"}');
      assert.equal(above.status, 400, above.body);
      assert.match(above.body, /INVALID_ARGUMENT/);
      assert.equal((await post(node, tag, '{"start":"1","end":"21"}')).status, 201);
      assert.deepEqual(
        (await gapsOf(node, tag)).map((gap) => [gap.start, gap.end]),
        [['1', '21']],
      );
    } finally {
      await node.stop('SIGTERM');
    }
  });
});
