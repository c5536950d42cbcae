import { join } from 'node:path';
import { type Clock, sleep, within } from '../../core/clock.js';
import { describeError, FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerIdSource, WorkerLease } from '../../core/worker-id-source.js';
import { type ClockReport, clockSkew } from './clock-skew.js';
import { LeafCacheFile } from './leaf-cache-file.js';
import { type WorkerCache, WorkerCacheFile } from './worker-cache-file.js';
import {
  CreateMode,
  isZooKeeperError,
  statLong,
  ZooKeeperClient,
  ZooKeeperError,
  type ZooKeeperStat,
} from './zookeeper-client.js';
import {
  type ForeverNode,
  leafNodeData,
  leafNodeTimestamp,
  parseForeverNode,
  zookeeperPaths,
} from './zookeeper-paths.js';

/** Leaf reports the node's time into its ZooKeeper node every 3 s. */
export const LEAF_REPORT_EVERY_MS = 3_000;
/** In the data dir, beside the file source's `snowflake-worker.json`. */
export const ZOOKEEPER_CACHE_FILE = 'zookeeper-worker.json';
/** Leaf's Curator session; Leaf mode holds nothing ephemeral, so it only paces reconnects. */
const SESSION_TIMEOUT_MS = 6_000;

export interface LeafZooKeeperOptions {
  /** `host:port[,host:port…]`. */
  connect: string;
  /** Leaf's `leaf.name`. */
  name: string;
  /** The identity `host:port`: the first non-internal IPv4 and the HTTP port, or `--advertise`. */
  host: string;
  port: number;
  dataDir: string;
  /** Bound on connecting and on each call; at start, past it the node starts from its cache file. */
  timeoutMs: number;
  /** Refuses to start when the clock is further than this from the other live nodes'; 0: no check. */
  maxClockSkewMs: number;
  /**
   * How far past its last report a node may have put timestamps in IDs: one report period plus the
   * core's record-ahead. Waited out when the identity's node exists but the cache file is gone.
   */
  unreportedMarginMs: number;
  reportEveryMs?: number;
  /**
   * Java's `java.io.tmpdir` of the Leaf nodes this one replaces: Leaf's cache file
   * `{tmpdir}/{name}/leafconf/{port}/workerID.properties` is read and kept written. Undefined: none.
   */
  leafTmpdir?: string | undefined;
  clock: Clock;
  logger: Logger;
  /** The layout's largest worker ID (2^worker bits − 1); Leaf's 1023 when absent. */
  maxWorkerId?: number;
}

/**
 * Leaf's ZooKeeper worker IDs: a persistent sequential node per identity `ip:port` under
 * `/snowflake/{name}/forever`, whose sequence is the worker ID, kept forever. Compatible with Leaf
 * nodes in the same tree, with Leaf's bugs left out: the worker ID is parsed from the node's own
 * name (Leaf assumes 0 for the first node), numbers past 1023 are refused before a node is created,
 * two nodes of one identity collapse to the lowest, and the cache file that lets a node start while
 * ZooKeeper is down records the time too, so that start still checks the clock.
 *
 * ZooKeeper is needed only at a node's first start: `record` writes the cache file only, so a
 * node keeps serving while ZooKeeper is down, and the 3 s report resumes when it is back.
 */
export class ZooKeeperLeafWorkerIdSource implements WorkerIdSource {
  readonly description: string;
  readonly identity: string;
  private readonly cacheFile: WorkerCacheFile;
  private readonly leafCacheFile: LeafCacheFile | undefined;
  /** The data version of the node after this process's last write to it (kept in the cache file). */
  private nodeVersion: number | undefined;
  /** Cache-file writes, one at a time (they share one temporary file). */
  private cacheWrites: Promise<void> = Promise.resolve();
  private readonly paths;
  private client: ZooKeeperClient | undefined;
  private workerId = -1;
  private node = '';
  private lastReported = 0;
  /** The highest timestamp in the cache file (read or written); a write never goes below it. */
  private cached = 0;
  private reportFailing = false;
  /** Reports failed in a row while the client had no connection. */
  private unconnectedFailures = 0;
  private cancelReport: (() => void) | undefined;
  private closed = false;

