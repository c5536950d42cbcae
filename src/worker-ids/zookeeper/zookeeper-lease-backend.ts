import { randomBytes } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import { FrondError } from '../../core/errors.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerLease } from '../../core/worker-id-source.js';
import { type LeaseBackend, LeaseLostError, type LeaseSession } from '../lease/lease-worker-id-source.js';
import { workerIdCandidates } from '../lease/worker-id-candidates.js';
import { CreateMode, isZooKeeperError, ZooKeeperClient } from './zookeeper-client.js';
import { parseForeverNode, zookeeperPaths } from './zookeeper-paths.js';

export interface ZooKeeperLeaseOptions {
  connect: string;
  name: string;
  /** Written into the claim, for people reading the tree: `ip:port` or the advertised address. */
  identity: string;
  /** Asked of the server, which may clamp it (minSessionTimeout, maxSessionTimeout). */
  sessionTimeoutMs: number;
  timeoutMs: number;
  clock: Clock;
  /** The layout's largest worker ID (2^worker bits − 1); Leaf's 1023 when absent. */
  maxWorkerId?: number;
}

/** A claim attempt gives up after this many candidates taken by others meanwhile, and lists again. */
const CLAIM_ATTEMPTS = 32;

/** Lease mode on ZooKeeper: an ephemeral claim per worker ID, held by the node's session. */
export class ZooKeeperLeaseBackend implements LeaseBackend {
  readonly description: string;

  constructor(private readonly options: ZooKeeperLeaseOptions) {
    this.description = `zookeeper:${options.connect}/snowflake/${options.name}/lease`;
  }

  async open(): Promise<LeaseSession> {
    const { connect, sessionTimeoutMs, timeoutMs, clock } = this.options;
    const client = await ZooKeeperClient.connect({ connect, sessionTimeoutMs, timeoutMs, clock });
    try {
      const paths = zookeeperPaths(this.options.name);
      await client.mkdirp(paths.claims);
      await client.mkdirp(paths.workers);
    } catch (error) {
      await client.close();
      throw error;
    }
    return new ZooKeeperLeaseSession(client, this.options);
  }
}

interface WorkerRecord {
  timestamp: number;
  identity?: string;
  /** The session token of the holder that wrote it. */
  token?: string;
}

class ZooKeeperLeaseSession implements LeaseSession {
  readonly ttlMs: number;
  private readonly paths;
  /** Tells this session's writes to a worker record from anyone else's. */
  private readonly token = randomBytes(8).toString('hex');
  private workerId: number | undefined;
  /** The version of the worker record as this session last wrote it: writes are compare-and-set. */
  private version = -1;
  /**
   * The timestamp in the worker record as this session last read or wrote it (the version check
   * makes it exact). Records and the release never write below it.
   */
  private held = 0;

  constructor(
    private readonly client: ZooKeeperClient,
    private readonly options: ZooKeeperLeaseOptions,
  ) {
    this.ttlMs = client.sessionTimeoutMs;
    this.paths = zookeeperPaths(options.name);
  }

  async claim(preferred: number | undefined): Promise<WorkerLease> {
    const [claims, workers, forever] = await Promise.all([
      this.client.getChildren(this.paths.claims),
      this.client.getChildren(this.paths.workers),
      this.client.getChildren(this.paths.forever).catch((error: unknown) => {
        if (isZooKeeperError(error, 'NO_NODE')) return { children: [] };
        throw error;
      }),
    ]);
    const taken = new Set<number>(claims.children.map(Number).filter(Number.isInteger));
    // Leaf-mode nodes of the same name keep their worker IDs forever.
    for (const child of forever.children) {
      const parsed = parseForeverNode(child);
      if (parsed) taken.add(parsed.workerId);
    }
    const recorded = workers.children.map(Number).filter(Number.isInteger);
    const lastTimestamps = new Map<number, number>(recorded.map((id) => [id, 0]));
    const maxWorkerId = this.options.maxWorkerId ?? MAX_WORKER_ID;
    let neverLeasedFree = false;
    for (let id = 0; id <= maxWorkerId && !neverLeasedFree; id++)
      neverLeasedFree = !taken.has(id) && !lastTimestamps.has(id);
    if (!neverLeasedFree) {
      // Every free worker ID was leased before: read their times to take the one that passed first.
      const free = recorded.filter((id) => !taken.has(id));
      const records = await Promise.all(free.map((id) => this.readRecord(id).catch(() => undefined)));
      free.forEach((id, i) => {
        lastTimestamps.set(id, records[i]?.record.timestamp ?? Number.MAX_SAFE_INTEGER);
      });
    }
    const candidates = workerIdCandidates({ taken, lastTimestamps, preferred, maxWorkerId });
    for (const id of candidates.slice(0, CLAIM_ATTEMPTS)) {
      try {
        await this.client.create(
          `${this.paths.claims}/${id}`,
          Buffer.from(JSON.stringify({ identity: this.options.identity, token: this.token })),
          CreateMode.EPHEMERAL,
        );
      } catch (error) {
        if (isZooKeeperError(error, 'NODE_EXISTS')) continue;
        throw error;
      }
      this.workerId = id;
      return { workerId: id, lastTimestamp: await this.adoptRecord(id) };
    }
    throw new FrondError(
      'WORKER_ID_UNAVAILABLE',
      candidates.length === 0
        ? `all ${maxWorkerId + 1} worker IDs under /snowflake/${this.options.name} are held (${claims.children.length} by leases, the rest by Leaf-mode nodes)`
        : `worker IDs under /snowflake/${this.options.name} were claimed by other nodes as fast as this one tried; retrying`,
    );
  }

