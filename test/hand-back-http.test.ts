// Real processes on SQLite: a clean stop hands its segments' unused IDs back (the next start goes
// on right after the last ID served), the gaps a tag has are listed by the route and the CLI and
// counted in /metrics and /v1/stats, a SIGKILL is reported as crash gaps by the next start, and a
// --workers node's stop leaves no false fence behind. Needs the SQLite store's hand-back.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { describe, it } from 'node:test';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';

interface Answer {
  status: number;
  body: string;
  connection: string | null;
}

/** One request, bounded (fetch's own agent: a new connection each time is fine here). */
async function call(url: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  return {
    status: response.status,
    body: await response.text(),
    connection: response.headers.get('connection'),
  };
}

async function nextId(node: FrondProcess, tag: string): Promise<bigint> {
  const answer = await call(`${node.url}/api/segment/get/${encodeURIComponent(tag)}`);
  assert.equal(answer.status, 200, answer.body);
  return BigInt(answer.body);
}

/** The JSON log events of a process. */
function events(node: FrondProcess): { event: string; [field: string]: unknown }[] {
  return node.logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as { event: string }];
    } catch {
      return [];
    }
  });
}

/** A data dir with the store made and `tag` added (step 100, first ID 1). */
async function prepared(tag: string): Promise<string> {
  const dataDir = tempDir('frond-hand-back-');
  const init = await runFrond(['db', 'init', '--data-dir', dataDir]);
  assert.equal(init.code, 0, init.stderr);
  const added = await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--data-dir', dataDir]);
  assert.equal(added.code, 0, added.stderr);
  return dataDir;
}

const SERVE = ['--port', '0', '--no-snowflake'];

/** Waits (bounded) until `found` holds, polling every 50 ms. */
async function until(found: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 50) {
    if (await found()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`${what}: not within ${ms} ms`);
}

