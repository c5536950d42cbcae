import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { isFrondError } from '../src/core/errors.js';
import { MYSQL_DDL } from '../src/stores/mysql/mysql-segment-store.js';
import { POSTGRES_DDL } from '../src/stores/postgres/postgres-segment-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { backendSkip } from './support/backend-filter.js';
import {
  assertOneLineError,
  type FrondProcess,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { type RestrictedAccount, restrictedAccount, runScript } from './support/restricted-account.js';
import { serviceMissing } from './support/service-gate.js';
import {
  createDatabase,
  SERVICE_NAME,
  type ServerDialect,
  type TestDatabase,
} from './support/test-database.js';

// frond on a real server as an account of its own, holding only what a DBA grants it: first Leaf's
// (SELECT and UPDATE on leaf_alloc: every statement of Leaf's IDAllocMapper, leaf-core/src/main/
// java/com/sankuai/inf/leaf/segment/dao/IDAllocMapper.java in Meituan-Dianping/Leaf at 86a6441,
// is a SELECT, lines 10, 19 and 33, or an UPDATE, lines 27 and 30), then what `frond db init
// --print --grant-to` prints. Before, Leaf's account started a node that answered every request
// Result{id=-3} with /readyz saying "store unreachable", and on PostgreSQL even every grant the
// docs listed could not serve: CREATE TABLE IF NOT EXISTS ran at every start, and PostgreSQL
// checks the schema's CREATE privilege first ("permission denied for schema public").

const DIALECTS: ServerDialect[] = ['postgres', 'mysql'];

const env = { FROND_OPAQUE_SECRET: randomBytes(32).toString('hex') };

/** A database of its own with Leaf's table (MariaDB: Leaf's DDL; PostgreSQL: its translation), and an account that holds nothing. */
async function leafDatabase(
  t: TestContext,
  dialect: ServerDialect,
): Promise<{ db: TestDatabase; account: RestrictedAccount } | undefined> {
  let db: TestDatabase;
  try {
    db = await createDatabase(dialect);
  } catch (error) {
    serviceMissing(t, SERVICE_NAME[dialect], (error as Error).message);
    return undefined;
  }
  const account = await restrictedAccount(db);
  t.after(async () => {
    await db.drop();
    await account.drop();
  });
  await db.sql(dialect === 'postgres' ? POSTGRES_DDL : MYSQL_DDL);
  return { db, account };
}

/** `tag` inserted by hand, as a Leaf user adds tags. */
async function insertTag(db: TestDatabase, tag: string, step: number): Promise<void> {
  const [a, b] = db.dialect === 'postgres' ? ['$1', '$2'] : ['?', '?'];
  await db.sql(`INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (${a}, 1, ${b})`, [tag, step]);
}

/** The account as a GRANT names it. */
function grantee(db: TestDatabase, account: RestrictedAccount): string {
  return db.dialect === 'postgres' ? account.name : `'${account.name}'@'%'`;
}

async function frondTables(db: TestDatabase): Promise<string[]> {
  const schema = db.dialect === 'postgres' ? "table_schema = 'public'" : 'table_schema = DATABASE()';
  const rows = await db.sql(
    `SELECT table_name AS name FROM information_schema.tables WHERE ${schema} AND table_name LIKE 'frond%' ORDER BY table_name`,
  );
  return rows.map((row) => String(row.name));
}

const serveArgs = (store: string) => [
  '--port',
  '0',
  '--data-dir',
  tempDir(),
  '--no-snowflake',
  '--store',
  store,
];

/** `count` IDs of `tag` on Leaf's path, one request each. */
async function leafIds(node: FrondProcess, tag: string, count: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${node.url}/api/segment/get/${tag}`);
    const body = await response.text();
    assert.equal(response.status, 200, body);
    ids.push(BigInt(body));
  }
  return ids;
}

/** `rounds` batches of 100 IDs of `tag` on frond's path. */
async function batchIds(node: FrondProcess, tag: string, rounds: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < rounds; i++) {
    const response = await fetch(`${node.url}/v1/segment/${tag}?count=100`);
    const body = (await response.json()) as { ids?: string[] };
    assert.equal(response.status, 200, JSON.stringify(body));
    ids.push(...(body.ids ?? []).map(BigInt));
  }
  return ids;
}

function assertUnique(ids: bigint[], what: string): void {
  assert.equal(new Set(ids).size, ids.length, `${what}: an ID was served twice`);
}

for (const dialect of DIALECTS) {
  const name = SERVICE_NAME[dialect];
  describe(`${name}: frond as a database account of its own`, { skip: backendSkip(name) }, () => {
    it("Leaf's account (SELECT, UPDATE on leaf_alloc) is refused at start, in one line naming frond's tables and the command that prints them", async (t) => {
      const opened = await leafDatabase(t, dialect);
      if (opened === undefined) return;
      const { db, account } = opened;
      const tag = randomTag('leaf');
      await insertTag(db, tag, 100);
      await db.sql(`GRANT SELECT, UPDATE ON leaf_alloc TO ${grantee(db, account)}`);

      // PostgreSQL tells a missing table from a refused one; MySQL answers "command denied" to an
      // account without a privilege on the database for a table that is missing or not granted.
      const tables =
        dialect === 'postgres'
          ? /has no frond_fence, frond_high_water, frond_tag_options, frond_tag_formats and frond_gaps and the account \S+ may not create them \(permission denied for schema public\)/
          : /the account \S+ cannot see frond_fence, frond_high_water, frond_tag_options, frond_tag_formats and frond_gaps \(missing, or no privilege on them\)/;
      const command = new RegExp(
        `serves no segment without them .*'frond db init --print --grant-to ${account.grantee} --store ${dialect}://${account.name}@127\\.0\\.0\\.1:\\d+/${db.name}'$`,
      );
      const serve = await runFrond(['serve', ...serveArgs(account.url)], { timeoutMs: 30_000 });
      assertOneLineError(serve, 2, tables);
      assertOneLineError(serve, 2, command);

      // The commands say the same, each in one line, exit 2.
      for (const args of [
        ['tag', 'list'],
        ['tag', 'add', randomTag('new')],
        ['db', 'fence', '--yes'],
        ['db', 'init'],
      ]) {
        const result = await runFrond([...args, '--store', account.url]);
        assertOneLineError(result, 2, /frond_fence|frond_tag_options/);
        assertOneLineError(result, 2, /'frond db init --print --grant-to /);
      }
      assert.deepEqual(await frondTables(db), [], 'nothing was created');
      const [row] = await db.sql(`SELECT max_id FROM leaf_alloc`);
      assert.equal(String(row?.max_id), '1', "Leaf's row is as it was");
    });

    it('with the GRANTs frond db init --print --grant-to prints, on tables an administrator made, serves, fences and lists; the tag commands need the second group', async (t) => {
      const opened = await leafDatabase(t, dialect);
      if (opened === undefined) return;
      const { db, account } = opened;
      const printed = await runFrond([
        'db',
        'init',
        '--print',
        '--grant-to',
        account.grantee,
        '--store',
        account.url,
      ]);
      assert.equal(printed.code, 0, printed.stderr);
      // The serving GRANTs first; the tag commands' group (`-- and for adding and removing tags`) later.
      const split = printed.stdout.indexOf('\n-- and for ');
      assert.ok(split > 0, printed.stdout);
      await runScript(db, printed.stdout.slice(0, split));
      // The DDL makes the worker-ID lease table too (for --worker-lease-store store).
      assert.deepEqual(await frondTables(db), [
        'frond_fence',
        'frond_gaps',
        'frond_high_water',
        'frond_tag_formats',
        'frond_tag_options',
        'frond_worker_lease',
      ]);
      const [one, two] = [randomTag('one'), randomTag('two')];
      await insertTag(db, one, 50);
      await insertTag(db, two, 1000);

      const node = await startFrond(serveArgs(account.url), { env });
      try {
        const ready = await fetch(`${node.url}/readyz`);
        assert.equal(ready.status, 200, await ready.text());
        const ones = await leafIds(node, one, 300);
        const twos = await batchIds(node, two, 3);
        assertUnique(ones, one);
        assertUnique(twos, two);
        assert.equal(ones.length + twos.length, 600);

        // The fence, as the account: every tag raised by the skip.
        const fenced = await runFrond(['db', 'fence', '--yes', '--store', account.url]);
        assert.equal(fenced.code, 0, fenced.stderr);
        assert.match(
          fenced.stdout,
          /^fenced \S+: 2 tags raised by 1000000000 \(and the records of removed tags and of new names\), epoch \d+/,
        );
        assertUnique([...ones, ...(await leafIds(node, one, 200))], `${one} across the fence`);
        assertUnique([...twos, ...(await batchIds(node, two, 2))], `${two} across the fence`);

        // Reading and set-step need nothing more.
        const listed = await runFrond(['tag', 'list', '--store', account.url]);
        assert.equal(listed.code, 0, listed.stderr);
        assert.match(listed.stdout, new RegExp(`\\n${one} `));
        assert.equal((await runFrond(['tag', 'set-step', one, '20', '--store', account.url])).code, 0);

        // Adding and removing tags need the second group: refused in one line naming the privilege.
        const three = randomTag('three');
        assertOneLineError(
          await runFrond(['tag', 'add', three, '--store', account.url]),
          2,
          /the account \S+ lacks INSERT on leaf_alloc, which adding a tag needs; an administrator grants what is missing with the SQL of 'frond db init --print --grant-to /,
        );
        assertOneLineError(
          await runFrond(['tag', 'remove', two, '--yes', '--store', account.url]),
          2,
          /the account \S+ lacks DELETE on leaf_alloc, which removing a tag needs/,
        );
        await runScript(db, printed.stdout.slice(split));
        const added = await runFrond(['tag', 'add', three, '--step', '10', '--store', account.url]);
        assert.equal(added.code, 0, added.stderr);
        const opaque = await runFrond(
          ['tag', 'add', randomTag('opaque'), '--opaque', 'bits:40', '--store', account.url],
          {
            env,
          },
        );
        assert.equal(opaque.code, 0, opaque.stderr);
        const removed = await runFrond(['tag', 'remove', two, '--yes', '--store', account.url]);
        assert.equal(removed.code, 0, removed.stderr);
        assertUnique(await leafIds(node, three, 50), three);

        // A privilege revoked while the node runs: its loads fail, and /readyz says the store
        // refuses and what it lacks, not that it is unreachable.
        await db.sql(`REVOKE INSERT ON frond_high_water FROM ${grantee(db, account)}`);
        const four = randomTag('four');
        await insertTag(db, four, 10);
        const refused = await fetch(`${node.url}/v1/segment/${four}`);
        const body = (await refused.json()) as { error: { code: string; message: string } };
        assert.equal(body.error.code, 'INVALID_CONFIG', JSON.stringify(body));
        assert.match(body.error.message, /lacks INSERT on frond_high_water, which serving segments/);
        const readiness = (await (await fetch(`${node.url}/readyz`)).json()) as {
          checks: { segment: { detail: string } };
        };
        assert.match(
          readiness.checks.segment.detail,
          /^store answers but refuses \(.*lacks INSERT on frond_high_water/,
        );
        assert.doesNotMatch(readiness.checks.segment.detail, /unreachable/);
      } finally {
        await node.stop();
      }
    });

    it('without INSERT on frond_gaps, the start check and a gap record say so in one line', async (t) => {
      const opened = await leafDatabase(t, dialect);
      if (opened === undefined) return;
      const { db, account } = opened;
      const printed = await runFrond([
        'db',
        'init',
        '--print',
        '--grant-to',
        account.grantee,
        '--store',
        account.url,
      ]);
      assert.equal(printed.code, 0, printed.stderr);
      await runScript(db, printed.stdout.slice(0, printed.stdout.indexOf('\n-- and for ')));
      await db.sql(`REVOKE INSERT ON frond_gaps FROM ${grantee(db, account)}`);
      const store = openStore(account.url);
      const refused = (error: unknown) =>
        isFrondError(error, 'INVALID_CONFIG') &&
        /lacks INSERT on frond_gaps, which serving segments/.test((error as Error).message) &&
        !(error as Error).message.includes('\n');
      try {
        await assert.rejects(store.checkServing?.() ?? Promise.reject(new Error('no check')), refused);
        await assert.rejects(
          store.recordGaps([{ tag: randomTag(), start: 1n, end: 2n, reason: 'crash', node: 'n', at: 0 }]),
          refused,
        );
      } finally {
        await store.close();
      }
    });
  });
}
