import zookeeper from 'node-zookeeper-client';
import { type Clock, sleep } from '../../core/clock.js';
import { FrondError } from '../../core/errors.js';

export type ZooKeeperStat = zookeeper.Stat;
export const CreateMode = zookeeper.CreateMode;

/**
 * A failed ZooKeeper call: `zkCode` is ZooKeeper's name for it (`NO_NODE`, `NODE_EXISTS`,
 * `SESSION_EXPIRED`, `CONNECTION_LOSS`, …) or `TIMEOUT` when frond's own bound ran out.
 */
export class ZooKeeperError extends FrondError {
  constructor(
    readonly zkCode: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super('WORKER_ID_UNAVAILABLE', message, options);
  }
}

export function isZooKeeperError(error: unknown, zkCode: string): error is ZooKeeperError {
  return error instanceof ZooKeeperError && error.zkCode === zkCode;
}

export interface ZooKeeperClientOptions {
  /** `host:port[,host:port…]`, as Leaf's `leaf.snowflake.zk.address`. */
  connect: string;
  /** Asked of the server, which clamps it to its own minimum and maximum (2 and 20 ticks by default). */
  sessionTimeoutMs: number;
  /** Bound on connecting and on each call. */
  timeoutMs: number;
  clock: Clock;
}

/** What the library keeps private but a hard close needs (see `close`). */
interface ConnectionInternals {
  state: number;
  socket?: { destroy(): void; destroyed?: boolean };
  findNextServer(callback: (server: unknown) => void): void;
}

/**
 * A promise face on node-zookeeper-client with a bound on every call. The library itself has none:
 * a request made while the server is down waits in its queue until a connection comes back, and a
 * connection that hangs is never noticed (it only sends pings). So every call here settles within
 * `timeoutMs`, and callers treat a timeout as "unknown", never as "not done".
 */
export class ZooKeeperClient {
  private readonly client: zookeeper.Client;
  private closing: Promise<void> | undefined;
  /** Set when the server said the session expired; such a client never recovers (docs/worker-ids.md). */
  expired = false;

  private constructor(private readonly options: ZooKeeperClientOptions) {
    // retries 0: frond decides what to retry. spinDelay: the pause once every server refused, 500 ms
    // instead of 1 s so a restarted server is found again quickly.
    this.client = zookeeper.createClient(options.connect, {
      sessionTimeout: options.sessionTimeoutMs,
      spinDelay: 500,
      retries: 0,
    });
    this.client.on('expired', () => {
      this.expired = true;
    });
    this.client.connect();
  }

  /** Connects, or rejects (and closes the client) once `timeoutMs` have passed. */
  static async connect(options: ZooKeeperClientOptions): Promise<ZooKeeperClient> {
    const client = new ZooKeeperClient(options);
    try {
      await client.waitConnected(options.timeoutMs);
    } catch (error) {
      await client.close();
      throw error;
    }
    return client;
  }

  /** Starts connecting in the background; calls wait (bounded) until a connection is up. */
  static open(options: ZooKeeperClientOptions): ZooKeeperClient {
    return new ZooKeeperClient(options);
  }

  get connected(): boolean {
    return this.client.getState().name === 'SYNC_CONNECTED';
  }

  /** The session ID, 8 bytes (valid once connected). */
  get sessionId(): Buffer {
    return this.client.getSessionId();
  }

  /** The session timeout the server granted (valid once connected). */
  get sessionTimeoutMs(): number {
    return this.client.getSessionTimeout();
  }

  onExpired(listener: () => void): void {
    this.client.on('expired', listener);
  }

