import { TAG_CATALOGUE_CALLS, type TagCatalogue } from '../../src/core/tag-catalogue.js';
import type { OpenedStore } from '../../src/stores/store-backend.js';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `store` behind a decorator that waits `latencyMs` (a timer, so the event loop keeps serving)
 * before every call to it, its segment primitive's and its catalogue's: a database 50 ms away, as
 * seen from the node, without a network.
 */
export function withLatency(store: OpenedStore, latencyMs: number): OpenedStore {
  const later = async <T>(call: () => Promise<T>): Promise<T> => {
    if (latencyMs > 0) await delay(latencyMs);
    return call();
  };
  const catalogue: Partial<Record<keyof TagCatalogue, unknown>> = {};
  for (const name of TAG_CATALOGUE_CALLS) {
    const call = store[name].bind(store) as (...args: unknown[]) => Promise<unknown>;
    catalogue[name] = (...args: unknown[]) => later(() => call(...args));
  }
  return {
    ...(catalogue as TagCatalogue),
    description: `${store.description} (+${latencyMs} ms)`,
    singleCopy: store.singleCopy,
    advance: (tag, step) => later(() => store.advance(tag, step)),
    fence: (request) => later(() => store.fence(request)),
    handBack: (request) => later(() => store.handBack(request)),
    recordGaps: (gaps) => later(() => store.recordGaps(gaps)),
    close: () => store.close(),
  };
}
