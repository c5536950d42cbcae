import assert from 'node:assert/strict';
import { afterEach, describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isFrondError } from '../src/core/errors.js';
import { counterName } from '../src/core/id-format.js';
import type { CataloguedStore, FormatSetting, OpaqueSetting } from '../src/core/tag-catalogue.js';
import { PLAIN_KIND } from '../src/core/tag-kind.js';
import { NEW_NAMES } from '../src/stores/new-names.js';
import { backendSkip } from './support/backend-filter.js';
import { randomTag } from './support/random-tag.js';

/** Rows changed behind frond's back, as `DELETE FROM leaf_alloc` / `INSERT INTO leaf_alloc` by hand. */
export interface RawTable {
  deleteRow(t: TestContext, tag: string): Promise<void>;
  insertRow(t: TestContext, tag: string, maxId: bigint, step: number): Promise<void>;
  /** `frond db fence --fence-skip SKIP` on the same database (every tag on it is raised). */
  fence?(t: TestContext, skip: bigint): Promise<void>;
  /**
   * The tag's frond_high_water row locked by another connection (`SELECT … FOR UPDATE` left open)
   * until the returned function commits; for the races a lock wait makes certain. A store whose
   * writers never interleave (one SQLite file, one writer at a time) has none.
   */
  holdHighWater?(t: TestContext, tag: string): Promise<(() => Promise<void>) | undefined>;
  /**
   * What a restore of a backup taken before the tag existed leaves of it: nothing (its leaf_alloc
   * row, its frond_high_water record and any opaque setting gone).
   */
  forget?(t: TestContext, tag: string): Promise<void>;
  /** `DELETE FROM frond_tag_formats WHERE biz_tag = …` by hand. */
  deleteFormat?(t: TestContext, tag: string): Promise<void>;
}

/**
 * The contract every store backend passes, its segments seen as the core sees them (through
 * FencedStore as a node serves them, or the bare primitive, `bare` in support/store-views.ts) and
 * its tag catalogue. `open` gives a store on a shared database (or
 * undefined after marking the test skipped/failed because the service is missing); every test works
 * on fresh random tags, so nothing needs cleaning up.
 */
