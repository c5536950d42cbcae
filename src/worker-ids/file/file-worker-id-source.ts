import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerIdSource, WorkerLease } from '../../core/worker-id-source.js';
import { fileFailure } from '../../platform/data-file.js';
import { makeDirectory } from '../../platform/directory.js';
import { readJsonFile, removeTemporaries, reserveDescriptor, writeJsonAtomically } from '../json-file.js';

export const WORKER_FILE = 'snowflake-worker.json';

interface WorkerFile {
  workerId: number;
  /** The highest timestamp (ms) this node may have put in an ID. */
  lastTimestamp: number;
}

export interface FileWorkerIdSourceOptions {
  /** A fixed worker ID (`--worker-id`); without one, the file's, or a random one kept in the file. */
  workerId?: number | undefined;
  random?: () => number;
  /** Told when a random worker ID is drawn, as a warning when the data dir shows an earlier run. */
  logger?: Logger | undefined;
  /** ms since 1970 at which this process started; files older than this are an earlier run's. */
  processStartedAt?: number;
  /** The layout's largest worker ID (2^worker bits − 1); Leaf's 1023 when absent. */
  maxWorkerId?: number;
}

/**
 * The embedded worker-ID source: one JSON file in the data dir keeps the worker ID and the last
 * timestamp the node may have used, so a restart never repeats an ID even with its clock set back.
 * It knows nothing of other nodes: several nodes need distinct `--worker-id`s (or ZooKeeper/etcd).
 */
export class FileWorkerIdSource implements WorkerIdSource {
  readonly description: string;
  private readonly path: string;
  private workerId = -1;
  /**
   * The highest timestamp read from or written to the file. A write never goes below it, whatever
   * the caller asks: the file is the only bound a restart after a crash has on the past.
   */
  private held = 0;

  constructor(
    private readonly dir: string,
    private readonly options: FileWorkerIdSourceOptions = {},
  ) {
    this.path = join(dir, WORKER_FILE);
    this.description = `file:${this.path}`;
  }

  async acquire(): Promise<WorkerLease> {
    makeDirectory(this.dir, '--data-dir');
    await removeTemporaries(this.path);
    // From here on one descriptor is kept for the record: too many connections cannot stop it.
    reserveDescriptor();
    const stored = await this.read();
    const configured = this.options.workerId;
    const random = this.options.random ?? Math.random;
    const max = this.options.maxWorkerId ?? MAX_WORKER_ID;
    const workerId = configured ?? stored?.workerId ?? Math.floor(random() * (max + 1));
    if (!Number.isInteger(workerId) || workerId < 0 || workerId > max)
      throw new FrondError(
        'INVALID_CONFIG',
        configured === undefined
          ? `${this.path} holds worker ID ${workerId}, past ${max}, the largest of the layout's worker bits: the file is from a node with wider worker bits; give --worker-id, or a layout with as many worker bits as before`
          : `worker ID ${workerId} is out of range: use an integer from 0 to ${max}`,
      );
    this.workerId = workerId;
    if (configured === undefined && stored === undefined) await this.reportNewWorkerId();
    // The stored time is kept even when --worker-id changes: waiting for it is cheap, a repeat is not.
    const lastTimestamp = stored?.lastTimestamp ?? 0;
    this.held = lastTimestamp;
    // A record that cannot be written at start (a directory at its name) stops the start in one
    // line; later writes fail as TIMESTAMP_NOT_RECORDED and the node withholds IDs until one works.
    await this.write(lastTimestamp, true).catch((error: unknown) => {
      throw fileFailure(`--data-dir ${this.dir}`, this.path, 'write', error);
    });
    return { workerId: this.workerId, lastTimestamp };
  }

  record(timestamp: number): Promise<void> {
    return this.write(timestamp);
  }

  release(lastTimestamp: number): Promise<void> {
    return this.write(lastTimestamp);
  }

  /**
   * A new random worker ID is expected on a node's first start; in a data dir with files of an
   * earlier run it means the worker file was lost (deleted, or a disk restored without it), so the
   * node no longer has its old worker ID or its last timestamp: a warning an operator must see.
   */
  private async reportNewWorkerId(): Promise<void> {
    const logger = this.options.logger;
    if (logger === undefined) return;
    const startedAt = this.options.processStartedAt ?? Date.now() - process.uptime() * 1000;
    const earlier: string[] = [];
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      if (name === 'frond.pid') continue;
      const info = await stat(join(this.dir, name)).catch(() => undefined);
      if (info !== undefined && info.mtimeMs < startedAt) earlier.push(name);
    }
    if (earlier.length === 0) {
      logger.log('info', 'snowflake.worker_id_drawn', { workerId: this.workerId, file: this.path });
      return;
    }
    logger.log('warn', 'snowflake.worker_file_missing', {
      workerId: this.workerId,
      file: this.path,
      earlierFiles: earlier.slice(0, 10),
      message: `no ${WORKER_FILE} in a data dir used before: took the new random worker ID ${this.workerId}; if the file was lost, IDs may repeat another node's that holds this worker ID`,
    });
  }

  private async read(): Promise<WorkerFile | undefined> {
    const read = await readJsonFile(this.path);
    if (read === undefined) return undefined;
    const file = read.value as Partial<WorkerFile> | undefined;
    if (
      typeof file !== 'object' ||
      file === null ||
      !Number.isInteger(file.workerId) ||
      !Number.isSafeInteger(file.lastTimestamp)
    ) {
      throw new FrondError(
        'INVALID_CONFIG',
        `${this.path} is damaged; restore it, or delete it and start with the clock past the last ID issued`,
      );
    }
    return file as WorkerFile;
  }

  /** Writes `max(held, lastTimestamp)`; skips the write when that changes nothing (unless `always`). */
  private async write(lastTimestamp: number, always = false): Promise<void> {
    const next = Math.max(this.held, lastTimestamp);
    if (next === this.held && !always) return;
    const body: WorkerFile = { workerId: this.workerId, lastTimestamp: next };
    await writeJsonAtomically(this.path, body);
    this.held = Math.max(this.held, next);
  }
}
