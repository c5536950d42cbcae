import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import type { WorkerIdSource, WorkerLease } from '../src/core/worker-id-source.js';
import { backendSkip } from './support/backend-filter.js';

/** What a lease-mode backend's test file offers the suite, acting as other nodes would. */
export interface LeaseHarness {
  /** Claims every worker ID but `keep` until the test ends, as 1023 other live nodes would. */
  holdAllBut(t: TestContext, keep: number): Promise<void>;
  /** Deletes `workerId`'s claim behind its holder's back, as an expiry would. */
  dropClaim(t: TestContext, workerId: number): Promise<void>;
}

export interface WorkerIdSourceTraits {
  /**
   * `identity`: a node keeps its worker ID across restarts (file, ZooKeeper in Leaf's layout).
   * `lease`: worker IDs are leased while a node runs and handed to others afterwards.
   */
  kind: 'identity' | 'lease';
  /** Distinct identities always get distinct worker IDs (a coordinator; the file source draws at random). */
  distinct: boolean;
  lease?: LeaseHarness;
}

/**
 * Has the harness claim every worker ID but a random one, before the source under test claims:
 * 1023 claims take seconds on a loaded machine, and made while the source holds a 2 s lease they
 * starved its heartbeat (a CI run lost the lease that way). Returns the one left free.
 */
async function holdAllButOne(t: TestContext, lease: LeaseHarness): Promise<number> {
  const keep = Math.floor(Math.random() * 1024);
  await lease.holdAllBut(t, keep);
  return keep;
}

/** Polls `check` every 20 ms for at most `ms`. */
async function eventually(check: () => boolean, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return check();
}

/**
 * The contract every WorkerIdSource passes. `open(t, identity)` gives a source for one node
 * identity (a data dir, an ip:port, a lease name), fresh per test; opening the same identity again
 * plays a restart of that node. Sources of one test share a namespace (a ZooKeeper --name).
 */
export function describeWorkerIdSource(
  name: string,
  open: (t: TestContext, identity: string) => Promise<WorkerIdSource | undefined>,
  newIdentity: () => string,
  traits: WorkerIdSourceTraits = { kind: 'identity', distinct: false },
): void {
  describe(`WorkerIdSource contract: ${name}`, { skip: backendSkip(name) }, () => {
    it('hands out a worker ID from 0 to 1023 and no last timestamp the first time', async (t) => {
      const source = await open(t, newIdentity());
      if (source === undefined) return;
      const lease = await source.acquire();
      assert.ok(Number.isInteger(lease.workerId) && lease.workerId >= 0 && lease.workerId <= 1023);
      assert.equal(lease.lastTimestamp, 0);
      await source.release(0);
    });

    it('gives a restarted node the same worker ID and the highest timestamp it ever recorded: a lower record or release never lowers it', {
      skip: traits.kind !== 'identity' && 'a lease source gives a restarted node any free worker ID',
    }, async (t) => {
      const identity = newIdentity();
      const first = await open(t, identity);
      if (first === undefined) return;
      const lease = await first.acquire();
      const recorded = Date.now() + 2000;
      await first.record(recorded);
      // The clock stepped back 30 s: the node asks for a lower record, which must not land.
      await first.record(recorded - 30_000);
      // A crash: no release. The restart must see the highest recorded time.
      const second = await open(t, identity);
      assert.ok(second);
      assert.deepEqual(await second.acquire(), { workerId: lease.workerId, lastTimestamp: recorded });
      await second.release(recorded - 1000);
      const third = await open(t, identity);
      assert.ok(third);
      assert.deepEqual(await third.acquire(), { workerId: lease.workerId, lastTimestamp: recorded });
      await third.release(0);
    });

    it('gives 8 nodes starting at once 8 different worker IDs', {
      skip: !traits.distinct && 'this source draws worker IDs at random, without a coordinator',
    }, async (t) => {
      const sources = await Promise.all(Array.from({ length: 8 }, () => open(t, newIdentity())));
      if (sources.some((source) => source === undefined)) return;
      const leases = await Promise.all(sources.map((source) => (source as WorkerIdSource).acquire()));
      const ids = leases.map((lease) => lease.workerId);
      assert.equal(new Set(ids).size, 8, `worker IDs ${ids.join(', ')}`);
      await Promise.all(sources.map((source) => (source as WorkerIdSource).release(0)));
    });

    const lease = traits.lease;
    it('hands a released worker ID to the next node with the highest timestamp its holder recorded', {
      skip: lease === undefined && 'not a lease source',
    }, async (t) => {
      const first = await open(t, newIdentity());
      if (first === undefined || lease === undefined) return;
      const workerId = await holdAllButOne(t, lease);
      assert.equal((await first.acquire()).workerId, workerId, 'the one worker ID left free');
      const recorded = Date.now() + 2000;
      await first.record(recorded);
      // A clock stepped back asks for lower records and a lower release: neither may land, or
      // the next holder would wait too little.
      await first.record(recorded - 30_000);
      // While it is held, nobody else gets it: the next node finds every worker ID taken.
      const blocked = await open(t, newIdentity());
      assert.ok(blocked);
      await assert.rejects(blocked.acquire(), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
      await first.release(recorded - 500);
      const second = await open(t, newIdentity());
      assert.ok(second);
      assert.deepEqual(await second.acquire(), { workerId, lastTimestamp: recorded });
      await second.release(0);
    });

    it('stops holding a worker ID whose claim is gone, and claims again above its own record', {
      skip: lease === undefined && 'not a lease source',
    }, async (t) => {
      const source = await open(t, newIdentity());
      if (source === undefined || lease === undefined) return;
      assert.ok(source.valid && source.onRegained, 'a lease source says whether it holds its worker ID');
      const regained: WorkerLease[] = [];
      source.onRegained((again) => regained.push(again));
      const workerId = await holdAllButOne(t, lease);
      assert.equal((await source.acquire()).workerId, workerId, 'the one worker ID left free');
      assert.equal(source.valid(), true);
      const recorded = Date.now() + 2000;
      await source.record(recorded);
      await lease.dropClaim(t, workerId);
      // A heartbeat every third of the TTL notices; bounded by the TTLs used in tests (1-2 s).
      assert.ok(
        await eventually(() => source.valid?.() === false || regained.length > 0, 5000),
        'loss noticed',
      );
      assert.ok(await eventually(() => regained.length > 0, 5000), 'worker ID claimed again');
      assert.deepEqual(regained, [{ workerId, lastTimestamp: recorded }]);
      assert.equal(source.valid(), true);
      await source.release(recorded);
    });
  });
}