  constructor(private readonly options: LeafZooKeeperOptions) {
    this.identity = `${options.host}:${options.port}`;
    this.paths = zookeeperPaths(options.name);
    this.description = `zookeeper:${options.connect}${this.paths.forever}/${this.identity}`;
    this.cacheFile = new WorkerCacheFile(join(options.dataDir, ZOOKEEPER_CACHE_FILE));
    this.leafCacheFile =
      options.leafTmpdir === undefined
        ? undefined
        : new LeafCacheFile(options.leafTmpdir, options.name, options.port);
  }

  async acquire(): Promise<WorkerLease> {
    const { logger, name } = this.options;
    const cached = await this.cacheFile.read();
    const mine = cached?.name === name && cached.identity === this.identity ? cached : undefined;
    if (cached && !mine)
      logger.log('warn', 'worker.cache_ignored', {
        path: this.cacheFile.path,
        cached: `${cached.name}/${cached.identity}`,
        now: `${name}/${this.identity}`,
      });
    const leafCached = await this.readLeafCache();
    const client = ZooKeeperClient.open(this.clientOptions());
    let registered: Awaited<ReturnType<typeof this.register>>;
    try {
      await client.waitConnected(this.options.timeoutMs);
      registered = await this.register(client, mine);
    } catch (error) {
      // ZooKeeper down or too slow: Leaf's fallback, keeping the client to report once it is back.
      if (error instanceof ZooKeeperError && mine !== undefined)
        return this.startFromCache(mine, leafCached, error, client);
      await client.close();
      if (error instanceof ZooKeeperError) return this.startFromCache(mine, leafCached, error, undefined);
      throw error;
    }
    this.client = client;
    this.workerId = registered.own.workerId;
    this.node = registered.own.node;
    this.lastReported = registered.written;
    if (mine && mine.workerId !== this.workerId)
      logger.log('warn', 'worker.cache_mismatch', { cachedWorkerId: mine.workerId, workerId: this.workerId });
    if (leafCached !== undefined && leafCached !== this.workerId)
      logger.log('warn', 'worker.cache_mismatch', {
        cache: this.leafCacheFile?.path,
        cachedWorkerId: leafCached,
        workerId: this.workerId,
      });
    // As Leaf's updateLocalWorkerID after each registration, so Leaf can start from it again.
    await this.writeLeafCache();
    // Without its cache file a node that ran before may have issued IDs up to a report period and
    // the record-ahead past its last report.
    const margin = registered.existed && mine === undefined ? this.options.unreportedMarginMs : 0;
    const lastTimestamp = Math.max(registered.reported + margin, mine?.lastTimestamp ?? 0);
    await this.writeCache(lastTimestamp);
    this.scheduleReport();
    logger.log('info', 'worker.zookeeper_registered', {
      workerId: this.workerId,
      node: `${this.paths.forever}/${this.node}`,
      existed: registered.existed,
      lastReported: registered.reported,
    });
    return { workerId: this.workerId, lastTimestamp };
  }

  record(timestamp: number): Promise<void> {
    return this.writeCache(timestamp);
  }

  async release(lastTimestamp: number): Promise<void> {
    this.closed = true;
    this.cancelReport?.();
    await this.writeCache(lastTimestamp);
    await this.client?.close();
  }

  /** Leaf's cache file's worker ID; a file that cannot be read is logged and left out. */
  private async readLeafCache(): Promise<number | undefined> {
    try {
      return await this.leafCacheFile?.read();
    } catch (error) {
      this.options.logger.log('warn', 'worker.leaf_cache_failed', {
        cache: this.leafCacheFile?.path,
        error: describeError(error),
      });
      return undefined;
    }
  }

