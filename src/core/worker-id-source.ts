/** What a worker-ID source hands a node: its worker ID and the last time it may have used. */
export interface WorkerLease {
  workerId: number;
  /**
   * The highest timestamp (ms since 1970) an earlier holder of this worker ID may have put in an
   * ID, or 0 if none is known. The node must not issue IDs at or below it.
   */
  lastTimestamp: number;
}

/**
 * Hands out snowflake worker IDs (0..1023). A backend (local file, ZooKeeper, etcd) implements
 * acquire / record / release; the rules about time live in the core (`SnowflakeService`).
 */
export interface WorkerIdSource {
  readonly description: string;
  acquire(): Promise<WorkerLease>;
  /**
   * Durably records that IDs with timestamps up to `timestamp` may be issued. Resolves only once
   * the record is safe: the node issues nothing above the last recorded time. The record never
   * goes down: a `timestamp` at or below the one held is a no-op (the node's clock may have
   * stepped back; the next holder of the worker ID trusts the record to bound the past).
   */
  record(timestamp: number): Promise<void>;
  /**
   * Gives the worker ID up, recording `lastTimestamp` (the last one used) unless the record is
   * already higher, which it is when the node recorded ahead: the record never goes down.
   */
  release(lastTimestamp: number): Promise<void>;
  /**
   * Lease-based sources only (a ZooKeeper session, an etcd lease), which can lose the worker ID
   * while running; a source without it holds its worker ID until `release`. Answers without I/O
   * whether the worker ID is certainly still held now; the node checks it before every batch of IDs.
   */
  valid?(): boolean;
  /**
   * Lease-based sources only: `listener` is called with a new lease (perhaps another worker ID) when
   * the source holds one again after losing it, in the same tick as `valid()` turns true again.
   */
  onRegained?(listener: (lease: WorkerLease) => void): void;
}
