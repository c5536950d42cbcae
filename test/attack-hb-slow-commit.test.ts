// Attack: SIGTERM while the database answers slowly (a TCP proxy adding 60-90 ms to every reply of
// PostgreSQL), with --hand-back-timeout-ms 600: the hand-back's COMMIT is sent around the time the
// node gives up, so some stops commit after the node has called them failed (the real path of a
// hand-back whose answer is lost). Then the next start of the same data dir: it must not fence,
// nothing may be answered twice, and every ID from 1 to max_id is answered or in the gap report.
// The figure says how many answered IDs the crash gaps list (the report's over-count), and how
// many stops logged the hand-back as failed while it went on and committed before the exit.
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { runFrond } from './support/frond-process.js';
import { account, Load, listGaps, Node, reasonFigure } from './support/hand-back-nodes.js';
import { randomTag } from './support/random-tag.js';
import { TcpProxy } from './support/tcp-proxy.js';
import { testDatabase } from './support/test-database.js';

const postgres = testDatabase('postgres');
after(() => postgres.drop());

describe('attack: SIGTERM with a slow database around the hand-back timeout (PostgreSQL)', () => {
  it('no fence, nothing twice, every ID accounted', { timeout: 60_000 }, async (t) => {
    const db = await postgres.open(t);
    if (db === undefined) return;
    const init = await runFrond(['db', 'init', '--store', db.url]);
    assert.equal(init.code, 0, init.stderr);
    const tag = randomTag('slow');
    const added = await runFrond(['tag', 'add', tag, '--step', '100', '--start', '1', '--store', db.url]);
    assert.equal(added.code, 0, added.stderr);
    const proxy = await TcpProxy.start({ port: 5432 });
    const node = await Node.create('node', db.urlVia(proxy.port), [
      '--hand-back-timeout-ms',
      '600',
      '--max-step',
      '400',
    ]);
    const load = new Load(tag);
    const failedStops: (number | string)[] = [];
    const tookMs: number[] = [];
    try {
      await node.start();
      load.add(node, 3);
      for (const latency of [60, 70, 80, 90, 'hang'] as const) {
        await sleep(250);
        // 'hang': the database stops answering at all (its connections go silent).
        if (latency === 'hang') proxy.blackhole();
        else proxy.latencyMs = latency;
        const began = performance.now();
        const exit = await node.stop('SIGTERM');
        const took = performance.now() - began;
        assert.equal(exit, 0, `a stop with ${latency} ms of latency exits 0`);
        // Bounded by the drain of requests waiting on the hung database, the hand-back timeout
        // (600 ms) and the store's close (STORE_CLOSE_MS, 5 s): 6-12 s seen with 'hang'.
        tookMs.push(Math.round(took));
        assert.ok(took < 20_000, `a stop with ${latency} (ms of latency) took ${Math.round(took)} ms`);
        const summary = node.events('segment.hand_back_summary').at(-1);
        if (Number(summary?.failed ?? 0) > 0) failedStops.push(latency);
        proxy.latencyMs = 0;
        proxy.restore();
        await node.start();
      }
      await sleep(250);
      await load.stop();
      assert.equal(await node.stop('SIGTERM'), 0);
    } finally {
      await load.stop();
      await node.stop('SIGKILL');
      await proxy.close();
    }
    const fenced = node
      .logs()
      .filter(
        (line) =>
          line.includes('"event":"segment.fenced"') ||
          (line.includes('"event":"segment.fence_needed"') && !line.includes('first use of this database')),
      );
    const auditor = await Node.create('auditor', db.url);
    await auditor.start();
    let gaps: Awaited<ReturnType<typeof listGaps>>;
    try {
      gaps = await listGaps(auditor.url, tag);
    } finally {
      await auditor.stop('SIGTERM');
    }
    const [row] = await db.sql('SELECT max_id FROM leaf_alloc WHERE biz_tag = $1', [tag]);
    const maxId = Number(row?.max_id);
    const result = account(load.ids, gaps, 1, maxId);
    t.diagnostic(
      `${result.answered} IDs, max_id ${maxId}, stops ${tookMs.join('/')} ms, stops that gave up at latencies ${failedStops.join(', ') || 'none'}; gaps ${reasonFigure(gaps)}; answered IDs inside crash gaps ${result.answeredInCrashGap}; duplicates ${result.duplicates}, unaccounted ${result.unaccounted}`,
    );
    assert.deepEqual(fenced.slice(0, 3), [], 'no fence');
    assert.equal(result.duplicates, 0, 'no ID twice');
    assert.equal(result.aboveMaxId, 0, 'no ID at or above max_id');
    assert.equal(result.unaccounted, 0, `every ID answered or in a gap: ${result.unaccountedRuns.join(' ')}`);
    assert.equal(result.answeredInGap, 0, 'no answered ID in a gap other than crash');
  });
});