  /** Leaf's cache file, `workerID=<n>`; a failure is logged (Leaf logs and goes on, too). */
  private async writeLeafCache(): Promise<void> {
    try {
      await this.leafCacheFile?.write(this.workerId);
    } catch (error) {
      this.options.logger.log('warn', 'worker.leaf_cache_failed', {
        cache: this.leafCacheFile?.path,
        error: describeError(error),
      });
    }
  }

  private clientOptions() {
    const { connect, timeoutMs, clock } = this.options;
    return { connect, timeoutMs, clock, sessionTimeoutMs: SESSION_TIMEOUT_MS };
  }

  /**
   * Leaf's fallback, with the clock still checked: the cache records the last time used. Leaf's own
   * cache file holds a worker ID but no time, so alone it is not enough: the IDs Leaf issued are
   * unknown, as with no cache at all (docs/worker-ids.md); and when it names another worker ID than
   * frond's, one of them is stale and nothing here says which.
   */
  private async startFromCache(
    mine: WorkerCache | undefined,
    leafCached: number | undefined,
    error: unknown,
    client: ZooKeeperClient | undefined,
  ): Promise<WorkerLease> {
    const leafPath = this.leafCacheFile?.path;
    const refuse = async (message: string) => {
      await client?.close();
      return new FrondError('WORKER_ID_UNAVAILABLE', `${describeError(error)}; ${message}`, { cause: error });
    };
    if (mine === undefined && leafCached !== undefined)
      throw await refuse(
        `Leaf's cache ${leafPath} gives worker ID ${leafCached} but no time, so the IDs it was used for cannot be stayed above (${this.cacheFile.path} is missing): start once with ZooKeeper reachable`,
      );
    if (mine === undefined)
      throw await refuse(
        `and ${this.cacheFile.path} holds no worker ID for ${this.identity}: a node's first start needs ZooKeeper`,
      );
    if (leafCached !== undefined && leafCached !== mine.workerId)
      throw await refuse(
        `${this.cacheFile.path} gives worker ID ${mine.workerId} but Leaf's cache ${leafPath} gives ${leafCached} (a Leaf node of this port registered since?): start with ZooKeeper reachable`,
      );
    this.workerId = mine.workerId;
    this.node = mine.node;
    this.cached = mine.lastTimestamp;
    this.options.logger.log('warn', 'worker.zookeeper_unreachable_using_cache', {
      workerId: mine.workerId,
      lastTimestamp: mine.lastTimestamp,
      cache: this.cacheFile.path,
      error: describeError(error),
    });
    await this.writeLeafCache();
    // Reports resume once ZooKeeper answers again.
    this.client = client ?? ZooKeeperClient.open(this.clientOptions());
    this.scheduleReport();
    return { workerId: mine.workerId, lastTimestamp: mine.lastTimestamp };
  }

