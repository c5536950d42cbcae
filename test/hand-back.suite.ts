import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Gap, HeldRange } from '../src/core/id-gaps.js';
import type { TagCatalogue } from '../src/core/tag-catalogue.js';
import { NEW_NAMES } from '../src/stores/new-names.js';
import type { SegmentPrimitive } from '../src/stores/segment-primitive.js';
import { backendSkip } from './support/backend-filter.js';
import { randomTag } from './support/random-tag.js';

/** A backend's primitive and catalogue on one shared database, as a node opens it. */
export type HandBackStore = SegmentPrimitive &
  Pick<TagCatalogue, 'addTag' | 'tag' | 'listGaps' | 'gapTotals'>;

/** What the hand-back cases do behind frond's back. */
export interface HandBackRaw {
  /** The row's max_id set by hand (its frond_high_water record left as it is). */
  setMaxId(t: TestContext, tag: string, maxId: bigint, step: number): Promise<void>;
  deleteRow(t: TestContext, tag: string): Promise<void>;
  /** `frond db fence --fence-skip SKIP`. */
  fence(t: TestContext, skip: bigint): Promise<void>;
  /** What a restore from before the name leaves of it: nothing (for the new-names record a fence makes). */
  forget(t: TestContext, tag: string): Promise<void>;
  /** The tag's frond_high_water row locked elsewhere until the function commits (networked stores). */
  holdHighWater?: ((t: TestContext, tag: string) => Promise<(() => Promise<void>) | undefined>) | undefined;
}

interface Grant {
  start: bigint;
  end: bigint;
  epoch: number;
  identity: string;
}

/** One advance granted under the fence row, fenced first (no skip) where the row is missing. */
async function grant(store: SegmentPrimitive, tag: string, step?: number): Promise<Grant> {
  for (let round = 0; round < 4; round++) {
    const result = await store.advance(tag, step);
    assert.ok(result !== undefined, `tag ${tag} has a row`);
    if (result.kind === 'granted') {
      const { maxId } = result.allocation;
      return {
        start: maxId - BigInt(result.allocation.step),
        end: maxId,
        epoch: result.epoch,
        identity: result.identity,
      };
    }
    await store.fence({
      observedEpoch: result.epoch,
      aboveEpoch: result.epoch,
      skip: 0n,
      atLeast: new Map(),
    });
  }
  throw new Error('the fence did not settle');
}

const held = (start: bigint, end: bigint, reason: HeldRange['reason'] = 'unsafe_hand_back'): HeldRange => ({
  start,
  end,
  reason,
});

const ranges = (gaps: readonly Gap[]) => gaps.map((gap) => [gap.start, gap.end, gap.reason, gap.node]);

/**
 * The hand-back contract (SegmentPrimitive.handBack, recordGaps, TagCatalogue.listGaps and
 * gapTotals) every backend passes. `open` gives a store on the shared database; `openOther` a
 * second one (other connections) for the races.
 */
