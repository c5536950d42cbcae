import { Etcd3, EtcdLeaseInvalidError, type Lease } from 'etcd3';
import { describeError, FrondError } from '../../core/errors.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import { type LeaseBackend, LeaseLostError, type LeaseSession } from '../lease/lease-worker-id-source.js';
import { workerIdCandidates } from '../lease/worker-id-candidates.js';

export interface EtcdLeaseOptions {
  /** `http://host:port` endpoints of one etcd cluster. */
  hosts: string[];
  name: string;
  /** Written into the claim, for people reading the keys. */
  identity: string;
  /** etcd counts in whole seconds and has a floor of its own (1.5 s with default settings), so at least 2 s. */
  ttlMs: number;
  timeoutMs: number;
  /** The layout's largest worker ID (2^worker bits − 1); Leaf's 1023 when absent. */
  maxWorkerId?: number;
}

/** A claim attempt gives up after this many candidates taken by others meanwhile, and lists again. */
const CLAIM_ATTEMPTS = 32;

/**
 * Worker records hold the timestamp as 16 zero-padded digits, so that etcd's byte-wise `<` on values
 * orders them as numbers (ms timestamps have 13 digits until the year 2286).
 */
function pad(timestamp: number): string {
  return String(timestamp).padStart(16, '0');
}

/**
 * Lease mode on etcd: `/snowflake/{name}/lease/claims/{workerId}` is put with the node's lease
 * (gone when the lease expires) and `/snowflake/{name}/lease/workers/{workerId}` keeps the last
 * recorded timestamp. Every write is a transaction that compares the claim's lease with the node's
 * own, so a node that lost its claim cannot move the timestamp its successor waits for.
 */
export class EtcdLeaseBackend implements LeaseBackend {
  readonly description: string;
  private readonly ttlSeconds: number;

  constructor(private readonly options: EtcdLeaseOptions) {
    this.description = `etcd:${options.hosts.join(',')}/snowflake/${options.name}/lease`;
    this.ttlSeconds = Math.max(2, Math.ceil(options.ttlMs / 1000));
  }

  async open(): Promise<LeaseSession> {
    const { hosts, timeoutMs } = this.options;
    const client = new Etcd3({
      hosts,
      dialTimeout: timeoutMs,
      // gRPC deadlines on every call; streams (keepalive) are bounded by frond's own timers.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
    });
    const lease = client.lease(this.ttlSeconds, { autoKeepAlive: false });
    // Without a listener an unhandled 'lost' is harmless (not 'error'), but keep it quiet and explicit.
    lease.on('lost', () => {});
    try {
      const id = await etcd('grant a lease', lease.grant());
      return new EtcdLeaseSession(client, lease, id, this.ttlSeconds * 1000, this.options);
    } catch (error) {
      client.close();
      throw error;
    }
  }
}

class EtcdLeaseSession implements LeaseSession {
  private readonly prefix: string;
  private workerId: number | undefined;
  private closing: Promise<void> | undefined;
  /**
   * The highest timestamp this session read from or wrote to its worker record. Only the claim's
   * holder writes it (every write compares the claim's lease), so the release can keep it exact.
   */
  private held = 0;

  constructor(
    private readonly client: Etcd3,
    private readonly lease: Lease,
    private readonly leaseId: string,
    readonly ttlMs: number,
    private readonly options: EtcdLeaseOptions,
  ) {
    this.prefix = `/snowflake/${options.name}/lease`;
  }

