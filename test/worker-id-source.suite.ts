import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { WorkerIdSource } from '../src/core/worker-id-source.js';

/**
 * The contract every WorkerIdSource passes. `open(t, identity)` gives a source for one node
 * identity (a data dir, an ip:port, a lease name), fresh per test; opening the same identity again
 * plays a restart of that node.
 */
export function describeWorkerIdSource(
  name: string,
  open: (t: TestContext, identity: string) => Promise<WorkerIdSource | undefined>,
  newIdentity: () => string,
): void {
  describe(`WorkerIdSource contract: ${name}`, () => {
    it('hands out a worker ID from 0 to 1023 and no last timestamp the first time', async (t) => {
      const source = await open(t, newIdentity());
      if (source === undefined) return;
      const lease = await source.acquire();
      assert.ok(Number.isInteger(lease.workerId) && lease.workerId >= 0 && lease.workerId <= 1023);
      assert.equal(lease.lastTimestamp, 0);
      await source.release(0);
    });

    it('gives a restarted node the same worker ID and the last timestamp it recorded', async (t) => {
      const identity = newIdentity();
      const first = await open(t, identity);
      if (first === undefined) return;
      const lease = await first.acquire();
      const recorded = Date.now() + 2000;
      await first.record(recorded);
      // A crash: no release. The restart must see the recorded time.
      const second = await open(t, identity);
      assert.ok(second);
      assert.deepEqual(await second.acquire(), { workerId: lease.workerId, lastTimestamp: recorded });
      await second.release(recorded - 1000);
      const third = await open(t, identity);
      assert.ok(third);
      assert.deepEqual(await third.acquire(), { workerId: lease.workerId, lastTimestamp: recorded - 1000 });
      await third.release(recorded - 1000);
    });
  });
}
