import { type Clock, Sleeps, within } from '../../core/clock.js';
import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { WorkerIdSource, WorkerLease } from '../../core/worker-id-source.js';

/** The coordinator says the claim is gone for sure (session expired, lease revoked, claim taken). */
export class LeaseLostError extends FrondError {
  constructor(message: string, options?: ErrorOptions) {
    super('WORKER_ID_UNAVAILABLE', message, options);
  }
}

/**
 * One session with a coordinator (a ZooKeeper session, an etcd lease), holding at most one worker
 * ID. Each backend implements only these steps; timing, loss and reclaiming live in
 * `LeaseWorkerIdSource`.
 */
export interface LeaseSession {
  /** ms the coordinator keeps the claim without a heartbeat: the granted session timeout or lease TTL. */
  readonly ttlMs: number;
  /**
   * Claims a free worker ID (`preferred` first when free) and answers it with the last timestamp
   * recorded for it (0 if never leased). Throws WORKER_ID_UNAVAILABLE when none is free.
   */
  claim(preferred: number | undefined): Promise<WorkerLease>;
  /** Renews the session; throws LeaseLostError when it or the claim is gone for sure. */
  heartbeat(): Promise<void>;
  /** Records `timestamp` for the claimed worker ID only while the claim is held, never lowering it. */
  record(timestamp: number): Promise<void>;
  /** Records the last timestamp used, deletes the claim and ends the session. */
  release(lastTimestamp: number): Promise<void>;
  /** Ends the session without recording anything (after a loss, or on a failed claim). Idempotent. */
  close(): Promise<void>;
}

export interface LeaseBackend {
  readonly description: string;
  /** Connects with a new session: an expired ZooKeeper client never recovers, so each loss gets a new one. */
  open(): Promise<LeaseSession>;
}

export interface LeaseSourceOptions {
  clock: Clock;
  /**
   * Monotonic milliseconds (`performance.now`). Lease deadlines are measured on it, so that a wall
   * clock that jumps (NTP, libfaketime) neither shortens nor stretches them.
   */
  monotonic: () => number;
  logger: Logger;
  /** Bound on opening a session and on each call (a heartbeat is bounded by a third of the TTL). */
  timeoutMs: number;
  /**
   * How long `acquire` keeps trying while every worker ID is held or the coordinator is unreachable;
   * a crashed node's claim lasts one TTL, so somewhat more than one TTL.
   */
  acquireWaitMs: number;
  /** Pause between two attempts to claim. */
  retryMs: number;
}

/**
 * Worker IDs leased from a coordinator, so that they are reused instead of used up (Leaf's
 * persistent nodes run out after 1,024 addresses).
 *
 * Safety does not rest on timing: a node records a timestamp ahead before it issues IDs up to it
 * (`SnowflakeService`), only while it holds the claim, and the next holder of the worker ID waits
 * until its clock passes the last recorded timestamp. The deadline below is what makes a node stop
 * serving promptly once it may have lost its claim: the coordinator keeps a claim for one TTL after
 * it last heard from the holder, and a heartbeat sent at `t` and confirmed proves it heard at or
 * after `t`, so the claim is certainly held until `t + ttl` on the monotonic clock. Past that the
 * node answers WORKER_ID_UNAVAILABLE, ends the session and claims again with a new one. The
 * ZooKeeper client cannot be trusted to notice by itself: frozen past its session timeout it
 * learns of the expiry only when it reconnects (seen with node-zookeeper-client 1.1.3; docs/worker-ids.md).
 */
export class LeaseWorkerIdSource implements WorkerIdSource {
  readonly description: string;
  /** Times the lease was lost since start (for tests and logs). */
  losses = 0;
  private session: LeaseSession | undefined;
  private workerId: number | undefined;
  private deadline = Number.NEGATIVE_INFINITY;
  private lost = false;
  private closed = false;
  private cancelBeat: (() => void) | undefined;
  private readonly listeners: ((lease: WorkerLease) => void)[] = [];
  /** Sleeps that closing cuts short, so a closed node leaves no timer behind. */
  private readonly sleeps: Sleeps;

  constructor(
    private readonly backend: LeaseBackend,
    private readonly options: LeaseSourceOptions,
  ) {
    this.description = backend.description;
    this.sleeps = new Sleeps(options.clock);
  }