  async claim(preferred: number | undefined): Promise<WorkerLease> {
    const [claims, workers] = await Promise.all([
      etcd('list claims', this.client.getAll().prefix(`${this.prefix}/claims/`).keys()),
      etcd('list worker records', this.client.getAll().prefix(`${this.prefix}/workers/`).strings()),
    ]);
    const taken = new Set(claims.map((key) => Number(key.slice(key.lastIndexOf('/') + 1))));
    const lastTimestamps = new Map<number, number>();
    for (const [key, value] of Object.entries(workers))
      lastTimestamps.set(Number(key.slice(key.lastIndexOf('/') + 1)), Number(value));
    const maxWorkerId = this.options.maxWorkerId ?? MAX_WORKER_ID;
    const candidates = workerIdCandidates({ taken, lastTimestamps, preferred, maxWorkerId });
    for (const id of candidates.slice(0, CLAIM_ATTEMPTS)) {
      const claim = this.claimKey(id);
      const result = await etcd(
        `claim ${claim}`,
        this.client
          .if(claim, 'Create', '==', 0)
          .then(
            this.client
              .put(claim)
              .value(JSON.stringify({ identity: this.options.identity }))
              .lease(this.leaseId),
          )
          .commit(),
      );
      if (!result.succeeded) continue;
      this.workerId = id;
      const record = this.workerKey(id);
      // The fenced compare in `record` needs a value to compare with.
      await etcd(
        `create ${record}`,
        this.client
          .if(record, 'Create', '==', 0)
          .then(this.client.put(record).value(pad(0)))
          .commit(),
      );
      const last = await etcd(`read ${record}`, this.client.get(record).string());
      this.held = Number(last ?? 0);
      return { workerId: id, lastTimestamp: this.held };
    }
    throw new FrondError(
      'WORKER_ID_UNAVAILABLE',
      candidates.length === 0
        ? `all ${maxWorkerId + 1} worker IDs under ${this.prefix} are held by leases`
        : `worker IDs under ${this.prefix} were claimed by other nodes as fast as this one tried; retrying`,
    );
  }

  async heartbeat(): Promise<void> {
    try {
      const response = await this.lease.keepaliveOnce();
      if (Number(response.TTL) <= 0) throw new LeaseLostError(`etcd lease ${this.leaseId} expired`);
    } catch (error) {
      if (error instanceof EtcdLeaseInvalidError)
        throw new LeaseLostError(`etcd lease ${this.leaseId} expired`, { cause: error });
      if (error instanceof FrondError) throw error;
      throw new FrondError('WORKER_ID_UNAVAILABLE', `etcd keepalive: ${describeError(error)}`, {
        cause: error,
      });
    }
    // A claim deleted by hand (and maybe taken by another node) is lost too.
    const claim = await etcd('read claim', this.client.get(this.claimKey()).exec());
    if (claim.kvs[0]?.lease !== this.leaseId)
      throw new LeaseLostError(`${this.claimKey()} is no longer held by lease ${this.leaseId}`);
  }

  async record(timestamp: number): Promise<void> {
    // The transaction below refuses a lower value too; this saves the round trip.
    if (timestamp <= this.held) return;
    const record = this.workerKey();
    const result = await etcd(
      `record ${record}`,
      this.client
        .if(this.claimKey(), 'Lease', '==', this.leaseId)
        .and(record, 'Value', '<', pad(timestamp))
        .then(this.client.put(record).value(pad(timestamp)))
        .commit(),
    );
    if (result.succeeded) {
      this.held = timestamp;
      return;
    }
    const [claim, stored] = await Promise.all([
      etcd('read claim', this.client.get(this.claimKey()).exec()),
      etcd(`read ${record}`, this.client.get(record).string()),
    ]);
    if (claim.kvs[0]?.lease !== this.leaseId)
      throw new LeaseLostError(`${this.claimKey()} is no longer held by lease ${this.leaseId}`);
    // A retried write landed first: the record is already at or past `timestamp`.
    if (stored !== null && stored >= pad(timestamp)) {
      this.held = Math.max(this.held, Number(stored));
      return;
    }
    throw new FrondError('WORKER_ID_UNAVAILABLE', `etcd refused to record ${timestamp} in ${record}`);
  }

  async release(lastTimestamp: number): Promise<void> {
    try {
      await etcd(
        `release ${this.claimKey()}`,
        this.client
          .if(this.claimKey(), 'Lease', '==', this.leaseId)
          .then(
            this.client.put(this.workerKey()).value(pad(Math.max(this.held, lastTimestamp))),
            this.client.delete().key(this.claimKey()),
          )
          .commit(),
      );
    } finally {
      await this.close();
    }
  }

  /** Revokes the lease (its claim goes at once) and closes the client; bounded by the call deadlines. */
  close(): Promise<void> {
    this.closing ??= this.lease
      .revoke()
      .catch(() => {})
      .finally(() => this.client.close());
    return this.closing;
  }

  private claimKey(id = this.workerId): string {
    return `${this.prefix}/claims/${id}`;
  }

  private workerKey(id = this.workerId): string {
    return `${this.prefix}/workers/${id}`;
  }
}

/** etcd's errors as WORKER_ID_UNAVAILABLE with what was being done. */
async function etcd<T>(what: string, promise: Promise<T>): Promise<T> {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof FrondError) throw error;
    throw new FrondError('WORKER_ID_UNAVAILABLE', `etcd: ${what}: ${describeError(error)}`, { cause: error });
  }
}
