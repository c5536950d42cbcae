import assert from 'node:assert/strict';
import { after, describe, it, type TestContext } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import type { Allocation } from '../src/core/segment-store.js';
import { PLAIN_KIND } from '../src/core/tag-kind.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import type { OpenedStore } from '../src/stores/store-backend.js';
import { openStore } from '../src/stores/store-registry.js';
import { tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { bare, unjournaled } from './support/store-views.js';
import { type TestDatabase, testDatabase } from './support/test-database.js';

// The PostgreSQL store against names and settings built to break SQL, and against frond's tables
// dropped under a store that is open. Every check of the database is read on a connection of its
// own (`db.sql`), never through the store under test.

const database = testDatabase('postgres');
after(() => database.drop());

function openPg(db: TestDatabase): OpenedStore {
  return openStore(db.url);
}

/**
 * Tag names a store must keep as data: quotes, statement breaks, comments, backslashes,
 * placeholders, dollar quotes, array-literal syntax (the fence sends tags as a text[]), LIKE
 * wildcards, unicode outside the BMP, right-to-left marks, and 128 characters (Leaf's VARCHAR(128)
 * counts characters, so 128 emoji, 256 UTF-16 units, fit too).
 */
const CORPUS = [
  "it's",
  '"double"',
  "'; UPDATE leaf_alloc SET max_id=1; --",
  "'); DELETE FROM frond_fence; --",
  "x' OR '1'='1",
  "\\'; DROP TABLE frond_high_water; --",
  'trailing\\',
  '\\\\server\\share',
  '$1',
  '$2::bigint',
  '$$; TRUNCATE leaf_alloc; $$',
  "E'\\x27'",
  '/* open comment',
  '-- line comment',
  ';',
  'NULL',
  '{a,b}',
  '"},{"',
  '%_*?',
  '订单-标签',
  '😀 ü‮ltr',
  "'".repeat(128),
  '订'.repeat(128),
  '😀'.repeat(128),
];

/** Settings with SQL in them, within the columns' VARCHAR(16) and VARCHAR(32). */
const SETTING = { domain: "bits:20';--", keyCheck: "'; DELETE FROM leaf_alloc; --\\$1" };

/** The opaque twin of a corpus name: `o` in place of its first character, so still 128 at most. */
function opaqueName(name: string): string {
  return `o${[...name].slice(1).join('')}`;
}

interface Tables {
  leaf: Record<string, unknown>[];
  highWater: Record<string, unknown>[];
  fence: Record<string, unknown>[];
  options: Record<string, unknown>[];
}

/** Every row of frond's and Leaf's tables except those of `except`, read on another connection. */
async function tablesExcept(db: TestDatabase, except: readonly string[]): Promise<Tables> {
  const rows = (text: string) => db.sql(text, [except]);
  return {
    leaf: await rows(
      'SELECT biz_tag, max_id::text, step, description, update_time FROM leaf_alloc WHERE NOT biz_tag = ANY($1::text[]) ORDER BY biz_tag',
    ),
    highWater: await rows(
      'SELECT biz_tag, max_id::text FROM frond_high_water WHERE NOT biz_tag = ANY($1::text[]) ORDER BY biz_tag',
    ),
    fence: await db.sql('SELECT id, epoch::text, identity, fenced_at FROM frond_fence ORDER BY id'),
    options: await rows(
      'SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options WHERE NOT biz_tag = ANY($1::text[]) ORDER BY biz_tag',
    ),
  };
}

async function withDatabase(t: TestContext, use: (db: TestDatabase) => Promise<void>): Promise<void> {
  const db = await database.open(t);
  if (db !== undefined) await use(db);
}

describe('PostgreSQL store: names and settings are data, never SQL', () => {
  it('the corpus is what it says: distinct names of 1 to 128 characters', () => {
    const all = [...CORPUS, ...CORPUS.map(opaqueName)];
    assert.equal(new Set(all).size, all.length);
    for (const name of all) assert.ok([...name].length >= 1 && [...name].length <= 128, name);
    assert.ok(CORPUS.some((name) => [...name].length === 128 && name.length === 256));
  });

  it('serves every corpus name through each call and leaves every other row as it was', (t) =>
    withDatabase(t, async (db) => {
      const store = openPg(db);
      const grants = unjournaled(store);
      try {
        // Rows the corpus must not touch: a plain tag, an opaque one, their high-water, the fence.
        const plain = randomTag('keep');
        const opaque = randomTag('keep');
        await store.addTag({ tag: plain, step: 7, start: 100n, description: 'kept' });
        await store.addTag({ tag: opaque, step: 7, start: 100n }, { domain: 'bits:20', keyCheck: 'k' });
        // The first advance on a database finds no fence row: nothing is reserved; the fence records it.
        assert.equal((await store.advance(plain))?.kind, 'unfenced');
        await store.fence({ observedEpoch: 0, aboveEpoch: 0, skip: 0n, atLeast: new Map() });
        assert.equal((await grants.advance(plain))?.maxId, 107n);
        assert.equal((await grants.advance(opaque))?.maxId, 107n);
        assert.equal((await store.advance(plain))?.kind, 'granted');
        const names = [...CORPUS, ...CORPUS.map(opaqueName)];
        const before = await tablesExcept(db, names);
        assert.equal(before.fence.length, 1);

        for (const name of CORPUS) {
          const twin = opaqueName(name);
          // Before the row exists: nothing found, nothing changed.
          assert.equal(await store.tag(name), undefined, name);
          assert.equal(await grants.advance(name), undefined, name);
          assert.equal(await grants.advance(name, 3), undefined, name);
          assert.equal(await store.advance(name), undefined, name);
          await assert.rejects(store.setStep(name, 5), (error) => isFrondError(error, 'TAG_NOT_FOUND'));

          await store.addTag({ tag: name, step: 10, start: 1n, description: name });
          const row = await store.tag(name);
          assert.equal(row?.tag, name);
          assert.equal(row?.description, name);
          assert.deepEqual(await grants.advance(name), {
            maxId: 11n,
            step: 10,
            tableStep: 10,
            kind: PLAIN_KIND,
          });
          const fenced = await store.advance(name, 4);
          assert.equal(fenced?.kind, 'granted', name);
          assert.deepEqual(fenced.allocation, { maxId: 15n, step: 4, tableStep: 10, kind: PLAIN_KIND });
          await store.setStep(name, 5);
          assert.equal((await store.tag(name))?.step, 5);
          await assert.rejects(store.addTag({ tag: name, step: 1, start: 1n }), (error) =>
            isFrondError(error, 'TAG_EXISTS'),
          );
          assert.deepEqual((await store.tag(name))?.opaque, null);

          await store.addTag({ tag: twin, step: 10, start: 1n, description: name }, SETTING);
          assert.deepEqual((await store.tag(twin))?.opaque, SETTING);
          assert.deepEqual((await grants.advance(twin))?.kind, { opaque: SETTING, format: null });
          await assert.rejects(store.addTag({ tag: name, step: 10, start: 1n }, SETTING), (error) =>
            isFrondError(error, 'TAG_EXISTS'),
          );

          // What the database holds, read on another connection: the names as they were sent.
          assert.deepEqual(
            await db.sql('SELECT max_id::text AS max_id, step FROM leaf_alloc WHERE biz_tag = $1', [name]),
            [{ max_id: '15', step: 5 }],
          );
          assert.deepEqual(
            await db.sql('SELECT max_id::text AS m FROM frond_high_water WHERE biz_tag = $1', [name]),
            [{ m: '15' }],
          );
          assert.deepEqual(
            await db.sql('SELECT opaque_domain, key_check FROM frond_tag_options WHERE biz_tag = $1', [twin]),
            [{ opaque_domain: SETTING.domain, key_check: SETTING.keyCheck }],
          );
        }
        const opaqueTags = await store.listOpaque();
        for (const name of CORPUS) assert.deepEqual(opaqueTags.get(opaqueName(name)), SETTING);
        const listed = new Set(await store.listTags());
        for (const name of names) assert.ok(listed.has(name), name);
        assert.deepEqual(await tablesExcept(db, names), before);

        // The fence's floors go in as a text[]: names with quotes, braces, commas and NULL among them.
        const atLeast = new Map(CORPUS.map((name, i) => [name, 1_000n + BigInt(i)]));
        const epoch = Number(before.fence[0]?.epoch);
        const outcome = await store.fence({ observedEpoch: epoch, aboveEpoch: epoch, skip: 0n, atLeast });
        assert.equal(outcome.fenced, true);
        assert.equal(outcome.epoch, epoch + 1);
        for (const [name, floor] of atLeast) {
          assert.deepEqual(
            await db.sql('SELECT max_id::text AS m FROM leaf_alloc WHERE biz_tag = $1', [name]),
            [{ m: floor.toString() }],
          );
        }
        const after = await tablesExcept(db, names);
        // A skip of 0 raises nothing: only the fence row moved on, by one epoch, on the same database.
        assert.deepEqual(
          after.fence.map(({ epoch, identity }) => ({ epoch, identity })),
          [{ epoch: String(epoch + 1), identity: before.fence[0]?.identity }],
        );
        assert.deepEqual(
          after.leaf.map(({ biz_tag, max_id }) => ({ biz_tag, max_id })),
          before.leaf.map(({ biz_tag, max_id }) => ({ biz_tag, max_id })),
        );
        assert.deepEqual(after.highWater, before.highWater);
        assert.deepEqual(after.options, before.options);
      } finally {
        await store.close();
      }
    }));

  it('refuses a name with NUL, which PostgreSQL text cannot hold, and changes nothing', (t) =>
    withDatabase(t, async (db) => {
      const store = openPg(db);
      const grants = unjournaled(store);
      try {
        const keep = randomTag('keep');
        await store.addTag({ tag: keep, step: 5, start: 1n });
        await grants.advance(keep);
        const before = await tablesExcept(db, []);
        const name = "a\u0000'; UPDATE leaf_alloc SET max_id=1; --";
        const refused = (error: unknown) => isFrondError(error, 'STORE_UNAVAILABLE');
        await assert.rejects(store.addTag({ tag: name, step: 5, start: 1n }), refused);
        await assert.rejects(store.addTag({ tag: name, step: 5, start: 1n }, SETTING), refused);
        await assert.rejects(grants.advance(name), refused);
        await assert.rejects(store.advance(name), refused);
        await assert.rejects(store.tag(name), refused);
        await assert.rejects(store.setStep(name, 9), refused);
        await assert.rejects(
          store.addTag({ tag: randomTag(), step: 5, start: 1n }, { domain: 'bits:20', keyCheck: 'a\u0000' }),
          refused,
        );
        assert.deepEqual(await tablesExcept(db, []), before);
        // The store still serves: a refused statement broke nothing.
        assert.equal((await grants.advance(keep))?.maxId, 11n);
      } finally {
        await store.close();
      }
    }));
});

/** The range a grant hands out, `[maxId - step, maxId)`. */
function rangeOf(grant: Allocation | undefined): [bigint, bigint] {
  assert.ok(grant !== undefined);
  return [grant.maxId - BigInt(grant.step), grant.maxId];
}

/** Ranges in the order they were granted: each starts at or above the end of every one before. */
function assertIncreasing(ranges: readonly [bigint, bigint][]): void {
  let end: bigint | undefined;
  for (const [start, stop] of ranges) {
    assert.ok(end === undefined || start >= end, `[${start}, ${stop}) starts below ${end}`);
    assert.ok(stop > start);
    end = stop;
  }
}

describe("PostgreSQL store: frond's tables dropped under an open store", () => {
  it('goes on after frond_high_water and frond_fence are dropped: ranges never overlap and increase', (t) =>
    withDatabase(t, async (db) => {
      const plain = bare(openPg(db));
      const fenced = servedStore(openPg(db), { dataDir: tempDir(), fenceSkip: 1_000 });
      try {
        const tag = randomTag();
        await plain.addTag({ tag, step: 10, start: 1n });
        const ranges: [bigint, bigint][] = [];
        const grant = async () => {
          ranges.push(rangeOf(await plain.advance(tag)));
          ranges.push(rangeOf(await fenced.advance(tag, 3)));
        };
        await grant();
        await grant();
        await db.sql('DROP TABLE frond_high_water');
        await db.sql('DROP TABLE frond_fence');
        // The very next advance of each store succeeds: the statement that found a table missing
        // did nothing, the tables are created again, and the advance is tried once more.
        await grant();
        await grant();
        assert.equal((await db.sql("SELECT to_regclass('frond_high_water') IS NOT NULL AS t"))[0]?.t, true);
        assert.equal((await db.sql('SELECT count(*)::int AS n FROM frond_fence'))[0]?.n, 1);
        await db.sql('DROP TABLE frond_fence');
        await db.sql('DROP TABLE frond_high_water');
        await grant();
        assertIncreasing(ranges);
        const [, end] = ranges[ranges.length - 1] as [bigint, bigint];
        assert.deepEqual(
          await db.sql('SELECT max_id::text AS m FROM frond_high_water WHERE biz_tag = $1', [tag]),
          [{ m: end.toString() }],
        );
      } finally {
        await plain.close();
        await fenced.close();
      }
    }));

  it('goes on after frond_tag_options is dropped, and reads the kind from the table created again', (t) =>
    withDatabase(t, async (db) => {
      const store = openPg(db);
      const grants = unjournaled(store);
      try {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        const first = await grants.advance(tag);
        assert.deepEqual(first?.kind, PLAIN_KIND);
        await db.sql('DROP TABLE frond_tag_options');
        // From wherever the row started: the fences of the tests before raised new names' floor.
        assert.deepEqual(await grants.advance(tag), {
          maxId: (first?.maxId ?? 0n) + 10n,
          step: 10,
          tableStep: 10,
          kind: PLAIN_KIND,
        });
        const opaque = randomTag();
        const setting = { domain: 'bits:20', keyCheck: 'k' };
        await db.sql('DROP TABLE frond_tag_options');
        await store.addTag({ tag: opaque, step: 10, start: 1n }, setting);
        assert.deepEqual((await grants.advance(opaque))?.kind, { opaque: setting, format: null });
      } finally {
        await store.close();
      }
    }));

  it('goes on after frond_tag_formats is dropped, and reads the format from the table created again', (t) =>
    withDatabase(t, async (db) => {
      const store = openPg(db);
      const grants = unjournaled(store);
      try {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        await db.sql('DROP TABLE frond_tag_formats');
        assert.deepEqual((await grants.advance(tag))?.kind, PLAIN_KIND);
        const formatted = randomTag();
        const format = { format: 'ORD-{seq:6}', timeZone: 'UTC' };
        await db.sql('DROP TABLE frond_tag_formats');
        await store.addTag({ tag: formatted, step: 10, start: 1n, format });
        assert.deepEqual((await grants.advance(formatted))?.kind, { opaque: null, format });
        await db.sql('DROP TABLE frond_tag_formats');
        assert.deepEqual(await store.listFormats(), new Map());
      } finally {
        await store.close();
      }
    }));

  it('goes on after leaf_alloc is dropped: a tag added again lower goes on above its highest grant', (t) =>
    withDatabase(t, async (db) => {
      const store = openPg(db);
      const grants = unjournaled(store);
      try {
        const tag = randomTag();
        await store.addTag({ tag, step: 10, start: 1n });
        const ranges = [rangeOf(await grants.advance(tag)), rangeOf(await grants.advance(tag))];
        await db.sql('DROP TABLE leaf_alloc');
        // As at start: leaf_alloc is created again, empty.
        assert.equal(await grants.advance(tag), undefined);
        assert.deepEqual(await store.listTags(), []);
        await store.addTag({ tag, step: 10, start: 1n });
        ranges.push(rangeOf(await grants.advance(tag)));
        assertIncreasing(ranges);
      } finally {
        await store.close();
      }
    }));
});