  private async register(client: ZooKeeperClient, mine: WorkerCache | undefined) {
    const { clock, host, port } = this.options;
    const forever = this.paths.forever;
    try {
      await client.mkdirp(forever);
    } catch (error) {
      // ZooKeeper does not create a chroot; neither does Curator, so Leaf needs it made too.
      const chroot = /\/.*$/.exec(this.options.connect)?.[0];
      if (chroot === undefined || !isZooKeeperError(error, 'NO_NODE')) throw error;
      throw new FrondError(
        'INVALID_CONFIG',
        `ZooKeeper has no ${chroot}, the chroot of ${this.options.connect}: create it (zkCli.sh create ${chroot}) and start again`,
        { cause: error },
      );
    }
    const listed = await client.getChildren(forever);
    let children = listed.children;
    let own = lowestOf(children, this.identity);
    const existed = own !== undefined;
    // ZooKeeper numbers a child from the parent's cversion (children created and deleted so far)
    // and never reuses a number, so the next one is known before creating anything.
    const maxWorkerId = this.options.maxWorkerId ?? MAX_WORKER_ID;
    if (own === undefined && listed.stat.cversion > maxWorkerId)
      throw this.exhausted(listed.stat.cversion, children.length);
    // Before anything is written: a refused node leaves neither a node nor a misleading report.
    if (this.options.maxClockSkewMs > 0) await this.compareClocks(client, children);
    if (own === undefined) {
      const path = await client.create(
        `${forever}/${this.identity}-`,
        leafNodeData(host, port, clock.now()),
        CreateMode.PERSISTENT_SEQUENTIAL,
      );
      const created = parseForeverNode(path.slice(forever.length + 1));
      if (created === undefined)
        throw new FrondError('INTERNAL', `ZooKeeper created ${path}, which does not parse`);
      // Two starts of one identity at once create two nodes: both keep the lowest.
      children = (await client.getChildren(forever)).children;
      own = lowestOf(children, this.identity) ?? created;
      if (own.node !== created.node || created.workerId > maxWorkerId)
        await client.remove(`${forever}/${created.node}`).catch(() => {});
    }
    if (own.workerId > maxWorkerId) throw this.exhausted(own.workerId, children.length);
    if (await client.exists(`${this.paths.workers}/${own.workerId}`))
      throw new FrondError(
        'WORKER_ID_UNAVAILABLE',
        `worker ID ${own.workerId} (${forever}/${own.node}) was also leased in lease mode under the same name ${this.options.name}; give Leaf mode and lease mode different names`,
      );
    const path = `${forever}/${own.node}`;
    if (existed)
      await this.refuseLiveHolder(client, own, mine?.node === own.node ? mine.nodeVersion : undefined);
    // A node created just now holds this start's own time, not a time an earlier run used.
    const reported = existed ? (leafNodeTimestamp((await client.getData(path)).data) ?? 0) : 0;
    // Report now, but never lower the stored time: a clock behind it must still be caught at the next start.
    const written = Math.max(clock.now(), reported);
    this.nodeVersion = (await client.setData(path, leafNodeData(host, port, written))).version;
    return { own, existed, reported, written };
  }

  /**
   * Refuses to start with a clock further than `maxClockSkewMs` from the other live nodes'. ZooKeeper's
   * clock now is the mtime of a write to `/snowflake/{name}/clock` (a node of frond's own; Leaf reads
   * only `forever`), with this node's clock taken halfway through that round trip.
   */
  private async compareClocks(client: ZooKeeperClient, children: string[]): Promise<void> {
    const others = children
      .map(parseForeverNode)
      .filter((node) => node !== undefined && node.identity !== this.identity);
    if (others.length === 0) return;
    const own = await this.zookeeperNow(client);
    const reports = await Promise.all(
      others.map(async (node) => {
        if (node === undefined) return undefined;
        try {
          const { data, stat } = await client.getData(`${this.paths.forever}/${node.node}`);
          const timestamp = leafNodeTimestamp(data);
          return timestamp === undefined ? undefined : { timestamp, mtime: statLong(stat.mtime) };
        } catch {
          return undefined; // removed meanwhile
        }
      }),
    );
    // Live: reported within three report periods, by ZooKeeper's clock.
    const liveWindowMs = 3 * (this.options.reportEveryMs ?? LEAF_REPORT_EVERY_MS);
    const skew = clockSkew(
      own,
      reports.filter((report) => report !== undefined),
      liveWindowMs,
    );
    if (skew === undefined) return;
    this.options.logger.log('info', 'worker.clock_compared', { ...skew });
    const limit = this.options.maxClockSkewMs;
    if (Math.abs(skew.skewMs) <= limit) return;
    const where = `${Math.abs(skew.skewMs)} ms ${skew.skewMs < 0 ? 'behind' : 'ahead of'} the median of ${skew.liveNodes} live node(s) under ${this.paths.forever} (limit --clock-max-skew-ms ${limit})`;
    throw new FrondError(
      skew.skewMs < 0 ? 'CLOCK_MOVED_BACKWARDS' : 'WORKER_ID_UNAVAILABLE',
      `the clock is ${where}; fix the clock (NTP) and start again (--clock-max-skew-ms 0 skips this check)`,
    );
  }

