import cluster, { type Worker } from 'node:cluster';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES, FrondError, isFrondError } from '../../core/errors.js';
import type { LogEvent, Logger } from '../../core/logger.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import { WORKER_FILE } from '../../worker-ids/file/file-worker-id-source.js';
import { lockDataDir } from '../start/data-dir-lock.js';
import { assertPortFree } from '../start/listen.js';
import type { ServeConfig } from '../start/serve-config.js';
import { readStartFiles } from '../start/start-files.js';
import { aggregateFor } from './aggregate.js';
import { type AggregateAsk, ASK, type Assignment, type Serving, type StartFailed } from './messages.js';
import { workerLink } from './worker-link.js';
import { startFailed, tellPrimary, WorkerStartError } from './worker-start.js';

/**
 * Worker i keeps its lock, worker-ID file and segment high-water in `<data-dir>/worker-<i>`; the
 * store is shared. The high-water is the node's: `HighWaterFile` finds the other workers' files by
 * this name (cluster-high-water.test.ts keeps the two in step).
 */
export function workerDataDir(dataDir: string, index: number): string {
  return join(dataDir, `worker-${index}`);
}

/**
 * The snowflake worker IDs of `count` workers. With `--worker-id W`, worker i gets W + i. Without,
 * each keeps the ID in its own worker file, and workers without one get random IDs unused by the
 * others: two processes of one machine drawing at random would share an ID once in 1024 starts
 * (for 2 workers), and with it every ID of every millisecond both serve.
 */
export function planWorkerIds(
  dataDir: string,
  workerId: number | undefined,
  count: number,
  random: (min: number, max: number) => number = randomInt,
  maxWorkerId: number = MAX_WORKER_ID,
): number[] {
  if (workerId !== undefined) {
    const last = workerId + count - 1;
    if (last > maxWorkerId) {
      throw new FrondError(
        'INVALID_CONFIG',
        `--worker-id ${workerId} with --workers ${count} gives worker IDs up to ${last}, above ${maxWorkerId}; use --worker-id ${maxWorkerId + 1 - count} or lower`,
      );
    }
    return Array.from({ length: count }, (_, i) => workerId + i);
  }
  if (count > maxWorkerId + 1) {
    // Drawing at random for more workers than there are worker IDs never ended (seen with one
    // worker bit and --workers 3: a spin at 100% of a core, nothing printed, no port).
    throw new FrondError(
      'INVALID_CONFIG',
      `--workers ${count} needs ${count} worker IDs, and the layout has ${maxWorkerId + 1} (0 to ${maxWorkerId}); use --workers ${maxWorkerId + 1} or fewer, or more worker bits in --snowflake-layout`,
    );
  }
  const stored = Array.from({ length: count }, (_, i) => storedWorkerId(workerDataDir(dataDir, i)));
  const used = new Set<number>();
  stored.forEach((id, i) => {
    if (id === undefined) return;
    if (used.has(id)) {
      throw new FrondError(
        'INVALID_CONFIG',
        `${join(workerDataDir(dataDir, i), WORKER_FILE)} holds worker ID ${id}, which another worker of this node also holds; delete one of the files or start with --worker-id`,
      );
    }
    used.add(id);
  });
  return stored.map((id) => {
    if (id !== undefined) return id;
    // At random, a bounded number of times; then the next free one up from a random start. Free
    // ones remain: at most count - 1 are used (stored IDs past the bits are the worker's to refuse).
    let pick = random(0, maxWorkerId + 1);
    for (let tries = 0; used.has(pick) && tries < 64; tries++) pick = random(0, maxWorkerId + 1);
    for (let step = 0; used.has(pick) && step <= maxWorkerId; step++) pick = (pick + 1) % (maxWorkerId + 1);
    used.add(pick);
    return pick;
  });
}

/** The worker ID in a worker file, if there is a readable one (a damaged one is the worker's to report). */
function storedWorkerId(dir: string): number | undefined {
  try {
    const { workerId } = JSON.parse(readFileSync(join(dir, WORKER_FILE), 'utf8')) as { workerId?: unknown };
    return Number.isInteger(workerId) ? (workerId as number) : undefined;
  } catch {
    return undefined;
  }
}

