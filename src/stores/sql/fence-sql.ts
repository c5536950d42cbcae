import { type ExactText, recordOf } from '../new-names.js';

// SQL fragments the PostgreSQL and MySQL fences share, word for word: both databases read them the
// same, and a fence that raised from another floor on one of them served IDs twice after a restore.

/**
 * A row's floor in the fence's UPDATE of leaf_alloc: its max_id, or the high-water recorded above
 * it. A row put back lower by hand was granted from its frond_high_water; raised from max_id, a
 * restore of a dump taken after that landed the fence below ranges served after the dump (300 IDs
 * twice on each database).
 */
export const fenceFloor = (exact?: ExactText) =>
  `GREATEST(max_id, ${recordOf('leaf_alloc.biz_tag', 'max_id', exact)})`;

/**
 * A frond_high_water row `h` whose tag has no row in leaf_alloc: a removed tag, or the new-names
 * record (src/stores/new-names.ts), which the fence raises with them.
 */
export const ROW_GONE = 'NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = h.biz_tag)';
