import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { type FrondProcess, startFrond } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';
import { LEASE_BACKENDS } from './support/lease-coordinators.js';
import {
  assertUnique,
  maxOf,
  minOf,
  snowflakeStatus,
  takeIds,
  traffic,
  workerIdOf,
} from './support/snowflake-traffic.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 25 ms for at most `ms`; answers how long it took, or undefined. */
async function until(check: () => Promise<boolean>, ms: number): Promise<number | undefined> {
  const started = Date.now();
  while (Date.now() - started < ms) {
    if (await check()) return Date.now() - started;
    await sleep(25);
  }
  return undefined;
}

for (const [backend, coordinatorOf] of LEASE_BACKENDS) {
  describe(`lease mode on ${backend} (real processes)`, () => {
    it('hands a freed worker ID to a new node only after its holder lease expired and its recorded time passed', async (t) => {
      const coordinator = await coordinatorOf(t);
      if (coordinator === undefined) return;
      await coordinator.holdAllButZero();
      const nodes: FrondProcess[] = [];
      t.after(() => Promise.all(nodes.map((node) => node.stop('SIGKILL'))));
      const a = await startFrond(coordinator.args(7600));
      nodes.push(a);
      assert.equal(workerIdOf(a), 0);
      const load = traffic(a);
      await sleep(700);
      await a.stop('SIGKILL');
      const killedAt = Date.now();
      await load.stop();
      const recorded = await coordinator.recorded(0);
      assert.ok(recorded > Math.max(...load.ids.map((id) => decomposeSnowflake(id).timestamp)));

      // B starts at once: no worker ID is free until A's claim expires, then it waits for A's record.
      let listening = false;
      const b = startFrond(coordinator.args(7601)).then((node) => {
        listening = true;
        return node;
      });
      await until(async () => listening || !(await coordinator.claimed(0)), 10_000);
      const freedMs = listening ? undefined : Date.now() - killedAt;
      const started = await b;
      nodes.push(started);
      const readyAt = Date.now();
      assert.equal(workerIdOf(started), 0);
      assert.ok(readyAt > recorded, `B listened ${recorded - readyAt} ms before A's recorded time`);
      const after = await takeIds(started, 200);
      assert.ok(decomposeSnowflake(minOf(after)).timestamp > recorded, "every ID above A's recorded time");
      assert.ok(minOf(after) > maxOf(load.ids));
      assertUnique([...load.ids, ...after]);
      t.diagnostic(
        `${backend}: A SIGKILLed after ${load.ids.length} IDs with its record ${recorded - killedAt} ms ahead; claim freed ${freedMs ?? '?'} ms after the kill; B served worker 0 ${readyAt - killedAt} ms after the kill, above A's record; 0 duplicates`,
      );
    });

    it('answers 503 once cut off longer than its lease, and serves again once it holds a worker ID', async (t) => {
      const coordinator = await coordinatorOf(t);
      if (coordinator === undefined) return;
      await coordinator.holdAllButZero();
      const nodes: FrondProcess[] = [];
      t.after(() => {
        for (const node of nodes) node.child.kill('SIGCONT');
        return Promise.all(nodes.map((node) => node.stop('SIGKILL')));
      });
      const a = await startFrond(coordinator.args(7700));
      nodes.push(a);
      const beforeA = await takeIds(a, 200);

      // Frozen past its lease: the coordinator expires it and B takes worker 0.
      a.child.kill('SIGSTOP');
      const expiredMs = await until(async () => !(await coordinator.claimed(0)), 10_000);
      assert.ok(expiredMs !== undefined, "A's claim expired");
      const b = await startFrond(coordinator.args(7701));
      nodes.push(b);
      assert.equal(workerIdOf(b), 0);
      const idsB = await takeIds(b, 200);

      // A wakes up: its own deadline has passed, so it refuses at once, though its client may not know yet.
      a.child.kill('SIGCONT');
      const woke = await snowflakeStatus(a);
      assert.deepEqual(woke, { status: 503, code: 'WORKER_ID_UNAVAILABLE' });
      assert.equal((await httpGet(`${a.url}/readyz`)).status, 503);
      await sleep(1000);
      assert.deepEqual(
        await snowflakeStatus(a),
        { status: 503, code: 'WORKER_ID_UNAVAILABLE' },
        'B still holds it',
      );

      // B leaves: A claims worker 0 again and serves above everything B issued.
      assert.equal(await b.stop('SIGTERM'), 0);
      const backMs = await until(async () => (await snowflakeStatus(a)).status === 200, 10_000);
      assert.ok(backMs !== undefined, 'A serves again');
      const afterA = await takeIds(a, 200);
      assert.equal(decomposeSnowflake(minOf(afterA)).workerId, 0);
      assert.ok(minOf(afterA) > maxOf(idsB), 'above every ID B issued with the same worker ID');
      assertUnique([...beforeA, ...idsB, ...afterA]);
      const lost = a.logs.some((line) => line.includes('worker.lease_lost'));
      const regained = a.logs.some((line) => line.includes('snowflake.worker_id_regained'));
      assert.ok(lost && regained, 'A logged the loss and the regained worker ID');
      t.diagnostic(
        `${backend}: A frozen; its claim expired ${expiredMs} ms after SIGSTOP; A answered 503 on waking while B held worker 0; A served again ${backMs} ms after B left; 0 duplicates`,
      );
    });
  });
}
