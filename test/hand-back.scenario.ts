import assert from 'node:assert/strict';
import { after, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { backendSkip } from './support/backend-filter.js';
import { runFrond } from './support/frond-process.js';
import { BACKEND_NAME, type Backend, backends, type HandBackDialect } from './support/hand-back-backend.js';
import {
  type Accounting,
  account,
  gapMetrics,
  handedBack,
  Load,
  listGaps,
  medianMs,
  Node,
  reasonFigure,
  takeIds,
  type WireGap,
} from './support/hand-back-nodes.js';
import { randomTag } from './support/random-tag.js';

// Real `frond serve` processes on one store, stopped cleanly (SIGTERM) or killed (SIGKILL) under
// load: what a stop hands back goes out again exactly once, what it cannot hand back is in the gap
// report, and every ID of the tag from its first to leaf_alloc's max_id is one or the other.

/**
 * A ceiling per test, for a hang. A start is most of the time: 1.6-2.2 s median (twenty restarts
 * in 37-46 s, a file in 76-99 s) with one file running on a 2-core machine shared with other work
 * (load average 13), 4.3-4.6 s (twenty restarts in 96-104 s, a file in 171 s) with two at once.
 */
const BUDGET_MS = 240_000;

async function addTag(backend: Backend, step: number): Promise<string> {
  const tag = randomTag('hb');
  const added = await runFrond([
    'tag',
    'add',
    tag,
    '--step',
    String(step),
    '--start',
    '1',
    '--store',
    backend.store,
  ]);
  assert.equal(added.code, 0, added.stderr);
  return tag;
}

async function one(backend: Backend, text: string, values: unknown[]): Promise<bigint | undefined> {
  const [row] = await backend.sql(text, values);
  const value = row === undefined ? undefined : Object.values(row)[0];
  return value === undefined || value === null ? undefined : BigInt(String(value));
}

function maxIdOf(backend: Backend, tag: string): Promise<bigint | undefined> {
  return one(backend, 'SELECT max_id FROM leaf_alloc WHERE biz_tag = ?', [tag]);
}

function highWaterOf(backend: Backend, tag: string): Promise<bigint | undefined> {
  return one(backend, 'SELECT max_id FROM frond_high_water WHERE biz_tag = ?', [tag]);
}

async function fenceEpoch(backend: Backend): Promise<number> {
  return Number(await one(backend, 'SELECT epoch FROM frond_fence', []));
}

/** A node of its own (a fresh data dir, it takes nothing) that reads the gap report. */
async function startAuditor(backend: Backend): Promise<Node> {
  const auditor = await Node.create('auditor', backend.store);
  await auditor.start();
  return auditor;
}

/** The gap report of `tag` from a node that takes nothing, started for it and stopped after. */
async function gapReport(backend: Backend, tag: string): Promise<WireGap[]> {
  const auditor = await startAuditor(backend);
  try {
    return await listGaps(auditor.url, tag);
  } finally {
    assert.equal(await auditor.stop('SIGTERM'), 0);
  }
}

/** Stops every node cleanly, one after the other (each hand-back then sees the ones before it). */
async function stopAll(nodes: readonly Node[]): Promise<void> {
  for (const node of nodes) {
    const exit = await node.stop('SIGTERM');
    if (exit !== undefined) assert.equal(exit, 0, `${node.label} stopped with ${exit}`);
  }
}

function killAll(nodes: readonly Node[]): Promise<unknown> {
  return Promise.all(nodes.map((node) => node.stop('SIGKILL')));
}

/**
 * The tables after every node stopped: leaf_alloc above every ID answered and every gap, the
 * tag's frond_high_water record where its max_id is (both go down together at a hand-back and up
 * together at a grant), frond_gaps holding the ranges the route lists, and those disjoint from one
 * another and from the answered IDs (a `crash` gap may hold IDs answered before the crash: it is
 * an upper bound).
 */
async function assertConsistent(
  backend: Backend,
  tag: string,
  result: Accounting,
  gaps: readonly WireGap[],
): Promise<string> {
  const maxId = await maxIdOf(backend, tag);
  const highWater = await highWaterOf(backend, tag);
  assert.ok(maxId !== undefined, 'the tag has its leaf_alloc row');
  assert.equal(result.aboveMaxId, 0, `${result.aboveMaxId} IDs answered at or above max_id ${maxId}`);
  assert.equal(result.gapAboveMaxId, 0, `${result.gapAboveMaxId} gap IDs at or above max_id ${maxId}`);
  assert.equal(result.inTwoGaps, 0, `${result.inTwoGaps} IDs in two gaps`);
  assert.equal(result.answeredInGap, 0, `${result.answeredInGap} IDs answered and in a gap`);
  assert.equal(highWater, maxId, `frond_high_water ${highWater} and leaf_alloc ${maxId} of ${tag}`);
  const rows = await assertGapTable(backend, tag, gaps);
  return `leaf_alloc.max_id ${maxId} = frond_high_water ${highWater}, frond_gaps ${rows} rows as listed`;
}

/** frond_gaps holds for `tag` exactly the ranges the route listed; resolves with their number. */
async function assertGapTable(backend: Backend, tag: string, gaps: readonly WireGap[]): Promise<number> {
  const rows = await backend.sql('SELECT start_id, end_id, reason FROM frond_gaps WHERE tag = ?', [tag]);
  const key = (start: unknown, end: unknown, reason: unknown) => `${start}-${end} ${reason}`;
  assert.deepEqual(
    rows.map((row) => key(row.start_id, row.end_id, row.reason)).sort(),
    gaps.map((gap) => key(gap.start, gap.end, gap.reason)).sort(),
    'frond_gaps holds what the route lists',
  );
  return rows.length;
}

function assertAccounted(result: Accounting, nodes: readonly Node[], gaps: readonly WireGap[]): void {
  assert.equal(result.duplicates, 0, `${result.duplicates} IDs answered twice`);
  // The first unaccounted ID traced through the nodes' logs: which process was granted it, how it ended.
  const first = Number(/^\[(\d+)/.exec(result.unaccountedRuns[0] ?? '')?.[1]);
  const trace = Number.isNaN(first) ? [] : nodes.flatMap((node) => node.trace(first));
  assert.equal(
    result.unaccounted,
    0,
    `${result.unaccounted} IDs neither answered nor in the gap report, from ${result.unaccountedRuns.join(' ')}; ` +
      `${first}: ${trace.join(' | ') || 'in no logged grant'}; gaps near it: ${JSON.stringify(gaps.filter((gap) => Math.abs(gap.start - first) < 1_000))}`,
  );
}

/**
 * A kill between a grant's commit and its journal line (a few ms, one fsync) loses that grant
 * without a record: the database moved max_id, and no data dir knows the range, so no start can
 * report it (seen in 7 of 38 kills under load, dense tags included: [301, 401) above the one grant the killed node logged). True
 * when what is unaccounted is that case: one run of at most one step, above everything the killed
 * process logged, which no process of `nodes` logged a grant of. Everything else must be accounted for.
 */
function unjournaledLoss(
  result: Accounting,
  step: number,
  lastLogged: number,
  nodes: readonly Node[],
): boolean {
  const runs = result.unaccountedRuns.map((run) => run.slice(1, -1).split(', ').map(Number));
  return (
    result.unaccounted > 0 &&
    result.unaccounted <= step &&
    runs.length === 1 &&
    runs.every(
      ([start, end]) =>
        (start as number) >= lastLogged &&
        (end as number) - (start as number) <= step &&
        nodes.every((node) => node.trace(start as number).length === 0),
    )
  );
}

function assertClean(nodes: readonly Node[], load?: Load): void {
  if (load !== undefined)
    assert.deepEqual(load.failures.slice(0, 5), [], 'only 200 and 503 with Retry-After');
  for (const node of nodes) assert.deepEqual(node.errors().slice(0, 5), [], `${node.label} logged errors`);
}

function figure(t: TestContext, text: string): void {
  t.diagnostic(`figure: ${text}`);
}

/** Fences: `segment.fenced` lines, and fences needed for another reason than a first use. */
function fences(nodes: readonly Node[]): string[] {
  return nodes.flatMap((node) =>
    node
      .logs()
      .filter(
        (line) =>
          line.includes('"event":"segment.fenced"') ||
          (line.includes('"event":"segment.fence_needed"') && !line.includes('first use of this database')),
      ),
  );
}

export function describeHandBack(dialect: HandBackDialect): void {
  const name = BACKEND_NAME[dialect];
  const stores = backends(dialect);
  // One store and one auditor for the tests that do not fence (each on a fresh tag): a start is
  // 1.5-2.5 s on a loaded 2-core machine, and the file's budget is about 120 s.
  let shared: Promise<{ backend: Backend; auditor: Node } | undefined> | undefined;
  const open = async (t: TestContext) => {
    shared ??= (async () => {
      const backend = await stores.open(t);
      return backend === undefined ? undefined : { backend, auditor: await startAuditor(backend) };
    })();
    return shared;
  };
  after(async () => {
    const opened = await shared?.catch(() => undefined);
    await opened?.auditor.stop('SIGTERM');
    await stores.dropAll();
  });

  // FROND_TEST_BACKENDS=sqlite leaves the servers' files out, as it does their contract suites.
  describe(`hand-back at a clean stop on ${name}, real processes`, { skip: backendSkip(name) }, () => {
    it(`three nodes under load through twenty rolling SIGTERM restarts: every ID from the first to max_id answered once or in the gap report (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      const tag = await addTag(backend, 200);
      const nodes = await Promise.all(
        [0, 1, 2].map((i) => Node.create(`node ${i}`, backend.store, ['--max-step', '2000'])),
      );
      const load = new Load(tag);
      const RESTARTS = 20;
      const started = performance.now();
      try {
        await Promise.all(nodes.map((node) => node.start()));
        // Paced (2 ms after each answer): unpaced, the six clients kept both cores busy and a
        // start took 3.5-4.2 s instead of 2 (twenty restarts in 92 s); paced, the nodes still
        // load a segment every few ms.
        for (const node of nodes) load.add(node, 2, 2);
        await sleep(300);
        for (let r = 0; r < RESTARTS; r++) {
          const node = nodes[r % nodes.length] as Node;
          const exit = await node.restart('SIGTERM');
          assert.equal(exit, 0, `${node.label}: restart ${r + 1} stopped with ${exit}`);
          await sleep(100);
        }
        await sleep(200);
        await load.stop();
        await stopAll(nodes);
      } finally {
        await load.stop();
        await killAll(nodes);
      }
      const seconds = (performance.now() - started) / 1000;
      assertClean(nodes, load);
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account(load.ids, gaps, 1, maxId);
      const back = handedBack(nodes);
      const tables = await assertConsistent(backend, tag, result, gaps);
      figure(
        t,
        `${name} rolling restarts: ${result.answered} IDs answered (${load.requests} requests, ${load.refused} 503, ${load.cut} cut by a stop) from 3 nodes, ${RESTARTS} SIGTERM restarts in ${seconds.toFixed(1)} s; ` +
          `a stop took ${medianMs(nodes.flatMap((n) => n.stopMs))} and a start ${medianMs(nodes.flatMap((n) => n.startMs))} (medians); ${back.ids} IDs handed back in ${back.tags} hand-backs; gaps: ${reasonFigure(gaps)}; ` +
          `span 1..${maxId - 1}: ${result.duplicates} duplicates, ${result.unaccounted} unaccounted; ${tables}`,
      );
      assertAccounted(result, nodes, gaps);
      assert.equal(gaps.filter((gap) => gap.reason === 'crash').length, 0, 'clean stops leave no crash gaps');
      assert.ok(back.ids > 0, 'some stop handed IDs back');
      assert.ok(result.answered > 2_000, `only ${result.answered} IDs answered`);
    });

    it(`one node, five clean restarts: the IDs before and after each restart are consecutive, no gap (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      const tag = await addTag(backend, 100);
      const node = await Node.create('node', backend.store);
      const ids: number[] = [];
      const seams: string[] = [];
      try {
        await node.start();
        ids.push(...(await takeIds(node, tag, 7)));
        for (let r = 0; r < 5; r++) {
          const last = ids[ids.length - 1] as number;
          assert.equal(await node.restart('SIGTERM'), 0);
          const next = await takeIds(node, tag, 7 + r * 4);
          seams.push(`${last}→${next[0]}`);
          assert.equal(next[0], last + 1, `restart ${r + 1}: ${next[0]} after ${last}`);
          ids.push(...next);
        }
        assert.equal(await node.stop('SIGTERM'), 0);
      } finally {
        await node.stop('SIGKILL');
      }
      assertClean([node]);
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account(ids, gaps, 1, maxId);
      const tables = await assertConsistent(backend, tag, result, gaps);
      figure(
        t,
        `${name} one node: ${ids.length} IDs over 6 runs, seams ${seams.join(', ')}; ${handedBack([node]).ids} IDs handed back; ${gaps.length} gaps; ${tables}`,
      );
      assert.deepEqual(gaps, []);
      assert.deepEqual(
        ids,
        Array.from({ length: ids.length }, (_, i) => i + 1),
        'the IDs are 1, 2, 3, … with nothing skipped',
      );
      assert.equal(maxId, ids.length + 1, 'the last stop handed back everything it did not serve');
      assertAccounted(result, [node], gaps);
    });

    it(`a hand-back racing another node's grants: handed back and issued once, or in the gap report (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      // Small segments: node B, paced, takes one about every 100 ms (10 IDs per 20 ms), A's stop
      // takes tens of ms from its last grant to its hand-back: sometimes B's grant comes between
      // (the tail is recorded as a gap), sometimes not (it goes back), and they meet on the row's lock.
      const tag = await addTag(backend, 50);
      const a = await Node.create('node A', backend.store, ['--max-step', '50']);
      const b = await Node.create('node B', backend.store, ['--max-step', '50']);
      const load = new Load(tag);
      const ROUNDS = 6;
      const aIds: number[] = [];
      const outcomes: { returned?: [number, number]; gaps: number; servedAbove: number }[] = [];
      try {
        await b.start();
        load.add(b, 1, 20);
        await sleep(200);
        for (let r = 0; r < ROUNDS; r++) {
          await a.start();
          const taken = await takeIds(a, tag, 3);
          aIds.push(...taken);
          // A's stop lands anywhere among B's grants: 0 to 10 ms after A's last answer.
          await sleep(r * 2);
          assert.equal(await a.stop('SIGTERM'), 0);
          const ran = a.retired[a.retired.length - 1];
          const line = ran?.logs.find((l) => l.includes('"event":"segment.handed_back"'));
          assert.ok(line !== undefined, `round ${r + 1}: A logged its hand-back`);
          const event = JSON.parse(line) as { from?: string; to?: string; gaps: string };
          const returned: [number, number] | undefined =
            event.from === undefined ? undefined : [Number(event.from), Number(event.to)];
          // What A handed back starts above everything A served.
          if (returned !== undefined)
            assert.ok(
              returned[0] > Math.max(...taken),
              `round ${r + 1}: ${returned[0]} ≤ A's ${Math.max(...taken)}`,
            );
          outcomes.push({ ...(returned && { returned }), gaps: Number(event.gaps), servedAbove: 0 });
        }
        await sleep(200);
        await load.stop();
        await stopAll([b]);
      } finally {
        await load.stop();
        await killAll([a, b]);
      }
      assertClean([a, b], load);
      const ids = [...aIds, ...load.ids];
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account(ids, gaps, 1, maxId);
      const tables = await assertConsistent(backend, tag, result, gaps);
      assertAccounted(result, [a, b], gaps);
      // A's gaps, as its log lines said, are in the report under A's name.
      const aGapIds = gaps
        .filter((gap) => gap.node === a.name)
        .reduce((sum, gap) => sum + gap.end - gap.start, 0);
      assert.equal(
        aGapIds,
        outcomes.reduce((sum, o) => sum + o.gaps, 0),
        "A's gaps in the report",
      );
      assert.equal(gaps.filter((gap) => gap.reason === 'crash').length, 0, 'clean stops leave no crash gaps');
      // Every ID A handed back went out again once (account: no duplicate, none unaccounted), or
      // is in a later stop's gap, or is still in the table (at or above max_id: a later stop
      // handed it back again).
      const answered = new Set(ids);
      const inGap = (id: number) => gaps.some((gap) => gap.start <= id && id < gap.end);
      let returnedIds = 0;
      let reissued = 0;
      let laterGap = 0;
      let inTable = 0;
      for (const outcome of outcomes)
        if (outcome.returned !== undefined)
          for (let id = outcome.returned[0]; id < outcome.returned[1]; id++) {
            returnedIds++;
            if (answered.has(id)) reissued++;
            else if (inGap(id)) laterGap++;
            else if (id >= maxId) inTable++;
          }
      assert.equal(reissued + laterGap + inTable, returnedIds, 'every ID handed back is accounted for');
      const backs = outcomes.filter((o) => o.returned !== undefined).length;
      const recorded = outcomes.filter((o) => o.gaps > 0).length;
      figure(
        t,
        `${name} race: ${ROUNDS} stops of A among B's grants (step 50, ${load.requests} requests on B): ${backs} handed back (${returnedIds} IDs: ${reissued} answered again once each, ${laterGap} in a later gap, ${inTable} still in the table), ` +
          `${recorded} recorded gaps (${aGapIds} IDs); gaps: ${reasonFigure(gaps)}; ${result.answered} IDs, ${result.duplicates} duplicates, ${result.unaccounted} unaccounted; ${tables}`,
      );
      assert.ok(
        outcomes.every((o) => o.returned !== undefined || o.gaps > 0),
        'every stop accounted for what A held',
      );
    });

    it(`a SIGKILLed node's held segments are crash gaps at its next start, at most the two it held (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      const STEP = 100;
      const tag = await addTag(backend, STEP);
      const a = await Node.create('node A', backend.store, ['--max-step', String(STEP)]);
      const b = await Node.create('node B', backend.store, ['--max-step', String(STEP)]);
      const load = new Load(tag);
      let grants: [number, number][] = [];
      let crashLine: Record<string, unknown> | undefined;
      let metrics: string[] = [];
      try {
        await Promise.all([a.start(), b.start()]);
        load.add(a, 2);
        load.add(b, 2);
        await sleep(700);
        assert.equal(await a.stop('SIGKILL'), 'SIGKILL');
        const killed = a.retired[a.retired.length - 1];
        grants = (killed?.logs ?? [])
          .filter((line) => line.includes('"event":"segment.loaded"'))
          .map((line) => JSON.parse(line) as { start: string; max: string })
          .map((event): [number, number] => [Number(event.start), Number(event.max)]);
        await sleep(200);
        await a.start();
        // The first grant after the start reports what the killed process held (bounded: 10 s).
        for (let i = 0; i < 200 && crashLine === undefined; i++) {
          crashLine = a.events('segment.crash_gaps')[0];
          if (crashLine === undefined) await sleep(50);
        }
        metrics = await gapMetrics(a);
        await sleep(200);
        await load.stop();
        await stopAll([a, b]);
      } finally {
        await load.stop();
        await killAll([a, b]);
      }
      assertClean([a, b], load);
      assert.ok(crashLine !== undefined, 'the restarted node reported what it held as crash gaps');
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account(load.ids, gaps, 1, maxId);
      const tables = await assertConsistent(backend, tag, result, gaps);
      const crash = gaps.filter((gap) => gap.reason === 'crash');
      const crashIds = crash.reduce((sum, gap) => sum + gap.end - gap.start, 0);
      assert.ok(crash.length > 0, 'crash gaps in the report');
      for (const gap of crash) assert.equal(gap.node, a.name, 'the crash gaps are the killed node’s');
      // At most what a buffer holds: its current segment and the next, each of one step.
      assert.ok(crash.length <= 2, `${crash.length} crash gaps`);
      assert.ok(crashIds <= 2 * STEP, `${crashIds} IDs in crash gaps, more than two segments of ${STEP}`);
      // Each is one of the grants the killed process logged (or, killed between its journal line
      // and its log line, one it had not logged yet: above them all).
      const lastLogged = Math.max(...grants.map(([, end]) => end));
      for (const gap of crash)
        assert.ok(
          grants.some(([start, end]) => gap.start >= start && gap.end <= end) || gap.start >= lastLogged,
          `crash gap [${gap.start}, ${gap.end}) is no grant of the killed process (${JSON.stringify(grants.slice(-3))})`,
        );
      // The restarted process counts what it reported (frond_ids_given_up_total, by reason).
      const counted = metrics.find((line) => line.startsWith('frond_ids_given_up_total{reason="crash"}'));
      assert.equal(Number(counted?.split(' ')[1]), crashIds, `crash IDs in /metrics: ${counted}`);
      const inFlight = unjournaledLoss(result, STEP, lastLogged, [a, b]);
      figure(
        t,
        `${name} SIGKILL: the killed node held ${crashIds} IDs in ${crash.length} crash gaps (its last grants ${JSON.stringify(grants.slice(-2))}), ${result.answeredInCrashGap} of them answered before the kill; ` +
          `${result.answered} IDs, ${result.duplicates} duplicates, ${result.unaccounted} unaccounted${result.unaccounted > 0 ? ` (${result.unaccountedRuns.join(' ')}: a grant in flight at the kill, in no journal)` : ''}; gaps: ${reasonFigure(gaps)}; metrics after the restart: ${metrics.filter((line) => !/ 0$/.test(line)).join(', ') || 'none'}; ${tables}`,
      );
      if (!inFlight) assertAccounted(result, [a, b], gaps);
      else assert.equal(result.duplicates, 0, `${result.duplicates} IDs answered twice`);
    });

    it(`a dense tag: a SIGKILL loses at most one segment of the table's step, a SIGTERM restart goes on at the next ID (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      const STEP = 100;
      const tag = await addTag(backend, STEP);
      // --max-step above the table's step: a dense tag keeps the table's step all the same.
      const a = await Node.create('node A', backend.store, ['--dense-tag', tag, '--max-step', '10000']);
      const load = new Load(tag);
      let grants: [number, number][] = [];
      const seams: string[] = [];
      const ids: number[] = [];
      try {
        await a.start();
        load.add(a, 2, 2);
        await sleep(600);
        assert.equal(await a.stop('SIGKILL'), 'SIGKILL');
        grants = (a.retired[0]?.logs ?? [])
          .filter((line) => line.includes('"event":"segment.loaded"'))
          .map((line) => JSON.parse(line) as { start: string; max: string })
          .map((event): [number, number] => [Number(event.start), Number(event.max)]);
        await a.start();
        await sleep(300);
        await load.stop();
        // Clean restarts, one client: the next ID after each.
        for (let r = 0; r < 2; r++) {
          const before = await takeIds(a, tag, 5);
          assert.equal(await a.restart('SIGTERM'), 0);
          const next = await takeIds(a, tag, 5);
          seams.push(`${before[before.length - 1]}→${next[0]}`);
          assert.equal(next[0], (before[before.length - 1] as number) + 1, `restart ${r + 1}`);
          ids.push(...before, ...next);
        }
        assert.equal(await a.stop('SIGTERM'), 0);
      } finally {
        await load.stop();
        await killAll([a]);
      }
      assertClean([a], load);
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account([...load.ids, ...ids], gaps, 1, maxId);
      const tables = await assertConsistent(backend, tag, result, gaps);
      const crash = gaps.filter((gap) => gap.reason === 'crash');
      const crashIds = crash.reduce((sum, gap) => sum + gap.end - gap.start, 0);
      // Every grant of the dense tag is one table step, and it held one at a time.
      for (const [start, end] of grants) assert.equal(end - start, STEP, `grant [${start}, ${end})`);
      const lastLogged = Math.max(...grants.map(([, end]) => end));
      const inFlight = unjournaledLoss(result, STEP, lastLogged, [a]);
      // What the kill lost: the crash gaps' IDs never answered, and a grant in no journal. The
      // report itself may be larger: it lists the last two grants, as for any tag (an upper bound;
      // the older one was used up before the newer was loaded, so its IDs were answered).
      // Bounded by the segment it held and what its two clients had in flight (a batch of 20
      // each, taken from the buffer and cut with the connection: 119 of 140 seen).
      const lost = crashIds - result.answeredInCrashGap + (inFlight ? result.unaccounted : 0);
      const IN_FLIGHT = 2 * 20;
      assert.ok(
        lost <= STEP + IN_FLIGHT,
        `the kill lost ${lost} IDs, more than one step of ${STEP} and ${IN_FLIGHT} in flight`,
      );
      assert.ok(crash.length <= 2 && crashIds <= 2 * STEP, `${crashIds} IDs in ${crash.length} crash gaps`);
      figure(
        t,
        `${name} dense tag: ${grants.length} grants of ${STEP} before the kill, which lost ${lost} IDs; the report lists ${crashIds} IDs in ${crash.length} crash gaps (${result.answeredInCrashGap} of them answered before the kill); seams after SIGTERM ${seams.join(', ')}; ` +
          `${result.answered} IDs, ${result.duplicates} duplicates, ${result.unaccounted} unaccounted${inFlight ? ' (a grant in flight at the kill, in no journal)' : ''}; gaps: ${reasonFigure(gaps)}; ${tables}`,
      );
      if (!inFlight) assertAccounted(result, [a], gaps);
      else assert.equal(result.duplicates, 0, `${result.duplicates} IDs answered twice`);
    });

    it(`a --workers 2 node through three clean restarts under load: its processes hand back one after another, no fence, every ID accounted (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      const opened = await open(t);
      if (opened === undefined) return;
      const { backend, auditor } = opened;
      const tag = await addTag(backend, 100);
      const node = await Node.create('node', backend.store, ['--workers', '2', '--max-step', '1000']);
      const load = new Load(tag);
      const RESTARTS = 3;
      let epochs: number[] = [];
      try {
        await node.start();
        load.add(node, 4, 2);
        await sleep(300);
        const before = await fenceEpoch(backend);
        for (let r = 0; r < RESTARTS; r++) {
          assert.equal(await node.restart('SIGTERM'), 0, `restart ${r + 1}`);
          await sleep(200);
        }
        await load.stop();
        assert.equal(await node.stop('SIGTERM'), 0);
        epochs = [before, await fenceEpoch(backend)];
      } finally {
        await load.stop();
        await node.stop('SIGKILL');
      }
      assertClean([node], load);
      assert.deepEqual(fences([node]), [], 'no fence after the workers handed back');
      assert.equal(epochs[1], epochs[0], 'the fence epoch did not move');
      const gaps = await listGaps(auditor.url, tag);
      const maxId = Number(await maxIdOf(backend, tag));
      const result = account(load.ids, gaps, 1, maxId);
      const tables = await assertConsistent(backend, tag, result, gaps);
      const back = handedBack([node]);
      figure(
        t,
        `${name} --workers 2: ${result.answered} IDs (${load.requests} requests, ${load.cut} cut by a stop), ${RESTARTS} SIGTERM restarts (a start ${medianMs(node.startMs)}, a stop ${medianMs(node.stopMs)}); ` +
          `${back.ids} IDs handed back in ${back.tags} hand-backs; gaps: ${reasonFigure(gaps)}; fence epoch ${epochs.join(' → ')}; ${result.duplicates} duplicates, ${result.unaccounted} unaccounted; ${tables}`,
      );
      assertAccounted(result, [node], gaps);
      assert.equal(gaps.filter((gap) => gap.reason === 'crash').length, 0, 'clean stops leave no crash gaps');
    });

    it(`a hand-back then a restart does not fence; a restore of the database to a copy taken before grants still fences, no ID twice (${name})`, {
      timeout: BUDGET_MS,
    }, async (t) => {
      // A store of its own: the fence raises every tag on it.
      const backend = await stores.open(t);
      if (backend === undefined) return;
      const tag = await addTag(backend, 100);
      const SKIP = 1_000_000;
      const extra = ['--max-step', '400', '--fence-skip', String(SKIP)];
      const nodes = [
        await Node.create('node A', backend.store, extra),
        await Node.create('node B', backend.store, extra),
      ];
      const phases: number[][] = [];
      const run = async (ms: number): Promise<void> => {
        const load = new Load(tag);
        try {
          for (const node of nodes) load.add(node, 2);
          await sleep(ms);
        } finally {
          await load.stop();
        }
        assert.deepEqual(load.failures.slice(0, 5), []);
        phases.push(load.ids);
      };
      const fenceCount = () => fences(nodes).length;
      let epochs: number[] = [];
      let dump: { maxId: bigint; highWater: bigint } | undefined;
      let handedBackBefore = 0;
      try {
        await Promise.all(nodes.map((node) => node.start()));
        await run(800);
        await stopAll(nodes);
        handedBackBefore = handedBack(nodes).ids;
        const e0 = await fenceEpoch(backend);
        const fencesBefore = fenceCount();
        // Restarted after the hand-backs: no fence (the data dirs' records went down with the table's).
        await Promise.all(nodes.map((node) => node.start()));
        await run(800);
        const e1 = await fenceEpoch(backend);
        assert.equal(fenceCount(), fencesBefore, `a fence after a hand-back: ${fences(nodes).join('\n')}`);
        assert.equal(e1, e0, 'the fence epoch did not move after the hand-back');
        // The copy: the tag's rows as a backup would have them now.
        dump = {
          maxId: (await maxIdOf(backend, tag)) as bigint,
          highWater: (await highWaterOf(backend, tag)) as bigint,
        };
        await run(800);
        await stopAll(nodes);
        const afterCopy = Math.max(...(phases[2] as number[]));
        assert.ok(afterCopy >= Number(dump.maxId), 'the nodes were granted IDs after the copy');
        // The database restored to the copy (leaf_alloc with frond's record: the whole database).
        await backend.sql('UPDATE leaf_alloc SET max_id = ? WHERE biz_tag = ?', [dump.maxId.toString(), tag]);
        await backend.sql('UPDATE frond_high_water SET max_id = ? WHERE biz_tag = ?', [
          dump.highWater.toString(),
          tag,
        ]);
        await Promise.all(nodes.map((node) => node.start()));
        await run(800);
        await stopAll(nodes);
        const e2 = await fenceEpoch(backend);
        epochs = [e0, e1, e2];
        assert.ok(e2 > e1, `the restore was fenced (epoch ${e1} → ${e2})`);
        assert.ok(fenceCount() > fencesBefore, 'a node logged the fence');
      } finally {
        await killAll(nodes);
      }
      assertClean(nodes);
      const all = phases.flat();
      const duplicates = all.length - new Set(all).size;
      assert.equal(duplicates, 0, `${duplicates} IDs answered twice`);
      const before = Math.max(...phases.slice(0, 3).flat());
      const restored = phases[3] as number[];
      assert.ok(restored.length > 0, 'the nodes served after the restore');
      assert.ok(
        Math.min(...restored) > before,
        'after the restore, IDs go on above every ID answered before',
      );
      const gaps = await gapReport(backend, tag);
      const maxId = await maxIdOf(backend, tag);
      const highWater = await highWaterOf(backend, tag);
      assert.ok(maxId !== undefined && all.every((id) => id < Number(maxId)), 'leaf_alloc above every ID');
      assert.ok(highWater !== undefined && highWater <= maxId, 'frond_high_water at or below max_id');
      await assertGapTable(backend, tag, gaps);
      const answered = new Set(all);
      const inGap = gaps
        .filter((gap) => gap.reason !== 'crash' && gap.reason !== 'fence')
        .reduce((sum, gap) => {
          let n = 0;
          for (let id = gap.start; id < gap.end; id++) if (answered.has(id)) n++;
          return sum + n;
        }, 0);
      assert.equal(inGap, 0, `${inGap} answered IDs in hand-back gaps`);
      figure(
        t,
        `${name} hand-back then restore: fence epochs ${epochs.join(' → ')} (none after ${handedBackBefore} IDs handed back, one after the restore to max_id ${dump?.maxId}); ` +
          `${all.length} IDs, ${duplicates} duplicates; first after the restore ${Math.min(...restored)} (highest before ${before}); gaps: ${reasonFigure(gaps)}; ` +
          `leaf_alloc.max_id ${maxId}, frond_high_water ${highWater}`,
      );
    });
  });
}
