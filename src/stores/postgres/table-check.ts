/**
 * The table check of a store: run on the first call and shared by every later call, as
 * `onceUntilFailure` (network-sql.ts) does, and also forgotten on demand. A failed run is forgotten
 * by itself (a database that was down at start is checked once it is back); a successful one is
 * forgotten when a statement finds a table missing (PostgreSQL's 42P01: frond_fence,
 * frond_high_water, frond_tag_options or leaf_alloc dropped while the node runs), so the next
 * operation creates them again instead of every load failing until a restart.
 */
export class TableCheckOnce {
  private done: Promise<void> | undefined;

  constructor(private readonly task: () => Promise<unknown>) {}

  run(): Promise<void> {
    this.done ??= this.task().then(
      () => undefined,
      (error: unknown) => {
        this.done = undefined;
        throw error;
      },
    );
    return this.done;
  }

  /** The next `run` checks again; a check in flight still settles for those waiting on it. */
  forget(): void {
    this.done = undefined;
  }
}
