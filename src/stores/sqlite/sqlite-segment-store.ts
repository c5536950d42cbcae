import { Worker } from 'node:worker_threads';
import { describeError, FrondError } from '../../core/errors.js';
import type { OpenedStore } from '../store-backend.js';
import { SqliteDatabase } from './sqlite-database.js';
import {
  fromWire,
  SQLITE_CALLS,
  type SqliteCalls,
  type SqliteMethod,
  type SqliteReply,
  type SqliteRequest,
  type SqliteWorkerData,
} from './sqlite-protocol.js';

/**
 * The worker thread of one store. From dist/ its entry is sqlite-worker.js beside this file. Under
 * tsx (tests, benchmarks) this file is TypeScript and so is the worker: Node 20 does not apply an
 * `--import tsx` to a worker's own entry ("Unknown file extension .ts"), so a two-step entry
 * registers tsx in the worker first and then imports sqlite-worker.ts. The worker takes none of the
 * process's flags: it needs none, and some stop it (`--input-type` of `node -e`: seen).
 */
function startWorker(workerData: SqliteWorkerData): Worker {
  const options = { workerData, execArgv: [] };
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./sqlite-worker.js', import.meta.url), options);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const entry = JSON.stringify(new URL('./sqlite-worker.ts', import.meta.url).href);
  return new Worker(`import(${tsx}).then((api) => { api.register(); return import(${entry}); });`, {
    ...options,
    eval: true,
  });
}

/**
 * How long `close` waits for the calls already made: two of them each held past the 5 s
 * busy_timeout by a lock another process keeps. Past it the thread is ended without them.
 */
const CLOSE_WAIT_MS = 10_000;

interface Pending {
  method: SqliteMethod;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** The calls the store posts to its worker as they are: every one but `close`, which ends it too. */
type Posted = Exclude<SqliteMethod, 'close'>;

/** A method for each call of SQLITE_CALLS but `close`, posting it to the worker (`call`). */
abstract class PostedCalls {
  protected abstract call(method: SqliteMethod, args: unknown[]): Promise<unknown>;
}
for (const method of SQLITE_CALLS) {
  if (method === 'close') continue;
  Object.defineProperty(PostedCalls.prototype, method, {
    value(this: PostedCalls, ...args: unknown[]) {
      return this.call(method, args);
    },
    writable: true,
    configurable: true,
  });
}
const WorkerCalls = PostedCalls as unknown as abstract new () => PostedCalls & {
  [M in Posted]: (...args: Parameters<SqliteCalls[M]>) => Promise<ReturnType<SqliteCalls[M]>>;
};

/**
 * The embedded default store: Leaf's `leaf_alloc` in one SQLite file (sqlite-database.ts), whose
 * calls run in a worker thread of their own. better-sqlite3 is synchronous: on the event loop, each
 * segment load's commit (an fsync with `synchronous = FULL`: 0.2 ms median, 2.9 ms at most on the
 * bench machine) held every request behind it, and a write lock held by another process (`frond
 * tag add`) up to the 5 s busy_timeout. Here the event loop only posts a message and takes the
 * answer; the worker answers in order, one call at a time, as the one connection did.
 *
 * The worker starts with the store and is unref'd while no call is pending, so an idle store keeps
 * no process alive. If it dies, the calls it had fail with STORE_UNAVAILABLE (a segment load's
 * outcome unknown, as for any store error) and the next call starts a new one; `close` ends it.
 */
export class SqliteSegmentStore extends WorkerCalls implements OpenedStore {
  readonly description: string;
  /** One file, no replica that could be promoted: see SegmentPrimitive. */
  readonly singleCopy = true;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(readonly path: string) {
    super();
    this.description = `sqlite:${path}`;
    // Opened once here, on the caller's thread, before any request: a path whose directory is
    // missing, a file that is not a database or a read-only one fails the start in one line (as
    // before the worker), instead of a node that starts and answers 503 for a file on its own disk.
    new SqliteDatabase(path).close();
    this.worker = this.start();
  }

  /**
   * Closes the connection (after the calls already made are answered) and ends the worker, in any
   * state: a worker that died or never started is simply gone, and a second call waits for the
   * first. It resolves once the thread has ended, so nothing of the store keeps the process alive.
   * The calls already made are waited for up to CLOSE_WAIT_MS; past it the thread is ended anyway
   * and the calls still open fail with STORE_UNAVAILABLE (outcome unknown, as for a crash: a
   * transaction the thread was in rolls back or has committed, never half).
   */
  close(): Promise<void> {
    this.closing ??= this.end();
    return this.closing;
  }

  private async end(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    if (worker === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.send(worker, 'close', []),
        new Promise((resolve) => {
          timer = setTimeout(resolve, CLOSE_WAIT_MS);
        }),
      ]);
    } catch {
      // The worker stopped before it answered (its calls failed with STORE_UNAVAILABLE) or the
      // connection did not close cleanly: either way the thread is ended below, which frees it.
    } finally {
      clearTimeout(timer);
      this.worker = undefined;
      await worker.terminate();
    }
  }

  protected call(method: SqliteMethod, args: unknown[]): Promise<unknown> {
    // better-sqlite3's own words for a call on a closed database, as the store answered before.
    if (this.closed) return Promise.reject(new TypeError('The database connection is not open'));
    this.worker ??= this.start();
    return this.send(this.worker, method, args);
  }

  private send(worker: Worker, method: SqliteMethod, args: unknown[]): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, method, args } satisfies SqliteRequest);
    });
  }

  private start(): Worker {
    const worker = startWorker({ path: this.path });
    let failure: unknown;
    worker.on('message', (reply: SqliteReply) => {
      const call = this.pending.get(reply.id);
      if (call === undefined) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      if (reply.ok) call.resolve(reply.value);
      else call.reject(fromWire(reply.error));
    });
    // An answer that cannot be read would leave its call waiting: end the worker, which fails it.
    worker.on('messageerror', (error) => {
      failure = error;
      void worker.terminate();
    });
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      const calls = [...this.pending.values()];
      this.pending.clear();
      for (const call of calls) {
        call.reject(
          new FrondError(
            'STORE_UNAVAILABLE',
            `${this.description}: the SQLite worker thread stopped (exit code ${code}${failure === undefined ? '' : `, ${describeError(failure)}`}) before answering ${call.method}; its outcome is unknown`,
            failure === undefined ? undefined : { cause: failure },
          ),
        );
      }
    });
    // Unref'd after the listeners, not before: adding a 'message' listener refs the worker's port
    // again, and a store opened and never called (a start that failed right after it) kept the
    // process alive for good.
    worker.unref();
    return worker;
  }
}
