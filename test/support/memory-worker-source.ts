import type { WorkerIdSource, WorkerLease } from '../../src/core/worker-id-source.js';

/** A WorkerIdSource in memory: what a node records survives into the next `acquire`, like a file. */
export class MemoryWorkerSource implements WorkerIdSource {
  readonly description = 'memory:';
  readonly records: number[] = [];
  released: number | undefined;

  constructor(
    public workerId = 7,
    public lastTimestamp = 0,
  ) {}

  async acquire(): Promise<WorkerLease> {
    return { workerId: this.workerId, lastTimestamp: this.lastTimestamp };
  }

  async record(timestamp: number): Promise<void> {
    this.records.push(timestamp);
    this.lastTimestamp = timestamp;
  }

  async release(lastTimestamp: number): Promise<void> {
    this.released = lastTimestamp;
    this.lastTimestamp = lastTimestamp;
  }
}
