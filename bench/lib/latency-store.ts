import type { Allocation } from '../../src/core/segment-store.js';
import type { NewTag, OpaqueSetting, TagRow, TagStore } from '../../src/core/tag-admin.js';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * A TagStore decorator that waits `latencyMs` (a timer, so the event loop keeps serving) before
 * every call to the store it wraps: a database 50 ms away, as seen from the node, without a network.
 */
export class LatencyStore implements TagStore {
  readonly description: string;

  constructor(
    private readonly inner: TagStore,
    private readonly latencyMs: number,
  ) {
    this.description = `${inner.description} (+${latencyMs} ms)`;
  }

  private async later<T>(call: () => Promise<T>): Promise<T> {
    if (this.latencyMs > 0) await delay(this.latencyMs);
    return call();
  }

  advance(tag: string, step?: number): Promise<Allocation | undefined> {
    return this.later(() => this.inner.advance(tag, step));
  }

  listTags(): Promise<string[]> {
    return this.later(() => this.inner.listTags());
  }

  getTag(tag: string): Promise<TagRow | undefined> {
    return this.later(() => this.inner.getTag(tag));
  }

  listRows(): Promise<TagRow[]> {
    return this.later(() => this.inner.listRows());
  }

  addTag(tag: NewTag): Promise<void> {
    return this.later(() => this.inner.addTag(tag));
  }

  setStep(tag: string, step: number): Promise<void> {
    return this.later(() => this.inner.setStep(tag, step));
  }

  tagOptions(tag: string): Promise<{ opaque: OpaqueSetting | null } | undefined> {
    return this.later(() => this.inner.tagOptions(tag));
  }

  listOpaque(): Promise<Map<string, OpaqueSetting>> {
    return this.later(() => this.inner.listOpaque());
  }

  addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): Promise<void> {
    return this.later(() => this.inner.addOpaqueTag(tag, opaque));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