/** Worker lines carry `worker`; `listening` and `stopped` become `worker.*`, as the primary logs those for the node. */
function workerLogger(logger: Logger, index: number): Logger {
  return {
    log(level, event, fields) {
      const renamed: LogEvent = event === 'listening' || event === 'stopped' ? `worker.${event}` : event;
      logger.log(level, renamed, { worker: index, ...fields });
    },
  };
}

/**
 * In a process forked by `runPrimary`: asks the primary for its place, runs `serve` with its own
 * data dir and worker ID, and disconnects from the primary once `serve` ends (the IPC channel would
 * otherwise keep the process alive).
 */
export async function runWorker(
  config: ServeConfig,
  logger: Logger,
  serve: (config: ServeConfig, logger: Logger) => Promise<number>,
): Promise<number> {
  const worker = cluster.worker;
  if (worker === undefined) throw new FrondError('INTERNAL', 'runWorker outside a cluster worker');
  let link: ReturnType<typeof workerLink> | undefined;
  try {
    const assignment = await new Promise<Assignment>((resolve) => {
      const onMessage = (message: unknown) => {
        if ((message as Assignment | undefined)?.type !== 'frond.assignment') return;
        worker.off('message', onMessage);
        resolve(message as Assignment);
      };
      worker.on('message', onMessage);
      worker.send(ASK);
    });
    link = workerLink(worker, assignment.index);
    const own: ServeConfig = {
      ...config,
      dataDir: workerDataDir(config.dataDir, assignment.index),
      workerId: assignment.workerId,
      cluster: link,
    };
    try {
      return await serve(own, workerLogger(logger, assignment.index));
    } catch (error) {
      // `serve` throws only when the start fails. The primary prints the line for the node, once
      // however many workers fail alike (each would print its own); this worker prints it only
      // when the primary is gone.
      if (!(await tellPrimary(worker, startFailed(error)))) throw error;
      return isFrondError(error) ? ERROR_CODES[error.code].exitCode : 1;
    }
  } finally {
    link?.close();
    if (worker.isConnected()) worker.disconnect();
  }
}

/**
 * `frond serve --workers N`: N worker processes (node:cluster), each a full node with its own
 * segments, snowflake worker ID and data-dir lock, all on one port and one store. The primary
 * holds the node's data dir, hands out places, and logs `listening` once every worker serves (its
 * store open and its worker ID taken, not merely its port bound). A worker that fails before that
 * fails the start: the others are stopped and the primary rejects with the first failure's line,
 * which `frond` prints once, with its exit code. After the start the primary restarts nothing: a
 * worker that dies is logged and the others go on serving (a restart loop would hide a crash that
 * repeats). SIGTERM or SIGINT stops every worker gracefully. Resolves with the exit code.
 */
export async function runPrimary(config: ServeConfig, count: number, logger: Logger): Promise<number> {
  const coordinator = config.snowflake ? config.coordinator : undefined;
  if (coordinator !== undefined && !coordinator.lease) {
    // Leaf's layout keys a worker ID by ip:port, and the workers share both: they would all get one
    // worker ID, and hand out the same IDs. A lease is claimed per process, whatever its identity.
    throw new FrondError(
      'INVALID_CONFIG',
      `--workers ${count} with --zk needs --worker-lease: Leaf's ZooKeeper layout gives one worker ID per ip:port, and the workers share the port`,
    );
  }
  // The files the settings name, then the port its workers will share, before anything is locked
  // or forked (start-files.ts, listen.ts).
  readStartFiles(config);
  await assertPortFree(config);
  const unlock = lockDataDir(config.dataDir);
  try {
    // With a coordinator, each worker claims its own worker ID from it.
    const workerIds =
      config.snowflake && coordinator === undefined
        ? planWorkerIds(config.dataDir, config.workerId, count, randomInt, config.layout.maxWorkerId)
        : [];
    return await supervise(config, count, workerIds, logger);
  } finally {
    unlock();
  }
}

