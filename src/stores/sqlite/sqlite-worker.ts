// The SQLite store's worker thread (started by sqlite-segment-store.ts, one per store): it owns the
// store's one better-sqlite3 connection and answers each request in the order it came. A call that
// waits here (a commit's fsync, up to 5 s of busy_timeout on a lock another process holds) blocks
// this thread only, not the event loop that answers requests.
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteDatabase } from './sqlite-database.js';
import {
  isSqliteMethod,
  type SqliteCalls,
  type SqliteReply,
  type SqliteRequest,
  type SqliteWorkerData,
  toWire,
} from './sqlite-protocol.js';

const port = parentPort;
if (port === null) throw new Error('sqlite-worker.ts runs as a worker thread of SqliteSegmentStore');
const { path } = workerData as SqliteWorkerData;

// Opened by the first request, and again by the next one if opening failed (a directory not yet
// writable): the open's error is then that request's answer, with its SQLite code.
let db: SqliteDatabase | undefined;

port.on('message', (request: SqliteRequest) => {
  let reply: SqliteReply;
  try {
    if (!isSqliteMethod(request.method))
      throw new TypeError(`the SQLite worker has no call ${String(request.method)}`);
    if (request.method === 'close') {
      db?.close();
      db = undefined;
      reply = { id: request.id, ok: true, value: undefined };
    } else {
      db ??= new SqliteDatabase(path);
      const call = db[request.method] as (this: SqliteCalls, ...args: unknown[]) => unknown;
      reply = { id: request.id, ok: true, value: call.apply(db, request.args) };
    }
  } catch (error) {
    reply = { id: request.id, ok: false, error: toWire(error) };
  }
  port.postMessage(reply);
});
