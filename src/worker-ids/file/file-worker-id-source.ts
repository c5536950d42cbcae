import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { FrondError } from '../../core/errors.js';
import { assertWorkerId, MAX_WORKER_ID } from '../../core/snowflake-layout.js';
import type { WorkerIdSource, WorkerLease } from '../../core/worker-id-source.js';
import { readJsonFile, writeJsonAtomically } from '../json-file.js';

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
    await mkdir(this.dir, { recursive: true });
    const stored = await this.read();
    const configured = this.options.workerId;
    const random = this.options.random ?? Math.random;
    this.workerId = assertWorkerId(
      configured ?? stored?.workerId ?? Math.floor(random() * (MAX_WORKER_ID + 1)),
    );
    // The stored time is kept even when --worker-id changes: waiting for it is cheap, a repeat is not.
    const lastTimestamp = stored?.lastTimestamp ?? 0;
    this.held = lastTimestamp;
    await this.write(lastTimestamp, true);
    return { workerId: this.workerId, lastTimestamp };
  }

  record(timestamp: number): Promise<void> {
    return this.write(timestamp);
  }

  release(lastTimestamp: number): Promise<void> {
    return this.write(lastTimestamp);
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
