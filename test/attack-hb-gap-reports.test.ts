// Attacks on what the gap report says (SQLite, real processes): a client's POST /v1/tags/{tag}/gaps
// must not list IDs that are (or will be) issued, overlapping reports must not be counted twice,
// and a browser page on another origin must not be able to record a gap on a loopback node.
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
  it('a POST naming IDs the node still holds (unserved) is refused, or those IDs are never served', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      // The node holds [1, 101) and serves 1..5; [50, 60) was never granted to any client.
      for (let i = 0; i < 5; i++) await nextId(node, tag);
      const posted = await post(node, tag, '{"start":"50","end":"60"}');
      const served: bigint[] = [];
      for (let i = 0; i < 60; i++) served.push(await nextId(node, tag));
      const gaps = await gapsOf(node, tag);
      const listedAndServed = served.filter((id) =>
        gaps.some((gap) => BigInt(gap.start) <= id && id < BigInt(gap.end)),
      );
      assert.deepEqual(
        listedAndServed.map(String),
        [],
        `POST answered ${posted.status} ${posted.body}; the gap report lists IDs the node then served`,
      );
    } finally {
      await node.stop('SIGTERM');
    }
  });

  it('two overlapping returns are not counted twice (frond_gap_ids, /v1/stats, the listing)', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const granted = await call(`${node.url}/v1/ranges/${tag}?count=50`);
      assert.equal(granted.status, 200, granted.body);
      const [range] = (JSON.parse(granted.body) as { ranges: { start: string; end: string }[] }).ranges;
      assert.ok(range !== undefined);
      const s = BigInt(range.start);
      // A retried close() after a partial use: [s+10, s+50) then [s+20, s+50): 40 distinct IDs.
      const a = await post(node, tag, JSON.stringify({ start: String(s + 10n), end: String(s + 50n) }));
      assert.equal(a.status, 201, a.body);
      const b = await post(node, tag, JSON.stringify({ start: String(s + 20n), end: String(s + 50n) }));
      const gaps = await gapsOf(node, tag);
      let listed = 0n;
      const seen = new Set<bigint>();
      for (const gap of gaps)
        for (let id = BigInt(gap.start); id < BigInt(gap.end); id++) {
          listed++;
          seen.add(id);
        }
      assert.equal(
        listed,
        BigInt(seen.size),
        `second POST ${b.status}; overlapping gaps listed: ${JSON.stringify(gaps)}`,
      );
      const metrics = await call(`${node.url}/metrics`);
      const ids = /^frond_gap_ids\{reason="range_unused"\} (\d+)$/m.exec(metrics.body)?.[1];
      assert.equal(ids, '40', `frond_gap_ids{range_unused} counts ${ids} for 40 distinct IDs`);
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

  it('a POST naming IDs already served to callers is refused (they are not a gap)', async () => {
    const tag = randomTag('ahb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const served: bigint[] = [];
      for (let i = 0; i < 20; i++) served.push(await nextId(node, tag));
      const posted = await post(node, tag, '{"start":"1","end":"21"}');
      const gaps = await gapsOf(node, tag);
      assert.deepEqual(gaps, [], `POST of served IDs answered ${posted.status}: ${posted.body}`);
    } finally {
      await node.stop('SIGTERM');
    }
  });
});
