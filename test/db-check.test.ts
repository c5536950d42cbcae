import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { MYSQL_DDL } from '../src/stores/mysql/mysql-segment-store.js';
import { POSTGRES_DDL } from '../src/stores/postgres/postgres-segment-store.js';
import { backendSkip } from './support/backend-filter.js';
import { runFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { serviceMissing } from './support/service-gate.js';
import {
  createDatabase,
  SERVICE_NAME,
  type ServerDialect,
  type TestDatabase,
} from './support/test-database.js';

// `frond db check`: before a fence adds 10^9 to every tag, the tags it would hurt, on each store.

const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };

interface Backend {
  name: string;
  /** A new empty store with frond's tables (`frond db init`), or undefined when the service is missing. */
  open(t: TestContext): Promise<string | undefined>;
}

/** A database of its own for one test, dropped after it. */
async function database(t: TestContext, dialect: ServerDialect): Promise<TestDatabase | undefined> {
  try {
    const db = await createDatabase(dialect);
    t.after(() => db.drop());
    return db;
  } catch (error) {
    serviceMissing(t, SERVICE_NAME[dialect], (error as Error).message);
    return undefined;
  }
}

const BACKENDS: Backend[] = [
  {
    name: 'SQLite',
    async open() {
      const store = `sqlite:${join(tempDir(), 'frond.db')}`;
      assert.equal((await runFrond(['db', 'init', '--store', store])).code, 0);
      return store;
    },
  },
  ...(['postgres', 'mysql'] as const).map(
    (dialect): Backend => ({
      name: SERVICE_NAME[dialect],
      async open(t) {
        const db = await database(t, dialect);
        if (db === undefined) return undefined;
        assert.equal((await runFrond(['db', 'init', '--store', db.url])).code, 0);
        return db.url;
      },
    }),
  ),
];

async function add(store: string, tag: string, ...args: string[]): Promise<void> {
  const result = await runFrond(['tag', 'add', tag, ...args, '--store', store], { env });
  assert.equal(result.code, 0, result.stderr);
}

/** The first line, and the table's rows as cells (split where two or more spaces are). */
function parse(stdout: string): { summary: string; rows: string[][] } {
  const [summary = '', ...lines] = stdout.trimEnd().split('\n');
  return { summary, rows: lines.map((line) => line.split(/ {2,}/)) };
}

const SIGNED = 'the largest of a signed 32-bit INT column';
const UNSIGNED = 'the largest of an unsigned 32-bit INT column';