export function describeHandBack(
  name: string,
  open: (t: TestContext) => Promise<HandBackStore | undefined>,
  raw: HandBackRaw,
): void {
  describe(`hand-back contract: ${name}`, { skip: backendSkip(name) }, () => {
    async function withStores(
      t: TestContext,
      use: (store: HandBackStore, other: HandBackStore) => Promise<void>,
    ): Promise<void> {
      const store = await open(t);
      if (store === undefined) return;
      const other = await open(t);
      try {
        if (other !== undefined) await use(store, other);
      } finally {
        await store.close();
        await other?.close();
      }
    }

    it('alone: the tail goes back, and the next grant starts at its first ID (consecutive)', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const first = await grant(store, tag);
        const next = await grant(store, tag);
        // Served 1..50: the rest of the current segment and all of the next one are held.
        const result = await store.handBack({
          tag,
          held: [held(51n, first.end), held(next.start, next.end)],
          to: next.end,
          epoch: next.epoch,
          identity: next.identity,
          node: 'a:1',
        });
        assert.deepEqual(result.returned, { from: 51n, to: 201n });
        assert.deepEqual(result.gaps, []);
        assert.equal((await store.tag(tag))?.maxId, 51n);
        assert.deepEqual((await grant(store, tag)).start, 51n);
        assert.deepEqual(await store.listGaps(tag), []);
      }));

    it('a second call with nothing moved since changes nothing and records nothing', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        const request = {
          tag,
          held: [held(61n, g.end)],
          to: g.end,
          epoch: g.epoch,
          identity: g.identity,
          node: 'a:1',
        };
        assert.deepEqual((await store.handBack(request)).returned, { from: 61n, to: 101n });
        const again = await store.handBack(request);
        assert.deepEqual(again.returned, { from: 61n, to: 101n });
        assert.deepEqual(again.gaps, []);
        assert.equal((await store.tag(tag))?.maxId, 61n);
        assert.deepEqual(await store.listGaps(tag), []);
      }));

    it('after another node advanced: everything is recorded, max_id stays', (t) =>
      withStores(t, async (store, other) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        await grant(other, tag);
        const result = await store.handBack({
          tag,
          held: [held(51n, 101n)],
          to: g.end,
          epoch: g.epoch,
          identity: g.identity,
          node: 'a:1',
        });
        assert.equal(result.returned, undefined);
        assert.deepEqual(ranges(result.gaps), [[51n, 101n, 'unsafe_hand_back', 'a:1']]);
        assert.equal((await store.tag(tag))?.maxId, 201n);
        assert.deepEqual(ranges(await store.listGaps(tag)), [[51n, 101n, 'unsafe_hand_back', 'a:1']]);
        assert.ok(((await store.listGaps(tag))[0]?.at ?? 0) > 0);
      }));

    it('under another epoch or identity: everything is recorded, max_id stays', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        const base = { tag, held: [held(51n, 101n)], to: g.end, node: 'a:1' };
        const epoch = await store.handBack({ ...base, epoch: g.epoch + 1, identity: g.identity });
        assert.equal(epoch.returned, undefined);
        const identity = await store.handBack({ ...base, epoch: g.epoch, identity: `${g.identity}-other` });
        assert.equal(identity.returned, undefined);
        assert.equal((await store.tag(tag))?.maxId, 101n);
        assert.deepEqual(ranges(await store.listGaps(tag)), [[51n, 101n, 'unsafe_hand_back', 'a:1']]);
      }));

    it('with a high-water record above `to` (the row set lower by hand): everything is recorded', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        await grant(store, tag);
        await raw.setMaxId(t, tag, g.end, 100);
        const result = await store.handBack({
          tag,
          held: [held(51n, 101n, 'opaque_look_ahead')],
          to: g.end,
          epoch: g.epoch,
          identity: g.identity,
          node: 'a:1',
        });
        assert.equal(result.returned, undefined);
        assert.equal((await store.tag(tag))?.maxId, 101n);
        assert.deepEqual(ranges(await store.listGaps(tag)), [[51n, 101n, 'opaque_look_ahead', 'a:1']]);
      }));

    it('with the row gone: everything is recorded', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        await raw.deleteRow(t, tag);
        const result = await store.handBack({
          tag,
          held: [held(51n, 101n)],
          to: g.end,
          epoch: g.epoch,
          identity: g.identity,
          node: 'a:1',
        });
        assert.equal(result.returned, undefined);
        assert.deepEqual(ranges(await store.listGaps(tag)), [[51n, 101n, 'unsafe_hand_back', 'a:1']]);
      }));

    it('never hands back over a gap already recorded (claimed guard), nor records it twice', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const g = await grant(store, tag);
        await store.recordGaps([
          { tag, start: 80n, end: 90n, reason: 'range_unused', node: 'client', at: 0 },
        ]);
        const result = await store.handBack({
          tag,
          held: [held(51n, 101n)],
          to: g.end,
          epoch: g.epoch,
          identity: g.identity,
          node: 'a:1',
        });
        assert.deepEqual(result.returned, { from: 90n, to: 101n });
        assert.deepEqual(ranges(result.gaps), [[51n, 80n, 'unsafe_hand_back', 'a:1']]);
        assert.deepEqual(ranges(await store.listGaps(tag)), [
          [51n, 80n, 'unsafe_hand_back', 'a:1'],
          [80n, 90n, 'range_unused', 'client'],
        ]);
        assert.equal((await grant(store, tag)).start, 90n);
      }));

    it('records gaps idempotently: the same range twice is one row, as first recorded', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        const gap: Gap = { tag, start: 5n, end: 9n, reason: 'crash', node: 'a:1', at: 0 };
        await store.recordGaps([gap]);
        await store.recordGaps([gap, { ...gap, node: 'b:2', reason: 'range_unused' }]);
        await store.recordGaps([]);
        const gaps = await store.listGaps(tag);
        assert.deepEqual(ranges(gaps), [[5n, 9n, 'crash', 'a:1']]);
        // The database's clock: within a minute of this one.
        assert.ok(Math.abs((gaps[0]?.at ?? 0) - Date.now()) < 60_000, `at ${gaps[0]?.at}`);
      }));

    it('lists gaps by start then end, after a start, a page at a time; exact above 2^53', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        const big = 2n ** 62n + 3n;
        const gap = (start: bigint, end: bigint): Gap => ({
          tag,
          start,
          end,
          reason: 'unsafe_hand_back',
          node: 'n',
          at: 0,
        });
        await store.recordGaps([
          gap(30n, 40n),
          gap(10n, 30n),
          gap(10n, 20n),
          gap(big, big + 1n),
          gap(50n, 60n),
        ]);
        await store.recordGaps([{ ...gap(10n, 20n), tag: `${tag}x` }]);
        const all = await store.listGaps(tag);
        assert.deepEqual(
          all.map((g) => [g.start, g.end]),
          [
            [10n, 20n],
            [10n, 30n],
            [30n, 40n],
            [50n, 60n],
            [big, big + 1n],
          ],
        );
        assert.deepEqual(
          (await store.listGaps(tag, undefined, 2)).map((g) => g.end),
          [20n, 30n],
        );
        assert.deepEqual(
          (await store.listGaps(tag, 10n, 2)).map((g) => g.start),
          [30n, 50n],
        );
        assert.deepEqual(
          (await store.listGaps(tag, 50n)).map((g) => g.start),
          [big],
        );
        assert.deepEqual(await store.listGaps(tag, big), []);
      }));

    it('sums the gaps by reason', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        const before = await store.gapTotals();
        await store.recordGaps([
          { tag, start: 1n, end: 11n, reason: 'range_unused', node: 'c', at: 0 },
          { tag, start: 20n, end: 2n ** 62n, reason: 'range_unused', node: 'c', at: 0 },
          { tag, start: 11n, end: 14n, reason: 'opaque_look_ahead', node: 'c', at: 0 },
        ]);
        const after = await store.gapTotals();
        const delta = (reason: Gap['reason']) => ({
          ranges: (after.get(reason)?.ranges ?? 0) - (before.get(reason)?.ranges ?? 0),
          ids: (after.get(reason)?.ids ?? 0n) - (before.get(reason)?.ids ?? 0n),
        });
        assert.deepEqual(delta('range_unused'), { ranges: 2, ids: 10n + 2n ** 62n - 20n });
        assert.deepEqual(delta('opaque_look_ahead'), { ranges: 1, ids: 3n });
      }));

    it('a fence records what it skipped of each tag as a fence gap', (t) =>
      withStores(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        await grant(store, tag);
        try {
          await raw.fence(t, 1_000n);
        } finally {
          // The fence raised the floor of every new name: the next cases start at 1 again.
          await raw.forget(t, NEW_NAMES);
        }
        const gaps = (await store.listGaps(tag)).filter((gap) => gap.reason === 'fence');
        assert.deepEqual(ranges(gaps), [[101n, 1_101n, 'fence', 'fence']]);
        assert.equal((await store.tag(tag))?.maxId, 1_101n);
      }));

    const hold = raw.holdHighWater;
    if (hold !== undefined)
      it('an advance that waited for a hand-back goes on from the tail it lowered (no IDs lost unrecorded)', (t) =>
        withStores(t, async (store, other) => {
          const tag = randomTag();
          await store.addTag({ tag, step: 100, start: 1n });
          await grant(other, tag);
          const g = await grant(store, tag);
          // The hand-back waits on the record, holding the row; the advance queues behind it.
          const release = await hold(t, tag);
          if (release === undefined) return;
          const handBack = store.handBack({
            tag,
            held: [held(g.start + 10n, g.end)],
            to: g.end,
            epoch: g.epoch,
            identity: g.identity,
            node: 'a:1',
          });
          await sleep(300);
          const advance = grant(other, tag);
          await sleep(300);
          await release();
          const result = await handBack;
          assert.deepEqual(result.returned, { from: g.start + 10n, to: g.end });
          assert.equal((await advance).start, g.start + 10n);
        }));

    it('hand-backs racing advances from another connection: no ID twice, every ID issued or in a gap', (t) =>
      withStores(t, async (store, other) => {
        const tag = randomTag();
        const step = 10;
        await store.addTag({ tag, step, start: 1n });
        const issued: [bigint, bigint][] = [];
        const rounds = 25;
        let [returned, recorded] = [0, 0];
        for (let round = 0; round < rounds; round++) {
          const g = await grant(store, tag);
          // Served the first 3 of it; the rest is handed back while the other connection advances.
          issued.push([g.start, g.start + 3n]);
          // Either side first, or both at once: round by round, each waits 0 to 3 ms.
          const racing = (async () => {
            await sleep([0, 1, 3][round % 3] as number);
            for (let i = 0; i < 3; i++) {
              const o = await grant(other, tag);
              issued.push([o.start, o.end]);
            }
          })();
          await sleep([3, 1, 0][round % 3] as number);
          const result = await store.handBack({
            tag,
            held: [held(g.start + 3n, g.end)],
            to: g.end,
            epoch: g.epoch,
            identity: g.identity,
            node: 'a:1',
          });
          if (result.returned === undefined) recorded++;
          else returned++;
          await racing;
        }
        // A last grant re-issues a tail handed back by the last round.
        const last = await grant(other, tag);
        issued.push([last.start, last.end]);
        const gaps = await store.listGaps(tag);
        const marks = new Map<bigint, string>();
        const mark = (start: bigint, end: bigint, what: string) => {
          for (let id = start; id < end; id++) {
            const seen = marks.get(id);
            assert.equal(seen, undefined, `ID ${id} ${what}, already ${seen}`);
            marks.set(id, what);
          }
        };
        for (const [start, end] of issued) mark(start, end, 'issued');
        for (const gap of gaps) mark(gap.start, gap.end, `in gap ${gap.reason}`);
        for (let id = 1n; id < last.end; id++)
          assert.ok(marks.has(id), `ID ${id} neither issued nor in a gap`);
        t.diagnostic(
          `${returned} tails handed back, ${recorded} recorded as gaps, ${last.end - 1n} IDs checked`,
        );
      }));
  });
}