function supervise(config: ServeConfig, count: number, workerIds: number[], logger: Logger): Promise<number> {
  return new Promise((resolve, reject) => {
    /** The workers alive, and every worker forked with its index (a message may come after its exit). */
    const workers = new Map<Worker, number>();
    const forked = new Map<Worker, number>();
    const serving = new Set<number>();
    let url: string | undefined;
    let stopping = false;
    let failed = false;
    /** Why the node did not start: a worker's own line, which wins over a worker that just ended. */
    let reported: WorkerStartError | undefined;
    let ended: WorkerStartError | undefined;
    let killTimer: NodeJS.Timeout | undefined;

    const stopAll = (reason: string) => {
      if (stopping) return;
      stopping = true;
      logger.log('info', 'shutdown', { signal: reason, workers: workers.size });
      for (const worker of workers.keys()) worker.process.kill('SIGTERM');
      // Each worker waits up to shutdownTimeoutMs for its requests, then up to handBackTimeoutMs
      // to hand its segments' unused IDs back; then the primary stops waiting (what a killed
      // worker held is reported as a crash by its next start, from its data dir).
      killTimer = setTimeout(
        () => {
          for (const worker of workers.keys()) worker.process.kill('SIGKILL');
        },
        config.shutdownTimeoutMs + (config.segment ? config.handBackTimeoutMs : 0) + 5_000,
      );
    };
    const onSigterm = () => stopAll('SIGTERM');
    const onSigint = () => stopAll('SIGINT');
    process.on('SIGTERM', onSigterm);
    process.on('SIGINT', onSigint);

    const onServing = (index: number, at: string) => {
      serving.add(index);
      url ??= at;
      if (serving.size < count || stopping) return;
      logger.log('info', 'listening', {
        url,
        workers: count,
        workerPids: [...workers.keys()].map((worker) => worker.process.pid),
        snowflakeWorkerIds: !config.snowflake
          ? 'off'
          : config.coordinator
            ? 'from the coordinator'
            : workerIds,
      });
    };

    let collections = 0;
    cluster.on('message', (worker, message: unknown) => {
      const type = (message as { type?: unknown } | undefined)?.type;
      if (type === 'frond.aggregate?') {
        aggregateFor([...workers.keys()], worker, message as AggregateAsk, () => collections++);
        return;
      }
      const index = forked.get(worker);
      if (index === undefined) return;
      if (type === ASK.type) {
        const assignment: Assignment = { type: 'frond.assignment', index, workerId: workerIds[index] };
        worker.send(assignment);
      } else if (type === 'frond.serving') {
        onServing(index, (message as Serving).url);
      } else if (type === 'frond.start_failed') {
        const { code, message: line } = message as StartFailed;
        reported ??= new WorkerStartError(index, code ?? 'INTERNAL', line);
        failed = true;
        stopAll(`worker ${index} failed to start`);
      }
    });
    cluster.on('exit', (worker, code, signal) => {
      const index = forked.get(worker) as number;
      workers.delete(worker);
      const clean = code === 0 && signal === null;
      const started = serving.size === count;
      if (!stopping) {
        failed = true;
        logger.log('error', 'worker.exited', { worker: index, pid: worker.process.pid, code, signal });
        // A worker that ends before all serve means the node cannot start: stop the others.
        if (!started) {
          ended ??= WorkerStartError.ended(index, worker.process.pid, code, signal);
          stopAll(`worker ${index} failed to start`);
        }
      } else if (!clean) {
        failed = true;
        logger.log('warn', 'worker.exited', { worker: index, pid: worker.process.pid, code, signal });
      }
      finishOnceAllGone();
    });
    // A worker's last message (why its start failed) may be read after its exit: the node's end
    // waits for every channel to close as well.
    cluster.on('disconnect', () => finishOnceAllGone());
    let finished = false;
    const finishOnceAllGone = () => {
      if (finished || workers.size > 0 || [...forked.keys()].some((worker) => worker.isConnected())) return;
      finished = true;
      clearTimeout(killTimer);
      process.off('SIGTERM', onSigterm);
      process.off('SIGINT', onSigint);
      cluster.removeAllListeners('message').removeAllListeners('exit').removeAllListeners('disconnect');
      logger.log(failed ? 'warn' : 'info', 'stopped', { workers: count });
      const notStarted = reported ?? ended;
      if (notStarted !== undefined) reject(notStarted);
      else resolve(failed ? 1 : 0);
    };

    for (let index = 0; index < count; index++) {
      const worker = cluster.fork();
      workers.set(worker, index);
      forked.set(worker, index);
    }
    logger.log('info', 'cluster.forked', {
      workers: count,
      workerPids: [...workers.keys()].map((worker) => worker.process.pid),
    });
  });
}
