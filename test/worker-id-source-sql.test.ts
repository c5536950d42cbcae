import assert from 'node:assert/strict';
import { after, describe, it, type TestContext } from 'node:test';
import { systemClock } from '../src/core/clock.js';
import { isFrondError } from '../src/core/errors.js';
import { silentLogger } from '../src/core/logger.js';
import { LeaseWorkerIdSource } from '../src/worker-ids/lease/lease-worker-id-source.js';
import { parseLeaseDatabase, SqlLeaseBackend } from '../src/worker-ids/sql/sql-lease-backend.js';
import { randomName } from './support/coordinators.js';
import { leaseRows } from './support/sql-leases.js';
import {
  SERVICE_NAME,
  type ServerDialect,
  type TestDatabase,
  testDatabase,
} from './support/test-database.js';
import { describeWorkerIdSource } from './worker-id-source.suite.js';

const names = new WeakMap<TestContext, string>();
const nameOf = (t: TestContext) => {
  const name = names.get(t) ?? randomName();
  names.set(t, name);
  return name;
};

/** A lease source on `database` as `frond serve --worker-lease-store URL` makes one, with a 2 s TTL. */
function sqlSource(database: TestDatabase, name: string, identity: string, ttlMs = 2000) {
  const parsed = parseLeaseDatabase(database.url, '--worker-lease-store');
  assert.ok(parsed);
  return new LeaseWorkerIdSource(
    new SqlLeaseBackend({ database: parsed, name, identity, ttlMs, timeoutMs: 2000 }),
    {
      clock: systemClock,
      monotonic: () => performance.now(),
      logger: silentLogger,
      timeoutMs: 2000,
      acquireWaitMs: 1000,
      retryMs: 200,
    },
  );
}

for (const dialect of ['postgres', 'mysql'] as ServerDialect[]) {
  const server = testDatabase(dialect);
  after(() => server.drop());
  let nextPort = 22_000;

  describeWorkerIdSource(
    `${SERVICE_NAME[dialect]}, lease mode`,
    async (t, identity) => {
      const database = await server.open(t);
      if (database === undefined) return undefined;
      const source = sqlSource(database, nameOf(t), identity);
      t.after(() => source.release(0).catch(() => {}));
      return source;
    },
    () => `127.0.0.1:${nextPort++}`,
    {
      kind: 'lease',
      distinct: true,
      lease: {
        async holdAllBut(t, keep) {
          const database = (await server.open(t)) as TestDatabase;
          await leaseRows(database).holdAllBut(nameOf(t), [keep]);
        },
        async dropClaim(t, workerId) {
          const database = (await server.open(t)) as TestDatabase;
          await leaseRows(database).expire(nameOf(t), workerId);
        },
      },
    },
  );

  describe(`${SERVICE_NAME[dialect]} leases: the database's clock and the holder decide`, () => {
    it('writes expires_at from the database clock, extends it with each heartbeat, and frees the row on release', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      const name = nameOf(t);
      const source = sqlSource(database, name, '127.0.0.1:1', 1500);
      t.after(() => source.release(0).catch(() => {}));
      const lease = await source.acquire();
      const rows = leaseRows(database);
      const read = async () =>
        (
          await database.sql(
            dialect === 'postgres'
              ? `SELECT holder, EXTRACT(EPOCH FROM (expires_at - statement_timestamp())) * 1000 AS left_ms FROM frond_worker_lease WHERE name = $1 AND worker_id = $2`
              : `SELECT holder, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), expires_at) / 1000 AS left_ms FROM frond_worker_lease WHERE name = ? AND worker_id = ?`,
            [name, lease.workerId],
          )
        )[0] as { holder: string; left_ms: string };
      const first = await read();
      assert.match(first.holder, /^[0-9a-f]{16} 127\.0\.0\.1:1$/);
      assert.ok(Number(first.left_ms) > 0 && Number(first.left_ms) <= 1500, `${first.left_ms} ms left`);
      // Heartbeats every 500 ms: after 2 s (past the first TTL) the claim is still live.
      await new Promise((resolve) => setTimeout(resolve, 2000));
      assert.equal(source.valid(), true);
      assert.equal(await rows.live(name, lease.workerId), true);
      assert.equal((await read()).holder, first.holder);
      await source.record(Date.now() + 2000);
      await source.release(0);
      assert.equal(await rows.live(name, lease.workerId), false, 'released: free at once');
      assert.ok((await rows.recorded(name, lease.workerId)) > Date.now(), 'the record stays');
    });

    it('refuses a record once another session holds the worker ID, leaving the record as the new holder has it', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      const name = nameOf(t);
      const rows = leaseRows(database);
      await rows.holdAllBut(name, [7]);
      const a = sqlSource(database, name, '127.0.0.1:1');
      t.after(() => a.release(0).catch(() => {}));
      assert.equal((await a.acquire()).workerId, 7);
      const recorded = Date.now() + 2000;
      await a.record(recorded);
      // A's claim lapses (as if it had been frozen) and B takes worker 7.
      await rows.expire(name, 7);
      const b = sqlSource(database, name, '127.0.0.1:2');
      t.after(() => b.release(0).catch(() => {}));
      assert.deepEqual(await b.acquire(), { workerId: 7, lastTimestamp: recorded });
      await assert.rejects(a.record(recorded + 60_000), (error) =>
        isFrondError(error, 'WORKER_ID_UNAVAILABLE'),
      );
      assert.equal(await rows.recorded(name, 7), recorded, "A's late record did not land");
      assert.equal(a.valid(), false, 'A knows it lost worker 7');
      assert.equal(b.valid(), true);
    });

    it('says in one line that every worker ID is held once the acquire wait is over', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      const name = nameOf(t);
      await leaseRows(database).holdAllBut(name, []);
      const source = sqlSource(database, name, '127.0.0.1:1');
      t.after(() => source.release(0).catch(() => {}));
      const started = Date.now();
      await assert.rejects(
        source.acquire(),
        (error) =>
          isFrondError(error, 'WORKER_ID_UNAVAILABLE') &&
          /^all 1024 worker IDs are held by live leases in \S+ frond_worker_lease --name \S+$/.test(
            error.message,
          ),
      );
      assert.ok(Date.now() - started >= 800, 'it waited');
    });
  });
}