  /**
   * ZooKeeper's clock now: the mtime of a write to `/snowflake/{name}/clock` (a node of frond's own;
   * Leaf reads only `forever`), with this node's clock taken halfway through that round trip.
   */
  private async zookeeperNow(client: ZooKeeperClient): Promise<ClockReport> {
    const { clock } = this.options;
    const sent = clock.now();
    let stat: ZooKeeperStat;
    try {
      stat = await client.setData(this.paths.clock, Buffer.from(String(sent)));
    } catch (error) {
      if (!(error instanceof ZooKeeperError) || error.zkCode !== 'NO_NODE') throw error;
      await client.mkdirp(this.paths.clock);
      stat = await client.setData(this.paths.clock, Buffer.from(String(sent)));
    }
    const received = clock.now();
    return { timestamp: (sent + received) / 2, mtime: statLong(stat.mtime) };
  }

  /**
   * Refuses to take a worker ID another process still reports into. Leaf writes its node every 3 s
   * while it runs (SnowflakeZookeeperHolder.java: `scheduleWithFixedDelay(… updateNewData …, 1L, 3L,
   * SECONDS)`), and so does frond, but Leaf takes an existing node of its identity without looking
   * (ibid., `nodeMap.get(listenAddress)`): two processes of one ip:port would share a worker ID. So
   * a node written within three report periods (by ZooKeeper's clock) is watched until one and a
   * half periods after that write; a write meanwhile is a live holder. A node still at the version
   * this data dir's cache file recorded (`ownVersion`) was last written by the previous process on
   * this data dir, which is gone (the data dir is locked, src/server/start/data-dir-lock.ts): no other
   * process has reported since, so there is nothing to watch.
   */
  private async refuseLiveHolder(
    client: ZooKeeperClient,
    own: ForeverNode,
    ownVersion: number | undefined,
  ): Promise<void> {
    const { clock, logger } = this.options;
    const path = `${this.paths.forever}/${own.node}`;
    const first = await client.getData(path);
    if (first.stat.version === ownVersion) return;
    const every = this.options.reportEveryMs ?? LEAF_REPORT_EVERY_MS;
    const ageMs = Math.max(0, (await this.zookeeperNow(client)).mtime - statLong(first.stat.mtime));
    if (ageMs > 3 * every) return;
    const waitMs = Math.max(0, Math.ceil(1.5 * every - ageMs));
    logger.log('info', 'worker.holder_check', { node: path, lastWriteAgoMs: ageMs, waitMs });
    const until = clock.now() + waitMs;
    for (;;) {
      const { data, stat } = await client.getData(path);
      if (stat.version !== first.stat.version) {
        const laterMs = statLong(stat.mtime) - statLong(first.stat.mtime);
        throw new FrondError(
          'WORKER_ID_UNAVAILABLE',
          `worker ID ${own.workerId} is held by a live process: ${path} (${data.toString('utf8')}) was written ${ageMs} ms before this start and again ${laterMs} ms later, as a running Leaf or frond node of ${own.identity} does every ${every / 1000} s; stop it, or give this node another identity (--advertise)`,
        );
      }
      const left = until - clock.now();
      if (left <= 0) return;
      await sleep(clock, Math.min(250, left));
    }
  }

  private exhausted(sequence: number, children: number): FrondError {
    return new FrondError(
      'WORKER_ID_UNAVAILABLE',
      `${this.paths.forever} has handed out sequence numbers up to ${sequence - 1} (${children} nodes) and worker IDs end at ${this.options.maxWorkerId ?? MAX_WORKER_ID}; Leaf mode never reuses one, so ${this.identity} gets none: use --worker-lease, another --name, or stable --advertise addresses`,
    );
  }