export function describeSegmentStore(
  name: string,
  open: (t: TestContext) => Promise<CataloguedStore | undefined>,
  /** What an operator does by hand in SQL, beside frond: for the cases that a store must survive. */
  raw?: RawTable,
): void {
  describe(`store contract: ${name}`, { skip: backendSkip(name) }, () => {
    // A fence raises the floor of every name the database does not know (src/stores/new-names.ts),
    // and the tests share one database: each starts as on a database whose new names start at 1.
    const forget = raw?.forget;
    if (forget !== undefined) afterEach((t) => forget(t as TestContext, NEW_NAMES));

    async function withStore(t: TestContext, use: (store: CataloguedStore) => Promise<void>): Promise<void> {
      const store = await open(t);
      if (store === undefined) return;
      try {
        await use(store);
      } finally {
        await store.close();
      }
    }

    it('resolves undefined when advancing a tag that has no row', (t) =>
      withStore(t, async (store) => {
        assert.equal(await store.advance(randomTag()), undefined);
        assert.equal(await store.advance(randomTag(), 10), undefined);
      }));

    it("advances by the table's step and reads the row back: max_id 1000 hands out 1000 first", (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 2000, start: 1000n, description: 'orders' });
        const first = await store.advance(tag);
        assert.deepEqual(first, { maxId: 3000n, step: 2000, tableStep: 2000, kind: PLAIN_KIND });
        // The range of that allocation is [maxId - step, maxId) = [1000, 3000).
        const second = await store.advance(tag);
        assert.deepEqual(second, { maxId: 5000n, step: 2000, tableStep: 2000, kind: PLAIN_KIND });
      }));

    it("advances by a given step without changing the table's step", (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        assert.deepEqual(await store.advance(tag, 350), {
          maxId: 351n,
          step: 350,
          tableStep: 100,
          kind: PLAIN_KIND,
        });
        assert.equal((await store.tag(tag))?.step, 100);
        assert.deepEqual(await store.advance(tag), {
          maxId: 451n,
          step: 100,
          tableStep: 100,
          kind: PLAIN_KIND,
        });
      }));

    it('rejects a second row for the same tag with TAG_EXISTS', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        await assert.rejects(store.addTag({ tag, step: 20, start: 5n }), (error) =>
          isFrondError(error, 'TAG_EXISTS'),
        );
        assert.equal((await store.tag(tag))?.step, 10);
      }));

    it('stores an opaque tag with its row in one transaction, and never over a tag that exists', (t) =>
      withStore(t, async (store) => {
        const opaque = randomTag();
        const plain = randomTag();
        const setting = { domain: 'digits:11', keyCheck: '0123456789abcdef' };
        assert.equal(await store.tag(opaque), undefined);
        await store.addTag({ tag: opaque, step: 10, start: 1n }, setting);
        assert.deepEqual((await store.tag(opaque))?.opaque, setting);
        assert.equal((await store.tag(opaque))?.maxId, 1n);
        await store.addTag({ tag: plain, step: 10, start: 1n });
        assert.deepEqual((await store.tag(plain))?.opaque, null);
        // A plain tag that exists stays plain: the setting is rolled back with the failed row.
        await assert.rejects(store.addTag({ tag: plain, step: 10, start: 1n }, setting), (error) =>
          isFrondError(error, 'TAG_EXISTS'),
        );
        assert.deepEqual((await store.tag(plain))?.opaque, null);
        await assert.rejects(
          store.addTag({ tag: opaque, step: 10, start: 1n }, { domain: 'bits:63', keyCheck: 'x' }),
          (error) => isFrondError(error, 'TAG_EXISTS'),
        );
        const all = await store.listOpaque();
        assert.deepEqual(all.get(opaque), setting);
        assert.equal(all.has(plain), false);
      }));

    it('changes the step of a tag, and reports TAG_NOT_FOUND for a tag without a row', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        await store.setStep(tag, 500);
        assert.deepEqual(await store.advance(tag), {
          maxId: 501n,
          step: 500,
          tableStep: 500,
          kind: PLAIN_KIND,
        });
        await assert.rejects(store.setStep(randomTag(), 5), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
      }));

    it('lists tags and rows in tag order, with max_id, step, description and update time', (t) =>
      withStore(t, async (store) => {
        const a = randomTag('a');
        const b = randomTag('b');
        // b first: the order of the answer is the tags', not the order the rows were added in.
        await store.addTag({ tag: b, step: 20, start: 1n });
        await store.addTag({ tag: a, step: 10, start: 7n, description: 'first' });
        const tags = await store.listTags();
        assert.ok(tags.includes(a) && tags.includes(b));
        assert.ok(tags.indexOf(a) < tags.indexOf(b), 'listTags orders by biz_tag');
        const rows = await store.listRows();
        assert.ok(rows.findIndex((r) => r.tag === a) < rows.findIndex((r) => r.tag === b));
        const row = rows.find((r) => r.tag === a);
        assert.equal(row?.maxId, 7n);
        assert.equal(row?.step, 10);
        assert.equal(row?.description, 'first');
        assert.ok(row?.updateTime instanceof Date && !Number.isNaN(row.updateTime.getTime()));
        assert.equal(rows.find((r) => r.tag === b)?.description, null);
        // From a tag on (`/db` pages): the rows after it, in order; a store may answer more than the limit.
        const later = await store.listRows(a, 1000);
        assert.ok(!later.some((r) => r.tag === a) && later.some((r) => r.tag === b));
        const first = await store.listRows(undefined, 1);
        assert.ok(first.length >= 1);
        // One tag with its setting, in one read.
        assert.deepEqual(await store.tag(a), { ...row, opaque: null, format: null });
        assert.equal(await store.tag(randomTag()), undefined);
      }));

    it('keeps 64-bit max_id values exact, beyond 2^53', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        const start = 2n ** 62n + 1n;
        await store.addTag({ tag, step: 3, start });
        assert.deepEqual(await store.advance(tag), {
          maxId: start + 3n,
          step: 3,
          tableStep: 3,
          kind: PLAIN_KIND,
        });
      }));

    it('serves max_id up to 2^63 - 1, then refuses ID_RANGE_EXHAUSTED without changing the row', (t) =>
      withStore(t, async (store) => {
        const top = 2n ** 63n - 1n;
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: top - 25n });
        assert.deepEqual(await store.advance(tag), {
          maxId: top - 15n,
          step: 10,
          tableStep: 10,
          kind: PLAIN_KIND,
        });
        assert.deepEqual(await store.advance(tag, 15), {
          maxId: top,
          step: 15,
          tableStep: 10,
          kind: PLAIN_KIND,
        });
        for (const step of [undefined, 1, 10]) {
          await assert.rejects(store.advance(tag, step), (error) =>
            isFrondError(error, 'ID_RANGE_EXHAUSTED'),
          );
        }
        assert.equal((await store.tag(tag))?.maxId, top, 'the row is left as it was');
        // A step that no longer fits is refused while a smaller one still does.
        const near = randomTag();
        await store.addTag({ tag: near, step: 10, start: top - 15n });
        await assert.rejects(store.advance(near, 20), (error) => isFrondError(error, 'ID_RANGE_EXHAUSTED'));
        assert.deepEqual(await store.advance(near), {
          maxId: top - 5n,
          step: 10,
          tableStep: 10,
          kind: PLAIN_KIND,
        });
        assert.equal(await store.advance(randomTag(), 5), undefined);
      }));

    it('keeps negative max_id values exact, as a Java long', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 5, start: -(2n ** 63n) });
        assert.deepEqual(await store.advance(tag), {
          maxId: -(2n ** 63n) + 5n,
          step: 5,
          tableStep: 5,
          kind: PLAIN_KIND,
        });
        assert.deepEqual(await store.advance(tag, 7), {
          maxId: -(2n ** 63n) + 12n,
          step: 7,
          tableStep: 5,
          kind: PLAIN_KIND,
        });
      }));

    it('adds by an exact 64-bit step above 2^53, never a rounded one', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        const start = 2n ** 53n + 1n;
        await store.addTag({ tag, step: 3, start });
        assert.deepEqual(await store.advance(tag, 2001), {
          maxId: start + 2001n,
          step: 2001,
          tableStep: 3,
          kind: PLAIN_KIND,
        });
      }));

    it("returns the tag's kind with every grant, read in the same transaction", (t) =>
      withStore(t, async (store) => {
        const opaque = randomTag();
        const plain = randomTag();
        const setting = { domain: 'bits:20', keyCheck: 'fedcba9876543210' };
        await store.addTag({ tag: opaque, step: 10, start: 1n }, setting);
        await store.addTag({ tag: plain, step: 10, start: 1n });
        assert.deepEqual((await store.advance(opaque))?.kind, { opaque: setting, format: null });
        assert.deepEqual((await store.advance(opaque, 3))?.kind, { opaque: setting, format: null });
        assert.deepEqual((await store.advance(plain))?.kind, PLAIN_KIND);
      }));

    it('removes a tag: its row goes, its max_id stays in frond_high_water, and the name added again goes on above it', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 100, start: 1n });
        const served = [await store.advance(tag), await store.advance(tag, 250)];
        const top = served[1]?.maxId;
        assert.equal(top, 351n);
        assert.equal(await store.removeTag(tag), top, 'the high-water kept is the last grant');
        assert.equal(await store.tag(tag), undefined);
        assert.ok(!(await store.listTags()).includes(tag));
        assert.ok(!(await store.listRows()).some((row) => row.tag === tag));
        assert.equal(await store.advance(tag), undefined, 'a removed tag advances no more');
        // Added again from 1 (`frond tag add` without --start): the row starts at the high-water.
        await store.addTag({ tag, step: 100, start: 1n });
        assert.equal((await store.tag(tag))?.maxId, top);
        assert.deepEqual(await store.advance(tag), {
          maxId: 451n,
          step: 100,
          tableStep: 100,
          kind: PLAIN_KIND,
        });
        // Removed again and added above the high-water: the start is taken as it is.
        assert.equal(await store.removeTag(tag), 451n);
        await store.addTag({ tag, step: 10, start: 5000n });
        assert.equal((await store.tag(tag))?.maxId, 5000n);
        assert.equal((await store.advance(tag))?.maxId, 5010n);
      }));

    it('keeps the max_id of a tag removed before it served anything, and of a row above its record', (t) =>
      withStore(t, async (store) => {
        const fresh = randomTag();
        await store.addTag({ tag: fresh, step: 10, start: 7000n });
        assert.equal(await store.removeTag(fresh), 7000n);
        await store.addTag({ tag: fresh, step: 10, start: 1n });
        assert.equal((await store.advance(fresh))?.maxId, 7010n);
      }));

    it('reports TAG_NOT_FOUND when removing a tag without a row, and when removing it twice', (t) =>
      withStore(t, async (store) => {
        await assert.rejects(store.removeTag(randomTag()), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        assert.ok(await store.advance(tag));
        assert.equal(await store.removeTag(tag), 11n);
        await assert.rejects(store.removeTag(tag), (error) => isFrondError(error, 'TAG_NOT_FOUND'));
      }));

    it('a removed opaque tag keeps its setting: the name comes back neither plain nor opaque', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        const setting = { domain: 'bits:20', keyCheck: '00112233aabbccdd' };
        await store.addTag({ tag, step: 10, start: 1n }, setting);
        assert.ok(await store.advance(tag));
        assert.equal(await store.removeTag(tag), 11n);
        assert.deepEqual((await store.listOpaque()).get(tag), setting, 'the setting stays');
        // Plain: the setting would be joined to the new row, and its IDs are all over the domain.
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n }), (error) =>
          isFrondError(error, 'OPAQUE_TAG_FIXED'),
        );
        // Opaque, even with the same setting: the name served IDs (opaqueNameUsed).
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n }, setting), (error) =>
          isFrondError(error, 'OPAQUE_TAG_FIXED'),
        );
        assert.equal(await store.tag(tag), undefined, 'nothing was created');
        assert.equal(await store.advance(tag), undefined);
      }));

    it('a removed plain tag cannot come back opaque', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        await store.removeTag(tag);
        await assert.rejects(
          store.addTag({ tag, step: 10, start: 1n }, { domain: 'bits:20', keyCheck: 'k' }),
          (error) => isFrondError(error, 'OPAQUE_TAG_FIXED'),
        );
        assert.equal(await store.tag(tag), undefined);
        assert.equal((await store.listOpaque()).has(tag), false);
      }));

    it('a removal racing advances from another connection: every grant ends at or below what it keeps', (t) =>
      withStore(t, async (store) => {
        const other = await open(t);
        if (other === undefined) return;
        try {
          for (let round = 0; round < 3; round++) {
            const tag = randomTag();
            await store.addTag({ tag, step: 10, start: 1n });
            const advances = Array.from({ length: 20 }, (_, i) =>
              (i % 2 === 0 ? other : store).advance(tag, 1 + (i % 7)),
            );
            // The removal is sent among them, after the first few.
            const removal = new Promise<bigint>((resolve, reject) =>
              setTimeout(() => store.removeTag(tag).then(resolve, reject), round * 3),
            );
            const [kept, ...grants] = await Promise.all([removal, ...advances.map((a) => a.catch((e) => e))]);
            const before = grants.filter(
              (g): g is NonNullable<typeof g> => g !== undefined && !(g instanceof Error),
            );
            for (const grant of grants)
              assert.ok(grant === undefined || !(grant instanceof Error), `an advance failed: ${grant}`);
            for (const grant of before)
              assert.ok(grant.maxId <= kept, `granted up to ${grant.maxId}, and the removal kept ${kept}`);
            // Added again: its first range starts at or above every range granted before.
            await store.addTag({ tag, step: 10, start: 1n });
            const after = await other.advance(tag);
            assert.ok(after !== undefined);
            assert.ok(
              after.maxId - BigInt(after.step) >= kept,
              `[${after.maxId - BigInt(after.step)}, ${after.maxId}) below ${kept}`,
            );
            const ranges = [...before, after]
              .map((g) => [g.maxId - BigInt(g.step), g.maxId] as const)
              .sort((x, y) => (x[0] < y[0] ? -1 : 1));
            for (let i = 1; i < ranges.length; i++)
              assert.ok(
                ((ranges[i - 1] as readonly bigint[])[1] as bigint) <=
                  ((ranges[i] as readonly bigint[])[0] as bigint),
                'two grants overlap',
              );
          }
        } finally {
          await other.close();
        }
      }));

    const fence = raw?.fence;
    if (forget !== undefined && fence !== undefined) {
      // A restore from before a tag existed forgets it whole, and no record covers what it served:
      // added again from 1, or its row inserted again by hand, it served those IDs again (2,000 of
      // 6,000 on each store). A fence raises the new-names record (src/stores/new-names.ts).
      it('a tag the database lost whole comes back above a fence, added again or inserted by hand', (t) =>
        withStore(t, async (store) => {
          const [added, inserted, opaque] = [randomTag(), randomTag(), randomTag()];
          const setting = { domain: 'digits:12', keyCheck: '00112233aabbccdd' };
          await store.addTag({ tag: added, step: 1000, start: 1n });
          await store.addTag({ tag: inserted, step: 1000, start: 1n });
          await store.addTag({ tag: opaque, step: 1000, start: 1n }, setting);
          const served = new Map<string, bigint>();
          for (const tag of [added, inserted, opaque]) {
            await store.advance(tag);
            served.set(tag, (await store.advance(tag))?.maxId ?? 0n);
            await forget(t, tag);
          }
          await fence(t, 1_000_000n);
          await store.addTag({ tag: added, step: 1000, start: 1n });
          await raw?.insertRow(t, inserted, 1n, 1000);
          // A node that served the name keeps it in its data dir, and refuses it opaque: safe too.
          const again = await store.addTag({ tag: opaque, step: 1000, start: 1n }, setting).then(
            () => [opaque],
            (error: unknown) => {
              assert.ok(isFrondError(error, 'OPAQUE_TAG_FIXED'), `${error}`);
              return [];
            },
          );
          for (const tag of [added, inserted, ...again]) {
            const grant = await store.advance(tag);
            assert.ok(grant !== undefined);
            const first = grant.maxId - BigInt(grant.step);
            assert.ok(
              first >= (served.get(tag) ?? 0n),
              `${tag}: [${first}, ${grant.maxId}) again, after serving up to ${served.get(tag)}`,
            );
          }
        }));
    }

    const hold = raw?.holdHighWater;
    if (hold !== undefined) {
      // The removal waits on the high-water row after deleting the tag's row, and the add is sent
      // meanwhile: an add that checked a snapshot still holding the row, then waited for the
      // removal to commit, went through (seen on PostgreSQL: both succeeded, and a name that served
      // plain IDs became opaque, or a plain row joined the opaque setting of a removed tag).
      const race = async (
        t: TestContext,
        before: OpaqueSetting | undefined,
        after: OpaqueSetting | undefined,
      ) =>
        withStore(t, async (store) => {
          const other = await open(t);
          if (other === undefined) return;
          try {
            const tag = randomTag();
            await store.addTag({ tag, step: 10, start: 1n }, before);
            assert.ok(await store.advance(tag));
            const release = await hold(t, tag);
            if (release === undefined) return;
            const settle = <T>(p: Promise<T>) =>
              p.then(
                (value) => ({ value }),
                (error: unknown) => ({ error }),
              );
            let removal: Promise<{ value: bigint } | { error: unknown }>;
            let adding: Promise<{ value: unknown } | { error: unknown }>;
            try {
              removal = settle(store.removeTag(tag));
              await sleep(300);
              adding = settle(other.addTag({ tag, step: 10, start: 1n }, after));
              await sleep(300);
            } finally {
              await release();
            }
            const [removed, added] = await Promise.all([removal, adding]);
            assert.ok('value' in removed, `the removal failed: ${(removed as { error: unknown }).error}`);
            assert.equal(removed.value, 11n);
            assert.ok(
              'error' in added && isFrondError(added.error, 'OPAQUE_TAG_FIXED'),
              `the add of the removed name answered ${'error' in added ? added.error : 'success'}`,
            );
            assert.equal(await store.tag(tag), undefined, 'nothing was created');
            assert.equal((await store.listOpaque()).has(tag), before !== undefined);
          } finally {
            await other.close();
          }
        });
      const setting = { domain: 'bits:20', keyCheck: '00112233aabbccdd' };
      it('a plain tag removed while its name is added as opaque: the add is refused', (t) =>
        race(t, undefined, setting));
      it('an opaque tag removed while its name is added as plain: the add is refused', (t) =>
        race(t, setting, undefined));
    }

    if (raw !== undefined) {
      it('refuses an opaque tag under a name that served IDs and whose row was deleted by hand', (t) =>
        withStore(t, async (store) => {
          const tag = randomTag();
          await store.addTag({ tag, step: 100, start: 1n });
          assert.ok(await store.advance(tag));
          await raw.deleteRow(t, tag);
          await assert.rejects(
            store.addTag({ tag, step: 10, start: 1n }, { domain: 'bits:20', keyCheck: 'k' }),
            (error) => isFrondError(error, 'OPAQUE_TAG_FIXED'),
          );
          assert.equal(await store.tag(tag), undefined, 'nothing was created');
          assert.deepEqual(await store.listOpaque().then((all) => all.has(tag)), false);
        }));

      it('refuses a plain tag under a name whose opaque setting outlived its row', (t) =>
        withStore(t, async (store) => {
          const tag = randomTag();
          const setting = { domain: 'bits:20', keyCheck: 'k' };
          await store.addTag({ tag, step: 100, start: 1n }, setting);
          assert.ok(await store.advance(tag));
          await raw.deleteRow(t, tag);
          await assert.rejects(store.addTag({ tag, step: 10, start: 1n }), (error) =>
            isFrondError(error, 'OPAQUE_TAG_FIXED'),
          );
          assert.equal(await store.tag(tag), undefined, 'nothing was created');
          // A row put back by hand is opaque again: the grant says so, and starts above the old ones.
          await raw.insertRow(t, tag, 1n, 100);
          const grant = await store.advance(tag);
          assert.deepEqual(grant?.kind, { opaque: setting, format: null });
          assert.ok(grant !== undefined && grant.maxId - BigInt(grant.step) >= 101n, `${grant?.maxId}`);
        }));

      it('a row deleted and put back lower by hand goes on above the highest grant', (t) =>
        withStore(t, async (store) => {
          const tag = randomTag();
          await store.addTag({ tag, step: 100, start: 1n });
          assert.equal((await store.advance(tag))?.maxId, 101n);
          assert.equal((await store.advance(tag))?.maxId, 201n);
          await raw.deleteRow(t, tag);
          await raw.insertRow(t, tag, 1n, 100);
          const grant = await store.advance(tag);
          assert.ok(grant !== undefined);
          assert.ok(
            grant.maxId - BigInt(grant.step) >= 201n,
            `granted [${grant.maxId - BigInt(grant.step)}, ${grant.maxId})`,
          );
        }));
    }

    const fenceByHand = raw?.fence;
    if (raw !== undefined && fenceByHand !== undefined) {
      // The restore of a dump taken after a row was put back lower: frond_high_water holds the
      // highest grant, leaf_alloc the lower row. Raised from the row, the skip could land below
      // ranges served after the dump; the fence raises from the floor the advance serves from.
      it('a fence raises a row put back lower by hand from its highest grant, not from the row', (t) =>
        withStore(t, async (store) => {
          const tag = randomTag();
          await store.addTag({ tag, step: 100, start: 1n });
          assert.equal((await store.advance(tag))?.maxId, 101n);
          await raw.deleteRow(t, tag);
          await raw.insertRow(t, tag, 1n, 100);
          await fenceByHand(t, 1000n);
          const grant = await store.advance(tag);
          assert.ok(grant !== undefined);
          const start = grant.maxId - BigInt(grant.step);
          assert.ok(
            start >= 101n + 1000n,
            `granted [${start}, ${grant.maxId}): the skip was added to the lowered row`,
          );
        }));
    }

    const FORMAT: FormatSetting = { format: 'ORD-{yyyy}{MM}{dd}-{seq:6}', timeZone: 'Europe/Berlin' };
    const formatted = (format: FormatSetting) => ({ opaque: null, format });
    const fixed = (error: unknown) => isFrondError(error, 'FORMAT_TAG_FIXED');

    it('a formatted tag and its counter read their format back with every grant; listFormats has the tag only', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n, format: FORMAT });
        assert.deepEqual((await store.tag(tag))?.format, FORMAT);
        assert.equal((await store.tag(tag))?.opaque, null);
        assert.deepEqual((await store.advance(tag))?.kind, formatted(FORMAT));
        // A counter, as a node serving the tag adds it: max_id from 1, the same format.
        const counter = counterName(tag, '20261201');
        await store.addTag({ tag: counter, step: 10, start: 1n, format: FORMAT });
        assert.deepEqual(await store.advance(counter), {
          maxId: 11n,
          step: 10,
          tableStep: 10,
          kind: formatted(FORMAT),
        });
        assert.deepEqual((await store.advance(counter, 5))?.kind, formatted(FORMAT));
        assert.deepEqual((await store.tag(counter))?.format, FORMAT);
        const formats = await store.listFormats();
        assert.deepEqual(formats.get(tag), FORMAT);
        assert.equal(formats.has(counter), false, 'a counter is not a tag of its own');
        assert.equal((await store.listOpaque()).has(tag), false);
        // A plain tag beside it reads no format.
        const plain = randomTag();
        await store.addTag({ tag: plain, step: 10, start: 1n });
        assert.equal((await store.tag(plain))?.format, null);
        assert.deepEqual((await store.advance(plain))?.kind, PLAIN_KIND);
        assert.equal((await store.listFormats()).has(plain), false);
      }));

    it('a counter removed and created again goes on above what it served', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n, format: FORMAT });
        const counter = counterName(tag, '2026120113');
        await store.addTag({ tag: counter, step: 10, start: 1n, format: FORMAT });
        assert.equal((await store.advance(counter))?.maxId, 11n);
        assert.equal((await store.advance(counter))?.maxId, 21n);
        assert.equal(await store.removeTag(counter), 21n);
        assert.equal(await store.advance(counter), undefined);
        // Its format row stays; created again from 1 (a node whose clock is behind), it starts at 21.
        await store.addTag({ tag: counter, step: 10, start: 1n, format: FORMAT });
        assert.equal((await store.tag(counter))?.maxId, 21n);
        const grant = await store.advance(counter);
        assert.deepEqual(grant, { maxId: 31n, step: 10, tableStep: 10, kind: formatted(FORMAT) });
        // Another format under the counter's name is refused, as under the tag's.
        await store.removeTag(counter);
        await assert.rejects(
          store.addTag({ tag: counter, step: 10, start: 1n, format: { ...FORMAT, timeZone: 'UTC' } }),
          fixed,
        );
        await assert.rejects(store.addTag({ tag: counter, step: 10, start: 1n }), fixed);
        assert.equal(await store.tag(counter), undefined, 'nothing was created');
      }));

    it('a format is fixed for good: FORMAT_TAG_FIXED for another kind or format under its name', (t) =>
      withStore(t, async (store) => {
        const setting = { domain: 'bits:20', keyCheck: '00112233aabbccdd' };
        // A formatted tag that exists is TAG_EXISTS, whatever is added under its name.
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n, format: FORMAT });
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n, format: FORMAT }), (error) =>
          isFrondError(error, 'TAG_EXISTS'),
        );
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n }), (error) =>
          isFrondError(error, 'TAG_EXISTS'),
        );
        // Removed: its format row stays, and only the same format comes back.
        await store.removeTag(tag);
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n }), fixed);
        await assert.rejects(store.addTag({ tag, step: 10, start: 1n }, setting), fixed);
        await assert.rejects(
          store.addTag({ tag, step: 10, start: 1n, format: { ...FORMAT, format: 'ORD-{seq:6}' } }),
          fixed,
        );
        await assert.rejects(
          store.addTag({ tag, step: 10, start: 1n, format: { ...FORMAT, timeZone: 'Asia/Kolkata' } }),
          fixed,
        );
        assert.equal(await store.tag(tag), undefined, 'nothing was created');
        await store.addTag({ tag, step: 20, start: 1n, format: FORMAT });
        assert.deepEqual((await store.tag(tag))?.format, FORMAT);
        assert.equal((await store.tag(tag))?.step, 20);
        assert.deepEqual((await store.listFormats()).get(tag), FORMAT);

        // A name that served plain IDs, or an opaque one, does not become formatted.
        const plain = randomTag();
        await store.addTag({ tag: plain, step: 10, start: 1n });
        await assert.rejects(store.addTag({ tag: plain, step: 10, start: 1n, format: FORMAT }), (error) =>
          isFrondError(error, 'TAG_EXISTS'),
        );
        assert.ok(await store.advance(plain));
        await store.removeTag(plain);
        await assert.rejects(store.addTag({ tag: plain, step: 10, start: 1n, format: FORMAT }), fixed);
        const opaque = randomTag();
        await store.addTag({ tag: opaque, step: 10, start: 1n }, setting);
        await store.removeTag(opaque);
        await assert.rejects(store.addTag({ tag: opaque, step: 10, start: 1n, format: FORMAT }), fixed);
        for (const name of [plain, opaque]) {
          assert.equal(await store.tag(name), undefined, 'nothing was created');
          assert.equal((await store.listFormats()).has(name), false);
        }
      }));

    it('refuses a format together with an opaque setting (INVALID_ARGUMENT), creating nothing', (t) =>
      withStore(t, async (store) => {
        const tag = randomTag();
        await assert.rejects(
          store.addTag(
            { tag, step: 10, start: 1n, format: FORMAT },
            { domain: 'bits:20', keyCheck: '00112233aabbccdd' },
          ),
          (error) => isFrondError(error, 'INVALID_ARGUMENT'),
        );
        assert.equal(await store.tag(tag), undefined);
        assert.equal((await store.listFormats()).has(tag), false);
        assert.equal((await store.listOpaque()).has(tag), false);
        // The name is still free.
        await store.addTag({ tag, step: 10, start: 1n, format: FORMAT });
      }));

    const deleteFormat = raw?.deleteFormat;
    if (deleteFormat !== undefined) {
      it("a counter whose format row was deleted by hand is granted plain: the node's kind check refuses it", (t) =>
        withStore(t, async (store) => {
          const tag = randomTag();
          await store.addTag({ tag, step: 10, start: 1n, format: FORMAT });
          const counter = counterName(tag, 'all');
          await store.addTag({ tag: counter, step: 10, start: 1n, format: FORMAT });
          assert.deepEqual((await store.advance(counter))?.kind, formatted(FORMAT));
          await deleteFormat(t, counter);
          // Bare, the grant says plain (the server refuses it: TAG_KIND_CHANGED); through a node's
          // data dir, the node that served it formatted refuses it itself.
          await store.advance(counter).then(
            (grant) => assert.deepEqual(grant?.kind, PLAIN_KIND),
            (error: unknown) => {
              assert.ok(
                isFrondError(error, 'INVALID_CONFIG') && /served formatted \(ORD-/.test(error.message),
                `${error}`,
              );
            },
          );
        }));
    }

    it('never hands two concurrent allocations overlapping ranges, from one or two connections', (t) =>
      withStore(t, async (store) => {
        const other = await open(t);
        if (other === undefined) return;
        try {
          const tag = randomTag();
          await store.addTag({ tag, step: 10, start: 1n });
          // 60 allocations in flight at once, half through each connection, steps from 1 to 37.
          const steps = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? undefined : 1 + ((i * 7) % 37)));
          const allocations = await Promise.all(
            steps.map((step, i) => ((i % 2 === 0 ? store : other) as CataloguedStore).advance(tag, step)),
          );
          const ranges = allocations
            .map((a) => {
              assert.ok(a);
              return [a.maxId - BigInt(a.step), a.maxId] as const;
            })
            .sort((x, y) => (x[0] < y[0] ? -1 : 1));
          // Sorted, the ranges tile [1, final max_id) exactly: no overlap, no hole.
          let expected = 1n;
          for (const [start, end] of ranges) {
            assert.equal(start, expected);
            expected = end;
          }
          assert.equal((await store.tag(tag))?.maxId, expected);
        } finally {
          await other.close();
        }
      }));
  });
}
