import { closedError, FrondClientError } from './errors.js';

export interface BufferOptions {
  /** The smallest batch asked for. */
  minBatchSize: number;
  /** The largest batch asked for (the server's limits: 100,000,000 IDs a grant, 10,000 snowflakes). */
  maxBatchSize: number;
  /** A batch should last about this long at the caller's measured rate, in ms. */
  batchTargetMs: number;
  now: () => number;
}

/** What `state()` reports about one buffer. */
export interface BufferState {
  /** IDs held in memory now (current batch and the one fetched ahead). */
  available: number;
  /** The size of the next batch, adapted to the caller's rate. */
  batchSize: number;
  /** Batches requested so far. */
  fetches: number;
  fetching: boolean;
  /** Calls waiting for a batch. */
  waiting: number;
  /** The last failed fetch, until one succeeds. */
  lastError: FrondClientError | undefined;
}

type Waiter<Id> =
  | { many: false; resolve: (id: Id) => void; reject: (error: unknown) => void }
  | { many: true; count: number; out: Id[]; resolve: (ids: Id[]) => void; reject: (error: unknown) => void };

/**
 * The lifecycle shared by the segment and snowflake buffers: calls that find the buffer empty wait
 * in order; one fetch at a time; the batch size follows the caller's rate; a fetch that fails
 * rejects the waiting calls with its error (nothing buffered is lost) and the next call fetches
 * again. Subclasses own the IDs and the hot path (`tryTake`).
 */
export abstract class IdBuffer<Id, Batch> {
  /** The hot path calls `prefetch()` once it hands out an ID at or above this; Infinity: do not. */
  protected prefetchAt = Number.POSITIVE_INFINITY;
  protected fetching = false;
  protected closed = false;
  /** True while an arrived batch is handed to waiting calls: they take it whatever its age. */
  protected serving = false;
  private readonly waiters: Waiter<Id>[] = [];
  private scheduled: ReturnType<typeof defer> | undefined;
  private size: number;
  private fetches = 0;
  private lastError: FrondClientError | undefined;
  // For the rate: when the last fetch started, what was held then, and what arrived since.
  private lastFetchAt = Number.NaN;
  private heldAtLastFetch = 0;
  private receivedSinceFetch = 0;

  constructor(protected readonly options: BufferOptions) {
    this.size = options.minBatchSize;
  }

  /** The next buffered ID, or `undefined` when none is. Starts a fetch ahead, never one on empty. */
  abstract tryTake(): Id | undefined;
  /** Moves up to `count - out.length` buffered IDs into `out`, without starting a fetch. */
  protected abstract takeInto(out: Id[], count: number): void;
  /** IDs held, usable or not yet checked for age. */
  protected abstract held(): number;
  protected abstract load(count: number, startedAt: number): Promise<Batch>;
  protected abstract countOf(batch: Batch): number;
  /** Whether the current batch still has IDs to hand out. */
  protected abstract hasCurrent(): boolean;
  /** Makes `batch` the current one. */
  protected abstract install(batch: Batch): void;
  /** A batch that arrived while the current one still had IDs: the second half of the double buffer. */
  protected nextBatch: Batch | undefined;

  /** Takes an arrived batch in: as the current one if that is used up, else as the next. */
  protected accept(batch: Batch): void {
    if (this.hasCurrent()) this.nextBatch = batch;
    else this.install(batch);
  }

  /** Whether a batch is already waiting behind the current one. */
  protected hasNext(): boolean {
    return this.nextBatch !== undefined;
  }
  /** Drops every buffered ID (on close). */
  protected abstract clear(): void;
  /** The caller's rate times this is the wanted batch size. */
  protected targetMs(): number {
    return this.options.batchTargetMs;
  }

  /**
   * The next buffered ID, or `undefined` (a fetch then starts). Never throws and never waits: the
   * same contract as the server's `tryNext`; `next()` waits, or rejects with the reason (closed,
   * server errors).
   */
  tryNext(): Id | undefined {
    const id = this.tryTake();
    if (id === undefined && !this.closed) this.fetch();
    return id;
  }

  /** The next ID: at once from the buffer (an already resolved promise), else after a fetch. */
  next(): Promise<Id> {
    const id = this.tryTake();
    return id === undefined ? this.wait() : Promise.resolve(id);
  }

  nextMany(count: number): Promise<Id[]> {
    const out: Id[] = [];
    if (this.waiters.length === 0) this.takeInto(out, count);
    if (out.length === count) return Promise.resolve(out);
    if (this.closed) return Promise.reject(closedError());
    return new Promise<Id[]>((resolve, reject) => {
      this.waiters.push({ many: true, count, out, resolve, reject });
      this.fetch();
    });
  }

