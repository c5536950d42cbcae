import type { Worker } from 'node:cluster';
import { describeError, FrondError, type FrondErrorCode, isFrondError } from '../../core/errors.js';
import type { StartFailed } from './messages.js';

/** What a worker tells the primary when its start failed: the line `frond` would print, and its code. */
export function startFailed(error: unknown): StartFailed {
  return {
    type: 'frond.start_failed',
    message: describeError(error),
    code: isFrondError(error) ? error.code : undefined,
  };
}

/** Sends `message` to the primary; resolves with whether it went out (before the worker disconnects). */
export function tellPrimary(worker: Worker, message: StartFailed): Promise<boolean> {
  if (!worker.isConnected()) return Promise.resolve(false);
  return new Promise((resolve) => {
    worker.send(message, (error) => resolve(error === null));
  });
}

/**
 * A `--workers` node that did not start, as the primary reports it: the first failing worker's own
 * line and code (so its exit code), or, for a worker that ended without saying why (a crash, a
 * signal), which one it was.
 */
export class WorkerStartError extends FrondError {
  constructor(
    readonly worker: number,
    code: FrondErrorCode,
    message: string,
  ) {
    super(code, message);
  }

  static ended(
    worker: number,
    pid: number | undefined,
    code: number | null,
    signal: string | null,
  ): WorkerStartError {
    const how = signal === null ? `with code ${code}` : `on ${signal}`;
    return new WorkerStartError(
      worker,
      // A worker exits 2 on bad usage or configuration, as `frond` does.
      code === 2 ? 'INVALID_CONFIG' : 'INTERNAL',
      `--workers: worker ${worker} (pid ${pid}) exited ${how} before it served, so the node did not start; its output says why`,
    );
  }
}