  /** Writes `max(cached, lastTimestamp)` into the cache file: its time never goes back. */
  private writeCache(lastTimestamp: number): Promise<void> {
    const write = async () => {
      const next = Math.max(this.cached, lastTimestamp);
      const nodeVersion = this.nodeVersion;
      await this.cacheFile.write({
        name: this.options.name,
        identity: this.identity,
        workerId: this.workerId,
        node: this.node,
        lastTimestamp: next,
        ...(nodeVersion === undefined ? {} : { nodeVersion }),
      });
      this.cached = Math.max(this.cached, next);
    };
    const done = this.cacheWrites.then(write, write);
    this.cacheWrites = done.catch(() => {});
    return done;
  }

  private scheduleReport(): void {
    if (this.closed) return;
    const every = this.options.reportEveryMs ?? LEAF_REPORT_EVERY_MS;
    this.cancelReport = this.options.clock.schedule(() => {
      void this.report().finally(() => this.scheduleReport());
    }, every);
  }

  /**
   * Leaf's 3 s report: the node's time into its node, skipped while the clock is behind the last one.
   * The node's data is read first and written only if it is older, by a compare-and-set on its
   * version: whatever this process remembers, the report never moves the node's time back (another
   * start of this identity, a Leaf node, an operator may have written a later one).
   */
  private async report(): Promise<void> {
    const client = this.client;
    const now = this.options.clock.now();
    if (this.closed || client === undefined || now <= this.lastReported) return;
    const { host, port, logger, timeoutMs } = this.options;
    const path = `${this.paths.forever}/${this.node}`;
    const write = async (): Promise<boolean> => {
      const { data, stat } = await client.getData(path);
      const stored = leafNodeTimestamp(data) ?? 0;
      if (stored >= now) {
        this.lastReported = Math.max(this.lastReported, stored);
        return true;
      }
      this.nodeVersion = (await client.setData(path, leafNodeData(host, port, now), stat.version)).version;
      this.lastReported = Math.max(this.lastReported, now);
      // The version into the cache at once, so a restart after a crash rarely has to watch the node.
      await this.writeCache(0).catch(() => {});
      return true;
    };
    // A call queued while the server is down would wait in the library's queue; bound it twice
    // (the call's own bound, and here in case the client is replaced meanwhile).
    const done = await within(
      this.options.clock,
      write().catch((error: unknown) => error),
      2 * timeoutMs,
    );
    if (done?.value === true) {
      if (this.reportFailing) logger.log('info', 'worker.report_resumed', { workerId: this.workerId });
      this.reportFailing = false;
      this.unconnectedFailures = 0;
      return;
    }
    if (!this.reportFailing)
      logger.log('warn', 'worker.report_failed', {
        workerId: this.workerId,
        error: done === undefined ? 'timed out' : describeError(done.value),
      });
    this.reportFailing = true;
    // An expired client never recovers: start a new one for the next report. Nor is a client that
    // has had no connection for three reports (9 s) left to itself: node-zookeeper-client bounds a
    // TCP connect but not the session handshake after it, so a connection taken by a server that is
    // still starting may wait for its answer forever (a CI run saw no report 10 s after ZooKeeper was
    // back). The Leaf layout holds no ephemeral node, so a new session loses nothing.
    this.unconnectedFailures = client.connected ? 0 : this.unconnectedFailures + 1;
    const stuck = this.unconnectedFailures >= 3 && this.unconnectedFailures % 3 === 0;
    if ((client.expired || stuck) && !this.closed && this.client === client) {
      // Logged once per outage (a replacement every 9 s while ZooKeeper stays down).
      if (!client.expired && this.unconnectedFailures === 3)
        logger.log('info', 'worker.zookeeper_client_replaced', { workerId: this.workerId });
      this.client = ZooKeeperClient.open(this.clientOptions());
      void client.close();
    }
  }
}

/** The lowest-numbered node of `identity` among `forever`'s children. */
function lowestOf(children: string[], identity: string): ForeverNode | undefined {
  let lowest: ForeverNode | undefined;
  for (const child of children) {
    const node = parseForeverNode(child);
    if (node?.identity === identity && (lowest === undefined || node.workerId < lowest.workerId))
      lowest = node;
  }
  return lowest;
}
