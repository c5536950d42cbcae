// Daily order numbers through midnight, as users run them: real `frond serve` processes on one
// database, their wall clocks put 10 s before midnight in Asia/Shanghai by libfaketime (on New
// Year's Eve, so the year and the month change too), numbers taken from all of them in a loop until
// past midnight. One node's clock is 5 s behind the others': it keeps numbering the old day after
// they moved on, and nothing repeats.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import {
  addFormattedTag,
  assertIncreasingPerNode,
  assertPeriodByClock,
  assertUniqueNumbers,
  type ClockedNode,
  clockAt,
  ms,
  type NodeClock,
  type Served,
  sleep,
  take,
} from './support/formatted-tags.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { testDatabase } from './support/test-database.js';

const FORMAT = '{yyyy}{MM}{dd}{seq:6}';
const ZONE = 'Asia/Shanghai';
/** Midnight of New Year's Day in Shanghai (16:00 UTC the day before). */
const MIDNIGHT = ms('2027-01-01T00:00:00+08:00');
const SHAPE = /^(20261231|20270101)([0-9]{6})$/;
const dayOf = (id: string) => SHAPE.exec(id)?.[1] ?? `not a number of the format: ${id}`;
const seqOf = (id: string) => BigInt(SHAPE.exec(id)?.[2] ?? '-1');

/** How long the loop may run whatever the clocks say, and how many requests a node may make. */
const LOOP_CEILING_MS = 40_000;
const MAX_REQUESTS = 10_000;

const postgres = testDatabase('postgres');
const mariadb = testDatabase('mysql');

/** A `--store` for the test: a fresh SQLite file, or the dialect's test database. */
async function storeFor(t: TestContext, kind: 'sqlite' | 'postgres' | 'mysql'): Promise<string | undefined> {
  if (kind === 'sqlite') {
    const store = `sqlite:${join(tempDir('frond-formats-'), 'orders.db')}`;
    const init = await runFrond(['db', 'init', '--store', store]);
    assert.equal(init.code, 0, init.stderr);
    return store;
  }
  const db = await (kind === 'postgres' ? postgres : mariadb).open(t);
  return db?.url;
}

async function throughMidnight(t: TestContext, kind: 'sqlite' | 'postgres' | 'mysql'): Promise<void> {
  const store = await storeFor(t, kind);
  if (store === undefined) return;
  // A and B on one clock, C 5 s behind them; started a minute before midnight.
  const same = clockAt(t, MIDNIGHT - 60_000);
  const behind = clockAt(t, MIDNIGHT - 65_000);
  if (same === undefined || behind === undefined) return;
  const clocks = [same, same, behind];
  const nodes: ClockedNode[] = [];
  t.after(() => Promise.all(nodes.map((node) => node.process.stop('SIGKILL'))));
  const args = () => [
    '--port',
    '0',
    '--data-dir',
    tempDir('frond-node-'),
    '--no-snowflake',
    '--store',
    store,
  ];
  const started = await Promise.allSettled(clocks.map((clock) => startFrond(args(), { env: clock.env })));
  started.forEach((start, i) => {
    if (start.status === 'fulfilled') nodes.push({ process: start.value, clock: clocks[i] as NodeClock });
  });
  for (const start of started) if (start.status === 'rejected') throw start.reason;
  const tag = randomTag('orders');
  // A step of 50: many grants of each day's counter, from three nodes, on both sides of midnight.
  await addFormattedTag((nodes[0] as ClockedNode).process.url, tag, FORMAT, ZONE, 50);

  same.at(MIDNIGHT - 10_000);
  behind.at(MIDNIGHT - 15_000);
  const served: Served[] = [];
  const statuses = new Map<string, number>();
  const startedAt = Date.now();
  // Each node until 2 s past midnight on its own clock: C's ends 5 s after the others'.
  const load = async (index: number) => {
    const node = nodes[index] as ClockedNode;
    for (let r = 0; r < MAX_REQUESTS && Date.now() - startedAt < LOOP_CEILING_MS; r++) {
      if (node.clock.now() > MIDNIGHT + 2_000) return;
      const answer = await take(node, index, tag, r % 2 === 0 ? 1 : 25, served);
      if (answer.status !== 200) {
        const key = `${answer.status} ${answer.body.slice(0, 160)}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }
      // 2 ms apart: thousands of numbers per node, and the CPU left to the nodes.
      await sleep(2);
    }
  };
  await Promise.all(nodes.map((_, index) => load(index)));
  t.diagnostic(`${kind}: ${served.length} numbers in ${Date.now() - startedAt} ms`);

  assert.deepEqual([...statuses], [], 'every request was answered with numbers');
  assert.ok(
    served.every((one) => SHAPE.test(one.id)),
    served.find((one) => !SHAPE.test(one.id))?.id,
  );
  assertUniqueNumbers(served);
  assertPeriodByClock(served, MIDNIGHT, dayOf, '20261231', '20270101');
  assertIncreasingPerNode(served, dayOf, seqOf);
  for (const day of ['20261231', '20270101']) {
    const seqs = served.filter((one) => dayOf(one.id) === day).map((one) => seqOf(one.id));
    assert.ok(seqs.length > 0, `numbers of ${day}`);
    assert.equal(new Set(seqs).size, seqs.length, `a seq of ${day} twice`);
    // Every day starts again at 000001 (and no seq is 0).
    assert.ok(seqs.includes(1n) && !seqs.includes(0n), `the first number of ${day}`);
    for (const index of [0, 1, 2])
      assert.ok(
        served.some((one) => one.node === index && dayOf(one.id) === day),
        `node ${index} served numbers of ${day}`,
      );
  }
  // The days' counters are rows of their own, hidden from the tag list: only the tag shows.
  const listed = (await (await fetch(`${(nodes[0] as ClockedNode).process.url}/v1/tags`)).json()) as {
    tags: { tag: string }[];
  };
  assert.deepEqual(
    listed.tags.filter((row) => row.tag.startsWith(tag)).map((row) => row.tag),
    [tag],
  );
  // C, 5 s behind, numbered the old day after A or B had numbered the new one.
  const firstNew = served.find((one) => one.node !== 2 && dayOf(one.id) === '20270101');
  const lateOld = served.filter(
    (one) => one.node === 2 && dayOf(one.id) === '20261231' && one.arrival > (firstNew?.arrival ?? Infinity),
  );
  assert.ok(lateOld.length > 0, 'the node behind kept numbering the old day after the others moved on');
}

describe('daily order numbers through midnight in Asia/Shanghai, three nodes on one database (libfaketime)', () => {
  after(() => Promise.all([postgres.drop(), mariadb.drop()]));
  for (const kind of ['sqlite', 'postgres', 'mysql'] as const)
    it(`${kind === 'mysql' ? 'MariaDB' : kind === 'postgres' ? 'PostgreSQL' : 'SQLite'}: unique, well-formed, each number in its node's day, restarting at 000001`, (t) =>
      throughMidnight(t, kind));
});