  waitConnected(timeoutMs: number): Promise<void> {
    if (this.connected) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onConnected = () => {
        cancel();
        resolve();
      };
      const cancel = this.options.clock.schedule(() => {
        this.client.removeListener('connected', onConnected);
        reject(
          new ZooKeeperError(
            'TIMEOUT',
            `ZooKeeper ${this.options.connect} did not answer within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.client.once('connected', onConnected);
    });
  }

  create(path: string, data: Buffer | null, mode: number): Promise<string> {
    return this.call(`create ${path}`, (done) => this.client.create(path, data, mode, done));
  }

  /** Creates `path` and its parents where missing (a node that exists is fine). */
  async mkdirp(path: string): Promise<void> {
    await this.call(`mkdirp ${path}`, (done) => this.client.mkdirp(path, done));
  }

  /** The node's stat, or undefined when there is no such node. */
  async exists(path: string): Promise<ZooKeeperStat | undefined> {
    const stat = await this.call<ZooKeeperStat | null>(`exists ${path}`, (done) =>
      this.client.exists(path, done),
    );
    return stat ?? undefined;
  }

  getData(path: string): Promise<{ data: Buffer; stat: ZooKeeperStat }> {
    return this.call(`getData ${path}`, (done) =>
      this.client.getData(path, (error, data, stat) => done(error, { data: data ?? Buffer.alloc(0), stat })),
    );
  }

  setData(path: string, data: Buffer, version = -1): Promise<ZooKeeperStat> {
    return this.call(`setData ${path}`, (done) => this.client.setData(path, data, version, done));
  }

  getChildren(path: string): Promise<{ children: string[]; stat: ZooKeeperStat }> {
    return this.call(`getChildren ${path}`, (done) =>
      this.client.getChildren(path, (error, children, stat) => done(error, { children, stat })),
    );
  }

  async remove(path: string, version = -1): Promise<void> {
    await this.call(`remove ${path}`, (done) => this.client.remove(path, version, (error) => done(error, 0)));
  }

  /** Runs the operations `build` adds as one atomic multi-op. */
  async commit(what: string, build: (transaction: zookeeper.Transaction) => void): Promise<void> {
    const transaction = this.client.transaction();
    build(transaction);
    await this.call(what, (done) => transaction.commit((error, results) => done(error, results)));
  }

  /**
   * Ends the session (its ephemeral nodes go at once when the server hears it). A server that is
   * down or hung never answers, and the library would keep trying to connect, so after 600 ms (the
   * 500 ms spin delay and a little) the socket is destroyed and no new connection is made.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const manager = (this.client as unknown as { connectionManager?: ConnectionInternals })
        .connectionManager;
      if (manager) manager.findNextServer = () => {};
      const wasConnected = this.connected;
      this.client.close();
      if (wasConnected) {
        // The server answers the close and drops the connection, in a millisecond or two.
        for (let waited = 0; waited < 600 && manager?.socket && !manager.socket.destroyed; waited += 20) {
          await sleep(this.options.clock, 20);
        }
      } else {
        // A reconnection the library had already planned starts within its 500 ms spin delay.
        await sleep(this.options.clock, 600);
      }
      manager?.socket?.destroy();
    })();
    return this.closing;
  }

  private call<T>(what: string, run: (done: (error: zookeeper.Exception | null, value: T) => void) => void) {
    const { clock, connect, timeoutMs } = this.options;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const cancel = clock.schedule(() => {
        if (settled) return;
        settled = true;
        reject(
          new ZooKeeperError('TIMEOUT', `ZooKeeper ${connect}: ${what} timed out after ${timeoutMs} ms`),
        );
      }, timeoutMs);
      run((error, value) => {
        if (settled) return;
        settled = true;
        cancel();
        if (error) {
          const name = typeof error.getName === 'function' ? error.getName() : 'ERROR';
          reject(new ZooKeeperError(name, `ZooKeeper ${connect}: ${what}: ${name}`, { cause: error }));
        } else resolve(value);
      });
    });
  }
}

/** A 64-bit stat field (mtime, ephemeralOwner) as a number: ms times fit well within 2^53. */
export function statLong(field: Buffer): number {
  return Number(field.readBigInt64BE(0));
}
