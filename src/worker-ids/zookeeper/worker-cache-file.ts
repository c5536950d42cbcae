import { FrondError } from '../../core/errors.js';
import { readJsonFile, writeJsonAtomically } from '../json-file.js';

/**
 * Leaf keeps `workerID=<n>` in a temp-dir file so a node can start while ZooKeeper is down, but no
 * time, so that start skips the clock check (Leaf #97, #216). frond's file is in the data dir and
 * holds the highest timestamp the node may have used, moved forward before each use.
 */
export interface WorkerCache {
  name: string;
  /** `ip:port`, the node's identity in ZooKeeper. */
  identity: string;
  workerId: number;
  /** The node's child of `/snowflake/{name}/forever`, to report into when ZooKeeper comes back. */
  node: string;
  /** The highest timestamp (ms) the node may have put in an ID. */
  lastTimestamp: number;
  /** The node's data version after this node's last write to it: unchanged at a restart, no other process reported since. */
  nodeVersion?: number;
}

export class WorkerCacheFile {
  constructor(readonly path: string) {}

  async read(): Promise<WorkerCache | undefined> {
    const read = await readJsonFile(this.path);
    if (read === undefined) return undefined;
    const parsed = read.value as Partial<WorkerCache> | undefined;
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      typeof parsed.name !== 'string' ||
      typeof parsed.identity !== 'string' ||
      typeof parsed.node !== 'string' ||
      !Number.isInteger(parsed.workerId) ||
      !Number.isSafeInteger(parsed.lastTimestamp)
    ) {
      throw new FrondError(
        'INVALID_CONFIG',
        `${this.path} is damaged; restore it, or delete it and start with ZooKeeper reachable and the clock past the last ID issued`,
      );
    }
    return parsed as WorkerCache;
  }

  write(cache: WorkerCache): Promise<void> {
    return writeJsonAtomically(this.path, cache);
  }
}
