import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock, settle } from '../../../test/support/manual-clock.js';
import { MemoryWorkerSource } from '../../../test/support/memory-worker-source.js';
import { FrondError, isFrondError } from '../../core/errors.js';
import { silentLogger } from '../../core/logger.js';
import { decomposeSnowflake } from '../../core/snowflake-layout.js';
import { DEFAULT_SNOWFLAKE_OPTIONS, SnowflakeService } from '../../core/snowflake-service.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import {
  type LeaseBackend,
  LeaseLostError,
  type LeaseSession,
  LeaseWorkerIdSource,
} from './lease-worker-id-source.js';
import { workerIdCandidates } from './worker-id-candidates.js';

const T0 = 1_700_000_000_000;

/** A memory source whose lease the test takes away and gives back. */
class LosableSource extends MemoryWorkerSource {
  held = true;
  private listener: ((lease: WorkerLease) => void) | undefined;

  valid(): boolean {
    return this.held;
  }

  onRegained(listener: (lease: WorkerLease) => void): void {
    this.listener = listener;
  }

  regain(lease: WorkerLease): void {
    this.workerId = lease.workerId;
    this.held = true;
    this.listener?.(lease);
  }
}

describe('SnowflakeService start-up', () => {
  it('gives the worker ID back, as it was, when it refuses to start', async () => {
    const clock = new ManualClock(T0);
    const source = new MemoryWorkerSource(3, T0 + 60_000);
    await assert.rejects(SnowflakeService.start(source, clock, silentLogger), (error) =>
      isFrondError(error, 'CLOCK_MOVED_BACKWARDS'),
    );
    assert.equal(source.released, T0 + 60_000);
  });
});

/** An ID that `tryNext` must have had at once. */
function must(id: bigint | undefined): bigint {
  assert.notEqual(id, undefined, 'tryNext had no ID');
  return id as bigint;
}