for (const backend of BACKENDS) {
  describe(`${backend.name}: frond db check`, { skip: backendSkip(backend.name) }, () => {
    it('lists the tags the next fences put at risk, by --fence-skip, and exits 1; a store with none exits 0', async (t) => {
      const store = await backend.open(t);
      if (store === undefined) return;
      const tags = {
        safe: randomTag('a-safe'),
        signedNext: randomTag('b-signed'),
        signedTwo: randomTag('c-signed'),
        unsigned: randomTag('d-unsigned'),
        bigStep: randomTag('e-step'),
        smallDomain: randomTag('f-opaque'),
        bigDomain: randomTag('g-opaque'),
      };
      await add(store, tags.safe, '--start', '1000');
      await add(store, tags.signedNext, '--start', '1500000000');
      await add(store, tags.signedTwo, '--start', '200000000');
      await add(store, tags.unsigned, '--start', '3000000000');
      await add(store, tags.bigStep, '--step', '1500000000');
      await add(store, tags.smallDomain, '--opaque', 'bits:20');
      await add(store, tags.bigDomain, '--opaque', 'digits:12');

      const checked = await runFrond(['db', 'check', '--store', store]);
      assert.equal(checked.code, 1, checked.stderr);
      const { summary, rows } = parse(checked.stdout);
      assert.match(
        summary,
        /^checked 7 tags in (sqlite|postgres|mysql):\S+ against a fence skip of 1000000000: 5 at risk$/,
      );
      assert.deepEqual(rows, [
        ['TAG', 'MAX_ID', 'STEP', 'KIND', 'RISK'],
        [
          tags.signedNext,
          '1500000000',
          '1000',
          'plain',
          `the next fence takes its IDs past 2147483647, ${SIGNED}`,
        ],
        [tags.signedTwo, '200000000', '1000', 'plain', `two fences take its IDs past 2147483647, ${SIGNED}`],
        [
          tags.unsigned,
          '3000000000',
          '1000',
          'plain',
          `two fences take its IDs past 4294967295, ${UNSIGNED}`,
        ],
        [
          tags.bigStep,
          '1',
          '1500000000',
          'plain',
          'its step is larger than the skip: a segment lost in a failover reaches past the fence, and is handed out again',
        ],
        [
          tags.smallDomain,
          '1',
          '1000',
          'bits:20',
          'the next fence uses up its 1048575 segment IDs (fewer than the skip)',
        ],
      ]);

      // The nodes' skip: with 10^6 the 32-bit columns last, the step is above it, and bits:20
      // (1,048,575 segment IDs) is used up by the second fence; with 10^10 the tag at 1,000 passes
      // both 32-bit columns at the next fence, and digits:12 (9 × 10^11 segment IDs) lasts 89.
      const small = await runFrond(['db', 'check', '--fence-skip', '1000000', '--store', store]);
      assert.equal(small.code, 1);
      assert.deepEqual(parse(small.stdout).rows.slice(1), [
        [
          tags.bigStep,
          '1',
          '1500000000',
          'plain',
          'its step is larger than the skip: a segment lost in a failover reaches past the fence, and is handed out again',
        ],
        [tags.smallDomain, '1', '1000', 'bits:20', 'two fences use up its 1048575 segment IDs'],
      ]);
      const large = await runFrond(['db', 'check', '--fence-skip', '10000000000', '--store', store]);
      assert.equal(large.code, 1);
      const risky = parse(large.stdout).rows.filter((row) => row[0] === tags.safe);
      assert.deepEqual(risky, [
        [tags.safe, '1000', '1000', 'plain', `the next fence takes its IDs past 2147483647, ${SIGNED}`],
        [tags.safe, '1000', '1000', 'plain', `the next fence takes its IDs past 4294967295, ${UNSIGNED}`],
      ]);
      assert.ok(!parse(large.stdout).rows.some((row) => row[0] === tags.bigDomain), large.stdout);

      const quiet = await backend.open(t);
      if (quiet === undefined) return;
      await add(quiet, randomTag('calm'), '--start', '1');
      const none = await runFrond(['db', 'check', '--store', quiet]);
      assert.equal(none.code, 0, none.stderr);
      assert.match(none.stdout, /^checked 1 tag in \S+ against a fence skip of 1000000000: none at risk\n$/);
    });
  });
}

for (const dialect of ['postgres', 'mysql'] as const) {
  const name = SERVICE_NAME[dialect];
  describe(`${name}: frond db check on Leaf's database`, { skip: backendSkip(name) }, () => {
    it("reads Leaf's table as it is and creates nothing (no frond table: no opaque tag)", async (t) => {
      const db = await database(t, dialect);
      if (db === undefined) return;
      await db.sql(dialect === 'postgres' ? POSTGRES_DDL : MYSQL_DDL);
      const tag = randomTag('leaf');
      const mark = (n: number) => (dialect === 'postgres' ? `$${n}` : '?');
      await db.sql(`INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (${mark(1)}, 1500000000, 1000)`, [
        tag,
      ]);
      const checked = await runFrond(['db', 'check', '--store', db.url]);
      assert.equal(checked.code, 1, checked.stderr);
      assert.deepEqual(parse(checked.stdout).rows.slice(1), [
        [tag, '1500000000', '1000', 'plain', `the next fence takes its IDs past 2147483647, ${SIGNED}`],
      ]);
      const schema = dialect === 'postgres' ? "table_schema = 'public'" : 'table_schema = DATABASE()';
      const made = await db.sql(
        `SELECT table_name FROM information_schema.tables WHERE ${schema} AND table_name LIKE 'frond%'`,
      );
      assert.deepEqual(made, [], 'db check created no table');
    });
  });
}