describe('a clean stop hands its unused IDs back (SQLite, real processes)', () => {
  it('SIGTERM then restart, three times: the first ID after each restart is the last before + 1, no gap, no fence', async () => {
    const tag = randomTag('hb');
    const dataDir = await prepared(tag);
    let last: bigint | undefined;
    for (let round = 0; round < 3; round++) {
      const node = await startFrond([...SERVE, '--data-dir', dataDir]);
      const first = await nextId(node, tag);
      if (last !== undefined) assert.equal(first, last + 1n, `round ${round}: ${first} after ${last}`);
      // 25 IDs: past 10% of the segment, so the next segment is loaded too and goes back as well.
      for (let i = 0; i < 24; i++) last = await nextId(node, tag);
      assert.equal(await node.stop('SIGTERM'), 0, node.stderr.join('\n'));
      const summary = events(node).find((event) => event.event === 'segment.hand_back_summary');
      assert.ok(summary, node.logs.join('\n'));
      assert.equal(summary.failed, 0, JSON.stringify(summary));
      assert.ok(BigInt(summary.handedBack as string) >= 75n, JSON.stringify(summary));
      assert.ok(!events(node).some((event) => event.event === 'segment.fenced'), node.logs.join('\n'));
    }
    const gaps = await runFrond(['tag', 'gaps', tag, '--json', '--data-dir', dataDir]);
    assert.equal(gaps.code, 0, gaps.stderr);
    assert.deepEqual(JSON.parse(gaps.stdout), { tag, gaps: [], next: null });
  });

  it('an opaque tag: SIGTERM hands its look-ahead back with its buffer, no gap, and the IDs after the restart are new', async () => {
    const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };
    const tag = randomTag('hbo');
    const dataDir = tempDir('frond-hand-back-');
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const added = await runFrond(
      ['tag', 'add', tag, '--opaque', 'digits:12', '--step', '5000', '--data-dir', dataDir],
      {
        env,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const seen = new Set<string>();
    for (let round = 0; round < 2; round++) {
      const node = await startFrond([...SERVE, '--data-dir', dataDir], { env });
      for (let i = 0; i < 20; i++) {
        const answer = await call(`${node.url}/api/segment/get/${tag}`);
        assert.equal(answer.status, 200, answer.body);
        assert.ok(!seen.has(answer.body), `opaque ID ${answer.body} twice`);
        seen.add(answer.body);
      }
      assert.equal(await node.stop('SIGTERM'), 0);
      const summary = events(node).find((event) => event.event === 'segment.hand_back_summary');
      assert.ok(summary, node.logs.join('\n'));
      assert.deepEqual([summary.failed, summary.gaps], [0, '0'], JSON.stringify(summary));
    }
    // 40 opaque IDs served: the row is back at segment ID 41 (its first ID was 1), nothing lost.
    const listed = await runFrond(['tag', 'list', '--json', '--data-dir', dataDir], { env });
    const row = (JSON.parse(listed.stdout) as { tag: string; maxId: string }[]).find((r) => r.tag === tag);
    assert.equal(row?.maxId, '41');
  });

  it('lists and counts gaps: a client returns part of a range (POST), GET, frond tag gaps, /metrics and /v1/stats show it', async () => {
    const tag = randomTag('hb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const granted = await call(`${node.url}/v1/ranges/${tag}?count=50`);
      assert.equal(granted.status, 200, granted.body);
      const [range] = (JSON.parse(granted.body) as { ranges: { start: string; end: string }[] }).ranges;
      assert.ok(range !== undefined);
      const unused = { start: String(BigInt(range.start) + 10n), end: range.end };
      const post = (body: unknown) =>
        call(`${node.url}/v1/tags/${tag}/gaps`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      const returned = await post(unused);
      assert.equal(returned.status, 201, returned.body);
      assert.deepEqual(
        { ...(JSON.parse(returned.body) as object), at: null },
        { tag, ...unused, ids: '40', reason: 'range_unused', node: 'client', at: null },
      );
      // Refusals: one line with a code, nothing recorded.
      for (const [body, status, code] of [
        [{ start: unused.end, end: unused.start }, 400, 'INVALID_ARGUMENT'],
        [{ start: '1', end: '100000' }, 400, 'INVALID_ARGUMENT'],
        [{ start: 1, end: 2, extra: true }, 400, 'INVALID_ARGUMENT'],
      ] as const) {
        const refused = await post(body);
        assert.equal(refused.status, status, refused.body);
        assert.equal((JSON.parse(refused.body) as { error: { code: string } }).error.code, code);
      }
      const missing = await call(`${node.url}/v1/tags/${randomTag('none')}/gaps`, {
        method: 'POST',
        body: '{"start":"1","end":"2"}',
      });
      assert.equal(missing.status, 404, missing.body);

      const listed = await call(`${node.url}/v1/tags/${tag}/gaps?limit=10`);
      assert.equal(listed.status, 200, listed.body);
      const page = JSON.parse(listed.body) as {
        tag: string;
        gaps: { start: string; reason: string }[];
        next: null;
      };
      assert.deepEqual(
        page.gaps.map((gap) => [gap.start, gap.reason]),
        [[unused.start, 'range_unused']],
      );
      assert.equal(page.next, null);
      const badQuery = await call(`${node.url}/v1/tags/${tag}/gaps?limit=5000`);
      assert.equal(badQuery.status, 400, badQuery.body);

      const cli = await runFrond(['tag', 'gaps', tag, '--data-dir', dataDir]);
      assert.equal(cli.code, 0, cli.stderr);
      assert.match(cli.stdout, /^START\s+END\s+IDS\s+REASON\s+NODE\s+RECORDED$/m);
      assert.match(
        cli.stdout,
        new RegExp(`^${unused.start}\\s+${unused.end}\\s+40\\s+range_unused\\s+client\\s+\\d{4}-`, 'm'),
      );
      const json = await runFrond([
        'tag',
        'gaps',
        tag,
        '--json',
        '--after',
        unused.start,
        '--data-dir',
        dataDir,
      ]);
      assert.deepEqual(JSON.parse(json.stdout), { tag, gaps: [], next: null });

      const metrics = await call(`${node.url}/metrics`);
      assert.match(metrics.body, /^frond_ids_given_up_total\{reason="range_unused"\} 40$/m);
      assert.match(metrics.body, /^frond_ids_handed_back_total 0$/m);
      assert.match(metrics.body, /^frond_gap_ids\{reason="range_unused"\} 40$/m);
      const stats = JSON.parse((await call(`${node.url}/v1/stats`)).body) as {
        gaps: Record<string, { ranges: number; ids: string }>;
        handedBack: string;
        givenUp: Record<string, string>;
      };
      assert.deepEqual(stats.gaps.range_unused, { ranges: 1, ids: '40' });
      assert.deepEqual(stats.gaps.crash, { ranges: 0, ids: '0' });
      assert.equal(stats.handedBack, '0');
      assert.equal(stats.givenUp.range_unused, '40');
      const dashboard = await call(`${node.url}/dashboard`);
      assert.match(dashboard.body, /id="gaps"/);
    } finally {
      assert.equal(await node.stop('SIGTERM'), 0);
    }
  });

  it('a keep-alive client during the stop gets Connection: close and the node exits well before --shutdown-timeout-ms', async () => {
    const tag = randomTag('hb');
    const dataDir = await prepared(tag);
    const node = await startFrond([...SERVE, '--data-dir', dataDir, '--shutdown-timeout-ms', '20000']);
    const agent = new Agent({ keepAlive: true });
    const { request } = await import('node:http');
    const get = () =>
      new Promise<string | undefined>((resolve, reject) => {
        const req = request(`${node.url}/api/segment/get/${tag}`, { agent, timeout: 5_000 }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.headers.connection));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      assert.equal(await get(), 'keep-alive');
      const started = Date.now();
      assert.equal(await node.stop('SIGTERM'), 0);
      // The kept connection is idle: closed at once; 20 s would mean it held the stop.
      assert.ok(Date.now() - started < 10_000, `stopped in ${Date.now() - started} ms`);
    } finally {
      agent.destroy();
    }
  });

  it('SIGKILL, then restart: the next start reports what the killed node held as crash gaps', async () => {
    const tag = randomTag('hb');
    const dataDir = await prepared(tag);
    const killed = await startFrond([...SERVE, '--data-dir', dataDir]);
    const served: bigint[] = [];
    for (let i = 0; i < 5; i++) served.push(await nextId(killed, tag));
    assert.equal(await killed.stop('SIGKILL'), 'SIGKILL');
    const node = await startFrond([...SERVE, '--data-dir', dataDir]);
    try {
      const after = await nextId(node, tag);
      assert.ok(
        served.every((id) => id < after),
        `${after} after ${served.join(',')}`,
      );
      await until(
        () => events(node).some((event) => event.event === 'segment.crash_gaps'),
        `the crash report in the log:\n${node.logs.join('\n')}`,
      );
      const listed = JSON.parse((await call(`${node.url}/v1/tags/${tag}/gaps`)).body) as {
        gaps: { start: string; end: string; reason: string }[];
      };
      const crash = listed.gaps.filter((gap) => gap.reason === 'crash');
      assert.ok(crash.length > 0, JSON.stringify(listed));
      // An upper bound: the killed node's grant, the IDs it served included, and nothing the new node serves.
      assert.ok(
        crash.some(
          (gap) => BigInt(gap.start) <= (served[4] as bigint) + 1n && BigInt(gap.end) > (served[4] as bigint),
        ),
        JSON.stringify(crash),
      );
      assert.ok(
        crash.every((gap) => BigInt(gap.end) <= after),
        JSON.stringify(crash),
      );
      const metrics = await call(`${node.url}/metrics`);
      assert.match(metrics.body, /^frond_ids_given_up_total\{reason="crash"\} [1-9]\d*$/m);
    } finally {
      assert.equal(await node.stop('SIGTERM'), 0);
    }
  });

  it('--workers 2: SIGTERM hands each process back, the primary waits for both, and the next start fences nothing', async () => {
    const tag = randomTag('hb');
    const dataDir = await prepared(tag);
    const seen = new Set<bigint>();
    for (let round = 0; round < 2; round++) {
      const node = await startFrond([...SERVE, '--data-dir', dataDir, '--workers', '2']);
      // Many connections: the primary hands them to both workers.
      const ids = await Promise.all(Array.from({ length: 40 }, () => nextId(node, tag)));
      for (const id of ids) {
        assert.ok(!seen.has(id), `ID ${id} twice`);
        seen.add(id);
      }
      assert.equal(await node.stop('SIGTERM', 30_000), 0, node.logs.join('\n'));
      const summaries = events(node).filter((event) => event.event === 'segment.hand_back_summary');
      assert.equal(summaries.length, 2, node.logs.join('\n'));
      assert.ok(
        summaries.every((summary) => summary.failed === 0),
        JSON.stringify(summaries),
      );
      const fenced = events(node).filter((event) => event.event === 'segment.fenced');
      assert.deepEqual(fenced, [], 'no fence: a hand-back is not a lost grant');
      // The primary's own `stopped` comes after both workers'.
      const lines = events(node).map((event) => event.event);
      assert.ok(lines.lastIndexOf('stopped') > lines.lastIndexOf('segment.hand_back_summary'));
    }
  });
});
