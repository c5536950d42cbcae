// A node that serves daily order numbers, stopped hard (SIGKILL) or cleanly (SIGTERM) and started
// again, on the same day or with its clock on the next: the same day goes on above every number it
// served (its segment was lost with the process, never reissued), the next day starts again at
// 000001. A restart on the next day must not carry the old day's sequence on (CosId's segment-chain
// generator does: its day resets only in a running process), nor may a restart the same day reset.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import {
  addFormattedTag,
  assertUniqueNumbers,
  type ClockedNode,
  clockAt,
  ms,
  type NodeClock,
  type Served,
  take,
} from './support/formatted-tags.js';
import { runFrond, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { testDatabase } from './support/test-database.js';

const FORMAT = '{yyyy}{MM}{dd}{seq:6}';
const ZONE = 'Asia/Shanghai';
const SHAPE = /^([0-9]{8})([0-9]{6})$/;
const dayOf = (id: string) => SHAPE.exec(id)?.[1] ?? `not a number of the format: ${id}`;
const seqOf = (id: string) => BigInt(SHAPE.exec(id)?.[2] ?? '-1');

const postgres = testDatabase('postgres');

/** Noon in Shanghai of 2027-02-27, 28, then 2027-03-01 (a month's end between them). */
const DAYS = [
  { day: '20270227', noon: ms('2027-02-27T12:00:00+08:00') },
  { day: '20270228', noon: ms('2027-02-28T12:00:00+08:00') },
  { day: '20270301', noon: ms('2027-03-01T12:00:00+08:00') },
] as const;

async function restarts(t: TestContext, store: string): Promise<void> {
  const clock: NodeClock | undefined = clockAt(t, DAYS[0].noon);
  if (clock === undefined) return;
  const dataDir = tempDir('frond-node-');
  const args = ['--port', '0', '--data-dir', dataDir, '--no-snowflake', '--store', store];
  let node: ClockedNode = { process: await startFrond(args, { env: clock.env }), clock };
  t.after(() => node.process.stop('SIGKILL'));
  const tag = randomTag('orders');
  // A step of 100 and batches of 30: each stop loses the rest of a segment in memory.
  await addFormattedTag(node.process.url, tag, FORMAT, ZONE, 100);
  const served: Served[] = [];
  const serve = async (day: string, rounds: number) => {
    const from = served.length;
    for (let r = 0; r < rounds; r++) {
      const answer = await take(node, 0, tag, r % 3 === 0 ? 1 : 30, served);
      assert.equal(answer.status, 200, answer.body);
    }
    const ids = served.slice(from).map((one) => one.id);
    for (const id of ids) assert.equal(dayOf(id), day, `${id} on ${day}`);
    const seqs = ids.map(seqOf);
    for (let i = 1; i < seqs.length; i++) assert.ok((seqs[i] as bigint) > (seqs[i - 1] as bigint), ids[i]);
    return seqs;
  };
  const restart = async (signal: NodeJS.Signals, at: number) => {
    const code = await node.process.stop(signal);
    assert.equal(code, signal === 'SIGKILL' ? 'SIGKILL' : 0, `frond serve ended with ${code}`);
    clock.at(at);
    node = { process: await startFrond(args, { env: clock.env }), clock };
  };

  // Day 1: from 000001; killed, then the same day, an hour later: above all it served.
  const day1 = await serve(DAYS[0].day, 12);
  assert.equal(day1[0], 1n, 'the first number of the day is 000001');
  await restart('SIGKILL', DAYS[0].noon + 3_600_000);
  const day1After = await serve(DAYS[0].day, 12);
  assert.ok((day1After[0] as bigint) > (day1.at(-1) as bigint), `${day1After[0]} after ${day1.at(-1)}`);
  // Stopped cleanly, started the next day: 000001 of that day, not the old day's sequence.
  await restart('SIGTERM', DAYS[1].noon);
  const day2 = await serve(DAYS[1].day, 12);
  assert.equal(day2[0], 1n, 'a restart on the next day starts at 000001');
  // The same day again after a clean stop: above; then killed and started on the third day.
  await restart('SIGTERM', DAYS[1].noon + 60_000);
  const day2After = await serve(DAYS[1].day, 12);
  assert.ok((day2After[0] as bigint) > (day2.at(-1) as bigint), `${day2After[0]} after ${day2.at(-1)}`);
  await restart('SIGKILL', DAYS[2].noon);
  const day3 = await serve(DAYS[2].day, 12);
  assert.equal(day3[0], 1n, 'a restart after a SIGKILL on the next day starts at 000001');
  assertUniqueNumbers(served);
  t.diagnostic(`${served.length} numbers over 5 starts`);
}

describe('daily order numbers across SIGKILL, SIGTERM and restarts on the same or the next day (libfaketime)', () => {
  after(() => postgres.drop());

  it('SQLite', async (t) => {
    const store = `sqlite:${join(tempDir('frond-formats-'), 'orders.db')}`;
    const init = await runFrond(['db', 'init', '--store', store]);
    assert.equal(init.code, 0, init.stderr);
    await restarts(t, store);
  });

  it('PostgreSQL', async (t) => {
    const db = await postgres.open(t);
    if (db === undefined) return;
    await restarts(t, db.url);
  });
});