  async heartbeat(): Promise<void> {
    const stat = await this.guard(this.client.exists(this.claimPath()));
    if (stat === undefined) throw new LeaseLostError(`${this.claimPath()} is gone`);
    if (!stat.ephemeralOwner.equals(this.client.sessionId))
      throw new LeaseLostError(`${this.claimPath()} belongs to another session`);
  }

  async record(requested: number): Promise<void> {
    // Never lower the record: the next holder of this worker ID waits only until it.
    if (requested <= this.held) return;
    const timestamp = requested;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.guard(
          this.client.commit(`record ${this.workerPath()}`, (tx) =>
            tx.check(this.claimPath()).setData(this.workerPath(), this.data(timestamp), this.version),
          ),
        );
        this.version++;
        this.held = timestamp;
        return;
      } catch (error) {
        if (isZooKeeperError(error, 'NO_NODE')) throw new LeaseLostError(`${this.claimPath()} is gone`);
        if (!isZooKeeperError(error, 'BAD_VERSION') || attempt > 1) throw error;
        // A write that timed out may have landed after all: it is ours if it carries our token.
        const current = await this.readRecord(this.workerId as number);
        if (current?.record.token !== this.token)
          throw new LeaseLostError(`${this.workerPath()} was written by another holder`);
        this.version = current.version;
        this.held = Math.max(this.held, current.record.timestamp);
        if (current.record.timestamp >= timestamp) return;
      }
    }
  }

  async release(lastTimestamp: number): Promise<void> {
    try {
      await this.client.commit(`release ${this.claimPath()}`, (tx) =>
        tx
          .setData(this.workerPath(), this.data(Math.max(this.held, lastTimestamp)), this.version)
          .remove(this.claimPath()),
      );
    } finally {
      await this.close();
    }
  }

  close(): Promise<void> {
    return this.client.close();
  }

  /** The worker record of a freshly claimed worker ID (created if missing): its last timestamp. */
  private async adoptRecord(id: number): Promise<number> {
    const existing = await this.readRecord(id);
    if (existing) {
      this.version = existing.version;
      this.held = existing.record.timestamp;
      return existing.record.timestamp;
    }
    try {
      await this.client.create(this.workerPath(), this.data(0), CreateMode.PERSISTENT);
      this.version = 0;
      return 0;
    } catch (error) {
      if (!isZooKeeperError(error, 'NODE_EXISTS')) throw error;
      const again = await this.readRecord(id);
      if (!again) throw error;
      this.version = again.version;
      this.held = again.record.timestamp;
      return again.record.timestamp;
    }
  }

  private async readRecord(id: number): Promise<{ record: WorkerRecord; version: number } | undefined> {
    try {
      const { data, stat } = await this.client.getData(`${this.paths.workers}/${id}`);
      const parsed = JSON.parse(data.toString('utf8')) as Partial<WorkerRecord>;
      const timestamp = Number.isSafeInteger(parsed.timestamp) ? (parsed.timestamp as number) : 0;
      return { record: { ...parsed, timestamp }, version: stat.version };
    } catch (error) {
      if (isZooKeeperError(error, 'NO_NODE')) return undefined;
      throw error;
    }
  }

  /** An expired session is a lost lease, whatever the call. */
  private async guard<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise;
    } catch (error) {
      if (this.client.expired || isZooKeeperError(error, 'SESSION_EXPIRED'))
        throw new LeaseLostError(`the ZooKeeper session expired`, { cause: error });
      throw error;
    }
  }

  private data(timestamp: number): Buffer {
    const record: WorkerRecord = { timestamp, identity: this.options.identity, token: this.token };
    return Buffer.from(JSON.stringify(record));
  }

  private claimPath(): string {
    return `${this.paths.claims}/${this.workerId}`;
  }

  private workerPath(): string {
    return `${this.paths.workers}/${this.workerId}`;
  }
}