describe('SnowflakeService with a lease that can be lost', () => {
  it('answers WORKER_ID_UNAVAILABLE once the lease is lost, and records nothing meanwhile', async () => {
    const clock = new ManualClock(T0);
    const source = new LosableSource(4);
    const service = await SnowflakeService.start(source, clock, silentLogger);
    assert.equal(decomposeSnowflake(must(service.tryNext())).workerId, 4);
    source.held = false;
    assert.equal(service.available, false);
    assert.equal(service.tryNext(), undefined);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
    await assert.rejects(service.nextMany(3), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
    const records = source.records.length;
    await clock.advance(5 * DEFAULT_SNOWFLAKE_OPTIONS.recordEveryMs);
    assert.equal(source.records.length, records, 'no record while the lease is lost');
    await service.close();
    assert.equal(clock.pendingTimers, 0);
  });

  it('stays unavailable even if the source turns valid again without a regained lease', async () => {
    const clock = new ManualClock(T0);
    const source = new LosableSource(4);
    const service = await SnowflakeService.start(source, clock, silentLogger);
    source.held = false;
    assert.equal(service.tryNext(), undefined);
    source.held = true;
    assert.equal(service.tryNext(), undefined);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
    await service.close();
  });

  it('resumes with the regained worker ID only once the clock passed its last timestamp and a time ahead is recorded', async () => {
    const clock = new ManualClock(T0);
    const source = new LosableSource(4);
    const service = await SnowflakeService.start(source, clock, silentLogger);
    const before = must(service.tryNext());
    source.held = false;
    assert.equal(service.tryNext(), undefined);
    // Another node used worker 9 until T0 + 300 (its record); the clock is at T0.
    source.regain({ workerId: 9, lastTimestamp: T0 + 300 });
    assert.equal(service.tryNext(), undefined);
    await assert.rejects(service.next(), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
    await clock.advance(200);
    assert.equal(service.available, false, 'still waiting for the clock');
    await clock.advance(200);
    assert.equal(service.available, true);
    // It waited until T0 + 301, one past the lease's last timestamp, and recorded ahead from there.
    assert.equal(source.records.at(-1), T0 + 301 + DEFAULT_SNOWFLAKE_OPTIONS.recordAheadMs);
    const after = decomposeSnowflake(must(service.tryNext()));
    assert.equal(after.workerId, 9);
    assert.ok(after.timestamp > T0 + 300);
    assert.ok(must(service.tryNext()) > before);
    assert.equal(service.workerId, 9);
    await service.close();
    assert.equal(clock.pendingTimers, 0);
  });

  it('keeps the node waiting when recording the regained lease fails, and retries', async () => {
    const clock = new ManualClock(T0);
    const source = new LosableSource(4);
    const service = await SnowflakeService.start(source, clock, silentLogger);
    source.held = false;
    assert.equal(service.tryNext(), undefined);
    const record = source.record.bind(source);
    let failures = 2;
    source.record = async (timestamp) => {
      if (failures-- > 0) throw new FrondError('WORKER_ID_UNAVAILABLE', 'coordinator down');
      return record(timestamp);
    };
    source.regain({ workerId: 5, lastTimestamp: 0 });
    await settle();
    assert.equal(service.available, false);
    await clock.advance(2 * DEFAULT_SNOWFLAKE_OPTIONS.recordEveryMs);
    assert.equal(service.available, true);
    assert.equal(decomposeSnowflake(must(service.tryNext())).workerId, 5);
    await service.close();
  });
});

/** A coordinator in memory: sessions with a TTL, heartbeats that answer or hang as the test says. */
class FakeBackend implements LeaseBackend {
  readonly description = 'fake:';
  heartbeat: 'ok' | 'hang' | 'lost' = 'ok';
  /** A coordinator that cannot be reached: sessions fail to open. */
  down = false;
  free = [3, 4];
  /** Worker IDs another node took once they were lost: closing the session does not free them. */
  readonly stolen = new Set<number>();
  opened = 0;
  closed = 0;
  records: number[] = [];

  constructor(readonly ttlMs = 3000) {}

  async open(): Promise<LeaseSession> {
    this.opened++;
    if (this.down) throw new FrondError('WORKER_ID_UNAVAILABLE', 'unreachable');
    const backend = this;
    let workerId: number | undefined;
    return {
      ttlMs: this.ttlMs,
      async claim(preferred) {
        const id = preferred !== undefined && backend.free.includes(preferred) ? preferred : backend.free[0];
        if (id === undefined) throw new FrondError('WORKER_ID_UNAVAILABLE', 'all held');
        backend.free = backend.free.filter((free) => free !== id);
        workerId = id;
        return { workerId: id, lastTimestamp: 100 * id };
      },
      heartbeat() {
        if (backend.heartbeat === 'lost') return Promise.reject(new LeaseLostError('expired'));
        if (backend.heartbeat === 'hang') return new Promise(() => {});
        return Promise.resolve();
      },
      async record(timestamp) {
        backend.records.push(timestamp);
      },
      async release() {
        if (workerId !== undefined) backend.free.push(workerId);
      },
      async close() {
        backend.closed++;
        if (workerId !== undefined && !backend.free.includes(workerId) && !backend.stolen.has(workerId))
          backend.free.push(workerId);
        workerId = undefined;
      },
    };
  }
}

function leaseSource(clock: ManualClock, backend: FakeBackend) {
  return new LeaseWorkerIdSource(backend, {
    clock,
    monotonic: () => clock.now(),
    logger: silentLogger,
    timeoutMs: 1000,
    acquireWaitMs: 2000,
    retryMs: 500,
  });
}

describe('LeaseWorkerIdSource', () => {
  it('holds its worker ID while heartbeats are confirmed', async () => {
    const clock = new ManualClock(T0);
    const backend = new FakeBackend(3000);
    const source = leaseSource(clock, backend);
    assert.deepEqual(await source.acquire(), { workerId: 3, lastTimestamp: 300 });
    await clock.advance(30_000);
    assert.equal(source.valid(), true);
    await source.release(T0);
    assert.equal(clock.pendingTimers, 0);
  });

  it('stops holding exactly one TTL after the last confirmed heartbeat was sent, then claims again with a new session', async () => {
    const clock = new ManualClock(T0);
    const backend = new FakeBackend(3000);
    const source = leaseSource(clock, backend);
    const regained: WorkerLease[] = [];
    source.onRegained((lease) => regained.push(lease));
    await source.acquire();
    await clock.advance(1000); // the heartbeat sent at T0 + 1000 is confirmed: held until T0 + 4000
    backend.heartbeat = 'hang';
    backend.down = true;
    await clock.advance(2999);
    assert.equal(source.valid(), true);
    await clock.advance(1);
    assert.equal(source.valid(), false, 'cut off for one TTL');
    await clock.advance(2000);
    assert.equal(source.valid(), false, 'the coordinator is still unreachable');
    backend.heartbeat = 'ok';
    backend.down = false;
    await clock.advance(500);
    assert.ok(backend.opened > 2, 'new sessions, not the old client');
    assert.deepEqual(regained, [{ workerId: 3, lastTimestamp: 300 }], 'its own worker ID back first');
    assert.equal(source.valid(), true);
    assert.equal(source.losses, 1);
    await source.release(T0);
  });

  it('gives the lease up at once when the coordinator says it is gone', async () => {
    const clock = new ManualClock(T0);
    const backend = new FakeBackend(3000);
    const source = leaseSource(clock, backend);
    await source.acquire();
    backend.heartbeat = 'lost';
    backend.stolen.add(3); // another node takes 3 as soon as it is free
    const regained: WorkerLease[] = [];
    source.onRegained((lease) => regained.push(lease));
    await clock.advance(1000);
    assert.equal(source.losses, 1, 'lost at the first heartbeat, long before the TTL ran out');
    assert.deepEqual(regained, [{ workerId: 4, lastTimestamp: 400 }], 'another worker ID');
    backend.heartbeat = 'ok';
    await source.record(T0);
    assert.deepEqual(backend.records, [T0]);
    await source.release(T0);
  });

  it('refuses records while it holds nothing', async () => {
    const clock = new ManualClock(T0);
    const source = leaseSource(clock, new FakeBackend());
    await assert.rejects(source.record(T0), (error) => isFrondError(error, 'WORKER_ID_UNAVAILABLE'));
  });

  it('keeps trying for acquireWaitMs while every worker ID is held, then fails cleanly', async () => {
    const clock = new ManualClock(T0);
    const backend = new FakeBackend();
    backend.free = [];
    const source = leaseSource(clock, backend);
    let outcome: unknown;
    let failedAt = 0;
    source.acquire().catch((error: unknown) => {
      outcome = error;
      failedAt = clock.now();
    });
    for (let i = 0; i < 40 && outcome === undefined; i++) await clock.advance(100);
    assert.ok(isFrondError(outcome, 'WORKER_ID_UNAVAILABLE'));
    assert.ok(failedAt >= T0 + 1500 && failedAt <= T0 + 2100, `gave up after ${failedAt - T0} ms`);
    assert.ok(backend.opened >= 4, `${backend.opened} attempts, one every 500 ms`);
  });
});

describe('workerIdCandidates', () => {
  it('tries the preferred worker ID, then never-leased ones, then the earliest last timestamp', () => {
    const taken = new Set(Array.from({ length: 1020 }, (_, i) => i));
    const lastTimestamps = new Map([
      [1021, 500],
      [1022, 100],
    ]);
    assert.deepEqual(
      workerIdCandidates({ taken, lastTimestamps, preferred: undefined }),
      [1020, 1023, 1022, 1021],
    );
    assert.deepEqual(
      workerIdCandidates({ taken, lastTimestamps, preferred: 1021 }),
      [1021, 1020, 1023, 1022],
    );
    assert.deepEqual(workerIdCandidates({ taken, lastTimestamps, preferred: 5 }), [1020, 1023, 1022, 1021]);
  });
});
