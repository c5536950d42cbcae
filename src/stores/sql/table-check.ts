/**
 * The table check of a store: run on the first call and shared by every later call, and forgotten
 * on demand. A failed run is forgotten by itself (a database that was down at start is checked once
 * it is back); a successful one is forgotten when a statement finds a table missing (frond_fence,
 * frond_high_water, frond_tag_options or leaf_alloc dropped while the node runs), so the next
 * operation creates them again instead of every load failing until a restart. `forget` names the
 * check the failed operation waited for, so that operations failing together start one new check,
 * not one each.
 */
export class TableCheckOnce {
  private done: Promise<void> | undefined;

  constructor(private readonly task: () => Promise<unknown>) {}

  run(): Promise<void> {
    if (this.done === undefined) {
      const done: Promise<void> = this.task().then(
        () => undefined,
        (error: unknown) => {
          if (this.done === done) this.done = undefined;
          throw error;
        },
      );
      this.done = done;
    }
    return this.done;
  }

  /** The next `run` checks again; a check in flight still settles for those waiting on it. */
  forget(checked: Promise<void>): void {
    if (this.done === checked) this.done = undefined;
  }
}
