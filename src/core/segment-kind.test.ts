import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../test/support/manual-clock.js';
import { MemoryStore } from '../../test/support/memory-store.js';
import { silentLogger } from './logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS, SegmentAllocator } from './segment-allocator.js';
import { KindChangedError, kindKey } from './tag-kind.js';

const SETTING = { domain: 'bits:20', keyCheck: 'abc' };
const OPAQUE = kindKey({ opaque: SETTING, format: null });

function setup() {
  const store = new MemoryStore();
  const allocator = new SegmentAllocator(
    store,
    new ManualClock(),
    silentLogger,
    DEFAULT_SEGMENT_ALLOCATOR_OPTIONS,
  );
  return { store, allocator };
}

/** The row deleted and created again with another kind, as an operator's SQL and `frond tag add` would. */
function recreate(store: MemoryStore, tag: string, opaque: boolean, maxId: bigint): void {
  store.rows.set(tag, { maxId, step: 10 });
  if (opaque) store.opaque.set(tag, { ...SETTING });
  else store.opaque.delete(tag);
}

describe('segments carry the kind they were granted with', () => {
  it('refuses a segment of another kind before taking an ID, and serves it in its own kind', async () => {
    const { store, allocator } = setup();
    recreate(store, 't', true, 1n);
    await assert.rejects(
      allocator.next('t'),
      (error) => error instanceof KindChangedError && error.kind.opaque?.domain === 'bits:20',
    );
    assert.equal(allocator.tryNext('t'), undefined, 'the plain fast path never takes an opaque segment');
    // Nothing was taken: the opaque side gets the segment from its first ID.
    assert.deepEqual(await allocator.nextMany('t', 3, OPAQUE), [1, 2, 3]);
    assert.equal(allocator.tryNext('t', OPAQUE), 4);
    await assert.rejects(allocator.grant('t', 2), (error) => isKindChanged(error));
    assert.equal(allocator.tryNext('t', OPAQUE), 5);
  });

  it('a tag created again with another kind: no ID of the new grant is served in the old kind', async () => {
    const { store, allocator } = setup();
    recreate(store, 't', false, 1n);
    const plain: number[] = [];
    // Plain IDs 1..; the preload of the next segment is due once 10% of the first is used.
    for (let i = 0; i < 5; i++) plain.push(Number(await allocator.next('t')));
    recreate(store, 't', true, 1_000n);
    // What the first plain segment still holds is served plain (it was granted plain); past it,
    // the next grant (opaque) is refused to the plain side.
    const served: number[] = [];
    let refused: unknown;
    for (let i = 0; i < 30 && refused === undefined; i++) {
      try {
        served.push(Number(await allocator.next('t')));
      } catch (error) {
        refused = error;
      }
    }
    assert.ok(isKindChanged(refused), `refused with ${String(refused)}`);
    assert.ok(
      served.every((id) => id < 1_000),
      `plain IDs only from plain grants: ${served.join(',')}`,
    );
    // The opaque side now takes fresh opaque grants from a new buffer.
    const opaque = await allocator.nextMany('t', 5, OPAQUE);
    assert.ok(
      opaque.every((id) => Number(id) >= 1_000),
      opaque.join(','),
    );
    await assert.rejects(allocator.next('t'), (error) => isKindChanged(error));
  });
});

function isKindChanged(error: unknown): boolean {
  return error instanceof KindChangedError;
}
