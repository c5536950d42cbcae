import type { SegmentStore } from '../../src/core/segment-store.js';
import { type CataloguedStore, withCatalogue } from '../../src/core/tag-catalogue.js';
import type { SegmentPrimitive } from '../../src/stores/segment-primitive.js';
import type { OpenedStore } from '../../src/stores/store-backend.js';

/**
 * A backend's primitive as the core's SegmentStore, without FencedStore and its data dir: a test
 * of the primitive itself. A database without frond's fence row (or whose row names another) is
 * fenced with no skip, which raises nothing, and the advance tried again; a node never does this
 * (FencedStore does, with the skip and its high-water), so it lives here.
 */
export function unjournaled(primitive: SegmentPrimitive): SegmentStore {
  return {
    description: primitive.description,
    async advance(tag, step) {
      for (let round = 0; round < 4; round++) {
        const result = await primitive.advance(tag, step);
        if (result === undefined) return undefined;
        if (result.kind === 'granted') return result.allocation;
        await primitive.fence({
          observedEpoch: result.epoch,
          aboveEpoch: result.epoch,
          skip: 0n,
          atLeast: new Map(),
        });
      }
      throw new Error(`${primitive.description}: the fence of tag ${tag} did not settle`);
    },
    close: () => primitive.close(),
  };
}

/** A store as the contract suite and the store tests use it: its primitive `unjournaled`, its catalogue. */
export function bare(store: OpenedStore): CataloguedStore {
  return withCatalogue(unjournaled(store), store);
}

/** What `frond db fence` does (src/cli/db.ts): a fence that always runs, raising every tag by `skip`. */
export async function fenceByHand(store: OpenedStore, skip: bigint): Promise<void> {
  try {
    const request = { observedEpoch: Number.MAX_SAFE_INTEGER, aboveEpoch: 0, skip, atLeast: new Map() };
    const outcome = await store.fence(request);
    if (!outcome.fenced) await store.fence({ ...request, aboveEpoch: outcome.epoch });
  } finally {
    await store.close();
  }
}
