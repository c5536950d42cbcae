import {
  type CataloguedStore,
  catalogueCalls,
  opaqueNameUsed,
  type TagCatalogue,
  withCatalogue,
} from '../../core/tag-catalogue.js';
import type { OpenedStore } from '../store-backend.js';
import { FencedStore, type FencedStoreOptions } from './fenced-store.js';

/**
 * A store as a node serves from it (`frond serve`, segment-mode.ts): its segments through
 * `FencedStore`, which wraps the store's primitive, and its catalogue beside them, refusing as an
 * opaque tag a name this node served (`refuseServedNames`). Closing it closes the store.
 */
export function servedStore(store: OpenedStore, options: FencedStoreOptions): CataloguedStore {
  const fenced = new FencedStore(store, options);
  return withCatalogue(fenced, refuseServedNames(store, fenced));
}

/**
 * `catalogue`, refusing an opaque tag under a name `fenced` was granted ranges of and whose row is
 * gone (a row that is there is TAG_EXISTS, from the store). The database keeps such names in
 * frond_high_water and refuses them itself; this is the record of a database restored from before
 * this node served the name, which lacks it.
 */
export function refuseServedNames(catalogue: TagCatalogue, fenced: FencedStore): TagCatalogue {
  return {
    ...catalogueCalls(catalogue),
    async addTag(tag, opaque) {
      if (opaque !== undefined && fenced.hasServed(tag.tag) && (await catalogue.tag(tag.tag)) === undefined)
        throw opaqueNameUsed(tag.tag);
      return catalogue.addTag(tag, opaque);
    },
  };
}