  private wait(): Promise<Id> {
    if (this.closed) return Promise.reject(closedError());
    return new Promise<Id>((resolve, reject) => {
      this.waiters.push({ many: false, resolve, reject });
      this.fetch();
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cancelScheduled();
    this.prefetchAt = Number.POSITIVE_INFINITY;
    this.clear();
    this.rejectWaiters(closedError());
  }

  state(): BufferState {
    return {
      available: this.held(),
      batchSize: this.size,
      fetches: this.fetches,
      fetching: this.fetching,
      waiting: this.waiters.length,
      lastError: this.lastError,
    };
  }

  /**
   * Called from the hot path when the buffer runs low: the fetch starts on the next turn of the
   * event loop, not inside the caller's call, because building a request with `fetch` takes some
   * 40–200 µs of synchronous work, as long as handing out 10,000 buffered IDs.
   */
  protected prefetch(): void {
    this.prefetchAt = Number.POSITIVE_INFINITY;
    if (this.scheduled !== undefined || this.fetching || this.closed || this.hasNext()) return;
    this.scheduled = defer(() => {
      this.scheduled = undefined;
      this.fetch();
    });
  }

  /** Starts a fetch now unless one is running, a batch is already waiting, or the buffer is closed. */
  protected fetch(): void {
    this.prefetchAt = Number.POSITIVE_INFINITY;
    this.cancelScheduled();
    if (this.fetching || this.closed || this.hasNext()) return;
    this.fetching = true;
    const now = this.options.now();
    const count = this.nextCount(now);
    this.fetches++;
    this.load(count, now).then(
      (batch) => this.arrived(batch),
      (error: unknown) => this.failed(error),
    );
  }

  private arrived(batch: Batch): void {
    this.fetching = false;
    if (this.closed) return;
    this.lastError = undefined;
    this.receivedSinceFetch += this.countOf(batch);
    this.accept(batch);
    this.serving = true;
    try {
      this.serveWaiters();
    } finally {
      this.serving = false;
    }
    // Calls still waiting (a large nextIds, or many callers at once) need another batch now.
    if (this.waiters.length > 0) this.fetch();
  }

  private failed(error: unknown): void {
    this.fetching = false;
    const failure =
      error instanceof FrondClientError
        ? error
        : new FrondClientError('INTERNAL', `fetching a batch failed: ${String(error)}`, { cause: error });
    this.lastError = failure;
    // A failed fetch ahead is not repeated from the hot path: the IDs still buffered are handed out,
    // and once they run out the next call fetches again (with its own retries).
    this.rejectWaiters(failure);
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0) {
      const waiter = this.waiters[0] as Waiter<Id>;
      try {
        if (waiter.many) {
          this.takeInto(waiter.out, waiter.count);
          if (waiter.out.length < waiter.count) return;
          this.waiters.shift();
          waiter.resolve(waiter.out);
        } else {
          const id = this.tryTake();
          if (id === undefined) return;
          this.waiters.shift();
          waiter.resolve(id);
        }
      } catch (error) {
        // A conversion failed (UNSAFE_INTEGER): it belongs to this caller only.
        this.waiters.shift();
        waiter.reject(error);
      }
    }
  }

  private cancelScheduled(): void {
    if (this.scheduled === undefined) return;
    cancelDefer(this.scheduled);
    this.scheduled = undefined;
  }

  private rejectWaiters(error: unknown): void {
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  /**
   * The size of the next batch: what the caller took since the last fetch, per ms, times the target
   * duration; at least what the waiting calls need. It grows at once to the caller's rate and halves
   * at most per fetch, so one pause does not undo what a steady rate built up.
   */
  private nextCount(now: number): number {
    const { minBatchSize, maxBatchSize } = this.options;
    const held = this.held();
    if (!Number.isNaN(this.lastFetchAt)) {
      const taken = this.heldAtLastFetch + this.receivedSinceFetch - held;
      const elapsed = Math.max(1, now - this.lastFetchAt);
      const wanted = Math.ceil((taken * this.targetMs()) / elapsed);
      this.size = clamp(Math.max(wanted, Math.floor(this.size / 2)), minBatchSize, maxBatchSize);
    }
    this.lastFetchAt = now;
    this.heldAtLastFetch = held;
    this.receivedSinceFetch = 0;
    let demand = 0;
    for (const waiter of this.waiters) demand += waiter.many ? waiter.count - waiter.out.length : 1;
    return clamp(Math.max(this.size, demand), minBatchSize, maxBatchSize);
  }
}

// setImmediate runs after pending I/O, so a caller looping over buffered IDs is not interrupted; the
// fallback serves runtimes without it.
const defer: (run: () => void) => unknown =
  typeof setImmediate === 'function' ? setImmediate : (run) => setTimeout(run, 0);
const cancelDefer: (handle: unknown) => void =
  typeof clearImmediate === 'function'
    ? (handle) => clearImmediate(handle as ReturnType<typeof setImmediate>)
    : (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>);

function clamp(value: number, min: number, max: number): number {
  return Math.max(min, Math.min(max, value));
}
