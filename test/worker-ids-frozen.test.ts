import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { describe, it } from 'node:test';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { type FrondProcess, startFrond } from './support/frond-process.js';
import { type HttpAnswer, httpGet } from './support/http-get.js';
import { LEASE_BACKENDS } from './support/lease-coordinators.js';
import { assertUnique, maxOf, takeIds, workerIdOf } from './support/snowflake-traffic.js';

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

/** The IDs of an answer of either route: `{"ids":[…]}` on /v1, a bare number on Leaf's. */
function idsIn(answer: HttpAnswer): bigint[] {
  if (answer.status !== 200) return [];
  if (answer.body.startsWith('{')) return (JSON.parse(answer.body) as { ids: string[] }).ids.map(BigInt);
  return [BigInt(answer.body)];
}

/** What a refusal says: frond's error code on /v1, Leaf's Result on Leaf's route. */
function refusal(answer: HttpAnswer): string {
  if (answer.status === 200) return 'served';
  const body = JSON.parse(answer.body) as { error?: { code?: string }; message?: string };
  return `${answer.status} ${body.error?.code ?? body.message}`;
}

/** The worker ID frozen node A holds, and the one the test frees for it while it is frozen. */
const W = 5;
const SPARE = 9;

for (const [backend, coordinatorOf] of LEASE_BACKENDS) {
  describe(`a frozen node on ${backend} leases`, () => {
    it('never hands out an ID with the worker ID it lost while frozen, from its first request after SIGCONT', async (t) => {
      const coordinator = await coordinatorOf(t);
      if (coordinator === undefined) return;
      // W is the only free worker ID: A takes it, and once A's lease lapses, B must take the same.
      await coordinator.holdAllBut([W]);
      const nodes: FrondProcess[] = [];
      t.after(() => {
        for (const node of nodes) node.child.kill('SIGCONT');
        return Promise.all(nodes.map((node) => node.stop('SIGKILL')));
      });
      const a = await startFrond(coordinator.args(7800));
      nodes.push(a);
      assert.equal(workerIdOf(a), W);
      const beforeA = await takeIds(a, 500);
      // Connections open before the freeze, so requests sent during it wait in A's sockets and are
      // read in A's very first turn after SIGCONT, before any of its timers has run.
      const agent = new Agent({ keepAlive: true, maxSockets: 16 });
      t.after(() => agent.destroy());
      await Promise.all(
        Array.from({ length: 16 }, () => httpGet(`${a.url}/v1/snowflake?count=1`, { agent })),
      );

      a.child.kill('SIGSTOP');
      const stoppedAt = Date.now();
      const recordedByA = await coordinator.recorded(W);
      const expiredMs = await until(async () => !(await coordinator.claimed(W)), 15_000);
      assert.ok(expiredMs !== undefined, "A's claim expired while it was frozen");
      const b = await startFrond(coordinator.args(7801));
      nodes.push(b);
      const bListening = Date.now();
      assert.equal(workerIdOf(b), W, 'B took the worker ID A lost');
      const idsB = await takeIds(b, 500);
      assert.ok(
        idsB.every((id) => decomposeSnowflake(id).timestamp > recordedByA),
        "B's IDs are above A's record",
      );
      // Another worker ID for A to find once it wakes.
      await coordinator.free(SPARE);
      // Requests that reach A while it is frozen: half on /v1, half on Leaf's route.
      const queued = Array.from({ length: 16 }, (_, i) =>
        httpGet(i % 2 === 0 ? `${a.url}/v1/snowflake?count=10` : `${a.url}/api/snowflake/get/k`, {
          agent,
          timeoutMs: 10_000,
        }),
      );
      await sleep(200);
      const frozenMs = Date.now() - stoppedAt;

      a.child.kill('SIGCONT');
      const wokeAt = Date.now();
      const answers: HttpAnswer[] = [];
      const fromA: bigint[] = [];
      // A tight loop at A: until it has served for 1 s with another worker ID, at most 8 s or 4,000 requests.
      let servedSince: number | undefined;
      for (let i = 0; i < 4000 && Date.now() - wokeAt < 8000; i++) {
        const answer = await httpGet(
          i % 2 === 0 ? `${a.url}/v1/snowflake?count=10` : `${a.url}/api/snowflake/get/k`,
          {
            agent,
            timeoutMs: 5000,
          },
        );
        answers.push(answer);
        fromA.push(...idsIn(answer));
        if (answer.status === 200) servedSince ??= Date.now();
        if (servedSince !== undefined && Date.now() - servedSince > 1000) break;
      }
      const queuedAnswers = await Promise.all(queued);
      fromA.push(...queuedAnswers.flatMap(idsIn));

      const withW = fromA.filter((id) => decomposeSnowflake(id).workerId === W);
      const afterB = withW.filter((id) => decomposeSnowflake(id).timestamp > bListening - 5000);
      assert.deepEqual(
        withW.map(String),
        [],
        `A handed out ${withW.length} IDs with worker ${W} after SIGCONT (${afterB.length} near or after B's start)`,
      );
      // Read in A's first turn after SIGCONT, before its lease timer ran: refused, by its own clock.
      assert.deepEqual(
        queuedAnswers.map(refusal),
        queuedAnswers.map((_, i) =>
          i % 2 === 0 ? '503 WORKER_ID_UNAVAILABLE' : '500 Result{id=-1, status=EXCEPTION}',
        ),
        "every request that reached A while frozen is refused (Leaf route: Leaf's error)",
      );
      assert.equal(
        refusal(answers[0] as HttpAnswer),
        '503 WORKER_ID_UNAVAILABLE',
        'the first request after SIGCONT',
      );
      const refused = answers.findIndex((answer) => answer.status === 200);
      assert.ok(refused > 0, 'A refused before it served again');
      assert.ok(servedSince !== undefined, 'A served again once it held another worker ID');
      assert.ok(
        answers
          .slice(0, refused)
          .every((answer) => /^(503 WORKER_ID_UNAVAILABLE|500 Result)/.test(refusal(answer))),
        'refused until it held a worker ID again',
      );
      const workers = new Set(fromA.map((id) => decomposeSnowflake(id).workerId));
      assert.deepEqual([...workers], [SPARE], 'A serves with the spare worker ID');
      assert.ok(
        fromA.every((id) => id > maxOf(beforeA)),
        "A's IDs keep increasing",
      );
      assertUnique([...beforeA, ...idsB, ...fromA, ...(await takeIds(b, 200))]);
      t.diagnostic(
        `${backend}: A frozen ${frozenMs} ms (claim lapsed after ${expiredMs} ms); B served worker ${W} ${bListening - stoppedAt} ms after SIGSTOP; after SIGCONT A refused ${refused} requests (the 16 queued ones too) and served ${fromA.length} IDs with worker ${SPARE} from ${(servedSince ?? 0) - wokeAt} ms on, none with worker ${W}`,
      );
    });
  });
}