  async acquire(): Promise<WorkerLease> {
    const started = this.options.monotonic();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.claimOnce(undefined, false);
      } catch (error) {
        const elapsed = this.options.monotonic() - started;
        if (
          !isFrondError(error, 'WORKER_ID_UNAVAILABLE') ||
          elapsed + this.options.retryMs > this.options.acquireWaitMs
        )
          throw error;
        if (attempt === 1)
          this.options.logger.log('warn', 'worker.claim_waiting', {
            source: this.description,
            error: describeError(error),
            waitMs: this.options.acquireWaitMs,
          });
        await this.sleeps.sleep(this.options.retryMs);
        if (this.closed) throw error;
      }
    }
  }

  valid(): boolean {
    return !this.lost && this.session !== undefined && this.options.monotonic() < this.deadline;
  }

  onRegained(listener: (lease: WorkerLease) => void): void {
    this.listeners.push(listener);
  }

  async record(timestamp: number): Promise<void> {
    const session = this.session;
    if (session === undefined || this.lost)
      throw new FrondError('WORKER_ID_UNAVAILABLE', `${this.description}: no worker ID held right now`);
    try {
      await this.bounded(session.record(timestamp), this.options.timeoutMs, 'record');
    } catch (error) {
      if (error instanceof LeaseLostError) this.lose(session, describeError(error));
      throw error;
    }
  }

  async release(lastTimestamp: number): Promise<void> {
    this.closed = true;
    this.cancelBeat?.();
    this.sleeps.wakeAll();
    const session = this.session;
    this.session = undefined;
    if (session === undefined) return;
    try {
      if (!this.lost) await this.bounded(session.release(lastTimestamp), this.options.timeoutMs, 'release');
    } catch (error) {
      // Not a failed shutdown: the claim expires with the session, and the record stays at the time
      // recorded ahead, which is only more cautious for the next holder.
      this.options.logger.log('warn', 'worker.release_failed', {
        source: this.description,
        workerId: this.workerId,
        error: describeError(error),
      });
    } finally {
      await within(this.options.clock, session.close(), this.options.timeoutMs);
    }
  }

  /** Opens a session and claims a worker ID; on success the source holds it, from the same tick. */
  private async claimOnce(preferred: number | undefined, notify: boolean): Promise<WorkerLease> {
    const before = this.options.monotonic();
    const session = await this.bounded(this.backend.open(), this.options.timeoutMs, 'connect');
    let lease: WorkerLease;
    try {
      lease = await this.bounded(session.claim(preferred), this.options.timeoutMs, 'claim');
    } catch (error) {
      await session.close();
      throw error;
    }
    if (this.closed) {
      await session.close();
      throw new FrondError('SHUTTING_DOWN', `${this.description}: closed while claiming`);
    }
    // The session was opened after `before`, so the coordinator keeps it at least until before + ttl.
    this.session = session;
    this.workerId = lease.workerId;
    this.deadline = before + session.ttlMs;
    this.lost = false;
    this.scheduleBeat(session);
    if (notify) for (const listener of this.listeners) listener(lease);
    return lease;
  }

  /** A heartbeat every third of the TTL (as ZooKeeper clients ping), and a check at the deadline. */
  private scheduleBeat(session: LeaseSession): void {
    const every = Math.max(1, Math.floor(session.ttlMs / 3));
    const untilDeadline = this.deadline - this.options.monotonic();
    const delay = Math.max(0, Math.min(every, untilDeadline));
    this.cancelBeat = this.options.clock.schedule(() => void this.beat(session, every), delay);
  }

  private async beat(session: LeaseSession, every: number): Promise<void> {
    if (this.closed || session !== this.session || this.lost) return;
    const sent = this.options.monotonic();
    // Once past the deadline the claim is given up even if the coordinator kept it: `valid()` may
    // already have answered false, and a lost lease is only ever followed by a regained one.
    if (sent >= this.deadline) return this.lose(session, `no heartbeat confirmed for ${session.ttlMs} ms`);
    try {
      await this.bounded(session.heartbeat(), Math.min(every, this.options.timeoutMs), 'heartbeat');
      if (session === this.session && !this.lost && sent < this.deadline)
        this.deadline = Math.max(this.deadline, sent + session.ttlMs);
    } catch (error) {
      if (error instanceof LeaseLostError) return this.lose(session, describeError(error));
      this.options.logger.log('debug', 'worker.heartbeat_failed', {
        source: this.description,
        error: describeError(error),
      });
    }
    if (this.closed || session !== this.session || this.lost) return;
    this.scheduleBeat(session);
  }

  private lose(session: LeaseSession, reason: string): void {
    if (this.lost || session !== this.session || this.closed) return;
    this.lost = true;
    this.losses++;
    this.cancelBeat?.();
    this.session = undefined;
    this.options.logger.log('warn', 'worker.lease_lost', {
      source: this.description,
      workerId: this.workerId,
      reason,
    });
    // Ending the session frees the claim at once when the coordinator is reachable.
    void session.close().catch(() => {});
    void this.reclaim();
  }

  private async reclaim(): Promise<void> {
    const previous = this.workerId;
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        const lease = await this.claimOnce(previous, true);
        this.options.logger.log('info', 'worker.lease_regained', {
          source: this.description,
          workerId: lease.workerId,
          previousWorkerId: previous,
          attempts: attempt,
        });
        return;
      } catch (error) {
        if (this.closed) return;
        this.options.logger.log(attempt === 1 ? 'warn' : 'debug', 'worker.reclaim_failed', {
          source: this.description,
          attempt,
          error: describeError(error),
        });
        await this.sleeps.sleep(this.options.retryMs);
      }
    }
  }

  private async bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
    const result = await within(this.options.clock, promise, ms);
    if (result === undefined) {
      // A late success must not leak a session: close whatever arrives.
      void promise.then(
        (value) => {
          if (what === 'connect') void (value as LeaseSession).close().catch(() => {});
        },
        () => {},
      );
      throw new FrondError('WORKER_ID_UNAVAILABLE', `${this.description}: ${what} timed out after ${ms} ms`);
    }
    return result.value;
  }
}
