import assert from 'node:assert/strict';
import { after, describe, it, type TestContext } from 'node:test';
import mysql from 'mysql2/promise';
import { isFrondError } from '../src/core/errors.js';
import type { FormatSetting, OpaqueSetting } from '../src/core/tag-catalogue.js';
import { PLAIN_KIND } from '../src/core/tag-kind.js';
import { servedStore } from '../src/stores/fencing/served-store.js';
import type { MysqlSegmentStore } from '../src/stores/mysql/mysql-segment-store.js';
import { openStore } from '../src/stores/store-registry.js';
import { describeSegmentStore, type RawTable } from './segment-store.suite.js';
import { tempDir } from './support/frond-process.js';
import { mariadbBinaries, SqlModeServer } from './support/mariadb-sql-mode.js';
import { serviceMissing } from './support/service-gate.js';
import { bare, unjournaled } from './support/store-views.js';
import { createDatabase, type TestDatabase } from './support/test-database.js';

/**
 * Tag names and settings that are SQL, through every MySQL store operation, on a server whose
 * sql_mode has NO_BACKSLASH_ESCAPES (a server of the test's own) and on the shared one. On the
 * first, the driver's client-side escaping (a quote sent as backslash-quote) ends the string early:
 * before the store sent values as parameters, `GET /api/segment/get/z%27%3B%20UPDATE%20leaf_alloc%20SET%20max_id%3D1...`
 * rewrote every row. After each operation, every row that is not the tag's own, in leaf_alloc and
 * in frond's tables, is exactly as it was (read on a connection of the test's own).
 */

/** The request of the issue, its path decoded: the tag the node passed to the store. */
const ISSUE_PAYLOAD = "z'; UPDATE leaf_alloc SET max_id=1, step=1; -- ";

const CORPUS: readonly string[] = [
  ISSUE_PAYLOAD,
  "a\\' OR 1=1 -- ",
  "a\\\\' OR 1=1 -- ",
  "x\\'; DELETE FROM frond_high_water; -- ",
  "'; DROP TABLE leaf_alloc; -- ",
  "') OR ('1'='1",
  "'",
  "''",
  '"',
  '`; SELECT 1; -- ',
  '\\',
  "\\\\'",
  '\\0\\n\\r\\Z\\%\\_',
  '%',
  '_',
  'a%b_c',
  'nul\u0000byte',
  "订单'; --",
  "é\\'ü",
  '😀'.repeat(128),
  "'".repeat(128),
  '\\'.repeat(128),
  `${ISSUE_PAYLOAD}${'x'.repeat(128)}`.slice(0, 128),
];

/** A format that is SQL too (the store stores it as given): id_format is varchar(255), time_zone varchar(64). */
const FORMAT: FormatSetting = {
  format: "ORD-{seq:6}'); DELETE FROM leaf_alloc; -- \\' `x`",
  timeZone: "UTC'; UPDATE frond_tag_formats SET id_format='x'; -- ",
};

/** A setting that is SQL too: opaque_domain is varchar(16), key_check varchar(32). */
const SETTING: OpaqueSetting = { domain: "d\\'; --", keyCheck: "k'); DELETE FROM leaf_alloc; -- " };

const binaries = mariadbBinaries();
let noBackslashServer: Promise<SqlModeServer> | undefined;
after(async () => {
  await (await noBackslashServer?.catch(() => undefined))?.stop();
});

/** The server with NO_BACKSLASH_ESCAPES, started once for the file; undefined when skipped. */
async function serverWithoutBackslashes(t: TestContext): Promise<SqlModeServer | undefined> {
  if (typeof binaries === 'string') {
    serviceMissing(t, "A MariaDB server of the test's own (mariadbd, mariadb-install-db)", binaries);
    return undefined;
  }
  noBackslashServer ??= SqlModeServer.start(binaries, 'NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES');
  return noBackslashServer;
}

/** A database on one of the two servers, its store URL and a connection of the test's own. */
interface Target {
  url: string;
  observer: mysql.Connection;
  /** Deletes a row as an operator would by hand, the tag as a parameter. */
  deleteRow(tag: string): Promise<void>;
  close(): Promise<void>;
}

let databases = 0;

const TARGETS: { name: string; open(t: TestContext): Promise<Target | undefined> }[] = [
  {
    name: 'MariaDB with NO_BACKSLASH_ESCAPES',
    async open(t) {
      const server = await serverWithoutBackslashes(t);
      if (server === undefined) return undefined;
      const name = `injection_${++databases}`;
      await server.createDatabase(name);
      const observer = await observe(server.port, name);
      // The premise: this server reads a backslash in a string as a character, not as an escape.
      assert.match(await globalMode(observer), /NO_BACKSLASH_ESCAPES/);
      return {
        url: server.url(name),
        observer,
        deleteRow: async (tag) => {
          await observer.execute('DELETE FROM leaf_alloc WHERE biz_tag = ?', [tag]);
        },
        close: () => observer.end(),
      };
    },
  },
  {
    name: 'MariaDB (the shared server)',
    async open(t) {
      let database: TestDatabase;
      try {
        database = await createDatabase('mysql');
      } catch (error) {
        serviceMissing(t, 'MariaDB', (error as Error).message);
        return undefined;
      }
      const observer = await observe(3306, database.name);
      return {
        url: database.url,
        observer,
        deleteRow: async (tag) => {
          await observer.execute('DELETE FROM leaf_alloc WHERE biz_tag = ?', [tag]);
        },
        close: async () => {
          await observer.end();
          await database.drop();
        },
      };
    },
  },
];

function observe(port: number, database: string): Promise<mysql.Connection> {
  return mysql.createConnection({
    host: '127.0.0.1',
    port,
    user: 'root',
    database,
    connectTimeout: 3_000,
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
  });
}

async function globalMode(connection: mysql.Connection): Promise<string> {
  const [rows] = await connection.query('SELECT @@GLOBAL.sql_mode AS mode');
  return String((rows as { mode: string }[])[0]?.mode);
}

type Rows = Record<string, unknown>[];
interface Snapshot {
  tables: Rows;
  leaf: Rows;
  highWater: Rows;
  fence: Rows;
  options: Rows;
  formats: Rows;
}

/** Everything the store could touch, tags as hex so that bytes are compared. */
async function snapshot(connection: mysql.Connection): Promise<Snapshot> {
  const read = async (text: string) => (await connection.query(text))[0] as Rows;
  return {
    tables: await read('SHOW TABLES'),
    leaf: await read(
      'SELECT HEX(biz_tag) AS tag, max_id, step, HEX(description) AS description, update_time FROM leaf_alloc ORDER BY HEX(biz_tag)',
    ),
    highWater: await read('SELECT HEX(biz_tag) AS tag, max_id FROM frond_high_water ORDER BY HEX(biz_tag)'),
    fence: await read('SELECT id, epoch, identity, fenced_at FROM frond_fence ORDER BY id'),
    options: await read(
      'SELECT HEX(biz_tag) AS tag, HEX(opaque_domain) AS domain, HEX(key_check) AS key_check FROM frond_tag_options ORDER BY HEX(biz_tag)',
    ),
    formats: await read(
      'SELECT HEX(biz_tag) AS tag, HEX(id_format) AS format, HEX(time_zone) AS zone FROM frond_tag_formats ORDER BY HEX(biz_tag)',
    ),
  };
}

const hexOf = (text: string) => Buffer.from(text, 'utf8').toString('hex').toUpperCase();

function others(state: Snapshot, tag: string): Snapshot {
  const hex = hexOf(tag);
  const keep = (rows: Rows) => rows.filter((row) => row.tag !== hex);
  return {
    ...state,
    leaf: keep(state.leaf),
    highWater: keep(state.highWater),
    options: keep(state.options),
    formats: keep(state.formats),
  };
}

interface OwnRows {
  leaf: Rows;
  highWater: Rows;
  options: Rows;
  formats: Rows;
}

function own(state: Snapshot, tag: string): OwnRows {
  const hex = hexOf(tag);
  const mine = (rows: Rows) => rows.filter((row) => row.tag === hex);
  return {
    leaf: mine(state.leaf),
    highWater: mine(state.highWater),
    options: mine(state.options),
    formats: mine(state.formats),
  };
}

const shown = (tag: string) => JSON.stringify(tag.length > 40 ? `${tag.slice(0, 40)}…` : tag);

/**
 * `operation` on `tag`; every row but the tag's own is as it was, whatever the operation did (the
 * comparison runs even when it threw, so damage is reported as damage). Resolves the tag's own
 * rows afterwards.
 */
async function confined(
  target: Target,
  tag: string,
  what: string,
  operation: () => Promise<unknown>,
): Promise<OwnRows> {
  const before = await snapshot(target.observer);
  const outcome = await operation().then(
    () => undefined,
    (error: unknown) => error,
  );
  const afterwards = await snapshot(target.observer);
  assert.deepEqual(
    others(afterwards, tag),
    others(before, tag),
    `${what}(${shown(tag)}) changed rows that are not the tag's own`,
  );
  if (outcome !== undefined) throw outcome;
  return own(afterwards, tag);
}

const rejectsWith = (code: string, operation: () => Promise<unknown>) => () =>
  assert.rejects(operation(), (error) => isFrondError(error, code as never));

/** Rows of other tags, of frond's tables and the fence row, for the corpus to leave alone. */
async function seed(store: MysqlSegmentStore): Promise<void> {
  const plain = unjournaled(store);
  await store.fence({ observedEpoch: 0, aboveEpoch: 0, skip: 0n, atLeast: new Map() });
  await store.addTag({ tag: 'victim', step: 10, start: 1000n, description: 'victim' });
  await store.addTag({ tag: 'z', step: 7, start: 2000n });
  await store.addTag({ tag: 'a', step: 7, start: 3000n });
  await store.addTag({ tag: 'victim-opaque', step: 10, start: 1n }, { domain: 'bits:20', keyCheck: 'k' });
  for (const tag of ['victim', 'z', 'a', 'victim-opaque']) assert.ok(await plain.advance(tag));
  assert.equal((await store.advance('victim'))?.kind, 'granted');
}

for (const target of TARGETS) {
  describe(`SQL injection through tag names and settings: ${target.name}`, { timeout: 300_000 }, () => {
    it('serves plain tags named as SQL, and touches no other row', async (t) => {
      const opened = await target.open(t);
      if (opened === undefined) return;
      const store = openStore(opened.url) as MysqlSegmentStore;
      const plain = unjournaled(store);
      try {
        await seed(store);
        const epoch = Number((await snapshot(opened.observer)).fence[0]?.epoch);
        for (const tag of CORPUS) {
          const check = (what: string, operation: () => Promise<unknown>): Promise<OwnRows> =>
            confined(opened, tag, what, operation);
          // Without a row: nothing found, nothing written.
          await check('tag', async () => assert.equal(await store.tag(tag), undefined));
          await check('tag', async () => assert.equal(await store.tag(tag), undefined));
          await check('unjournaled advance', async () => assert.equal(await plain.advance(tag), undefined));
          await check('unjournaled advance', async () =>
            assert.equal(await plain.advance(tag, 5), undefined),
          );
          await check('primitive advance', async () => assert.equal(await store.advance(tag), undefined));
          await check(
            'setStep',
            rejectsWith('TAG_NOT_FOUND', () => store.setStep(tag, 7)),
          );
          const none = await check('tag', async () => undefined);
          assert.deepEqual(none, { leaf: [], highWater: [], options: [], formats: [] }, shown(tag));
          // Its row, its name and description stored byte for byte.
          const added = await check('addTag', () =>
            store.addTag({ tag, step: 10, start: 5n, description: tag }),
          );
          assert.equal(added.leaf.length, 1, shown(tag));
          assert.equal(added.leaf[0]?.max_id, '5');
          assert.equal(added.leaf[0]?.description, hexOf(tag));
          await check(
            'addTag',
            rejectsWith('TAG_EXISTS', () => store.addTag({ tag, step: 20, start: 1n })),
          );
          await check('tag', async () => {
            const row = await store.tag(tag);
            assert.equal(row?.tag, tag);
            assert.equal(row?.maxId, 5n);
            assert.equal(row?.step, 10);
            assert.equal(row?.description, tag);
          });
          await check('unjournaled advance', async () =>
            assert.deepEqual(await plain.advance(tag), {
              maxId: 15n,
              step: 10,
              tableStep: 10,
              kind: PLAIN_KIND,
            }),
          );
          await check('unjournaled advance', async () =>
            assert.deepEqual(await plain.advance(tag, 3), {
              maxId: 18n,
              step: 3,
              tableStep: 10,
              kind: PLAIN_KIND,
            }),
          );
          const fenced = await check('primitive advance', async () => {
            const result = await store.advance(tag);
            assert.equal(result?.kind, 'granted');
            assert.equal(result.kind === 'granted' && result.epoch, epoch);
            assert.deepEqual(result.kind === 'granted' && result.allocation, {
              maxId: 28n,
              step: 10,
              tableStep: 10,
              kind: PLAIN_KIND,
            });
          });
          assert.equal(fenced.leaf[0]?.max_id, '28');
          assert.deepEqual(fenced.highWater, [{ tag: hexOf(tag), max_id: '28' }]);
          const stepped = await check('setStep', () => store.setStep(tag, 20));
          assert.equal(stepped.leaf[0]?.step, 20);
          await check('tag', async () => assert.deepEqual((await store.tag(tag))?.opaque, null));
          await check(
            'addTag opaque',
            rejectsWith('TAG_EXISTS', () => store.addTag({ tag, step: 10, start: 1n }, SETTING)),
          );
          await check('listTags', async () =>
            assert.equal((await store.listTags()).filter((name) => name === tag).length, 1),
          );
          await check('listOpaque', async () => assert.equal((await store.listOpaque()).has(tag), false));
          // Removed: its row goes, its high-water stays; added again, it starts there.
          const removed = await check('removeTag', async () => assert.equal(await store.removeTag(tag), 28n));
          assert.deepEqual(removed.leaf, [], shown(tag));
          assert.deepEqual(removed.highWater, [{ tag: hexOf(tag), max_id: '28' }]);
          await check(
            'removeTag',
            rejectsWith('TAG_NOT_FOUND', () => store.removeTag(tag)),
          );
          const back = await check('addTag', () => store.addTag({ tag, step: 10, start: 1n }));
          assert.equal(back.leaf[0]?.max_id, '28', shown(tag));
        }
      } finally {
        await store.close();
        await opened.close();
      }
    });

    it('serves formatted tags named as SQL under formats that are SQL, and touches no other row', async (t) => {
      const opened = await target.open(t);
      if (opened === undefined) return;
      const store = openStore(opened.url) as MysqlSegmentStore;
      const plain = unjournaled(store);
      const kind = { opaque: null, format: FORMAT };
      try {
        await seed(store);
        for (const tag of CORPUS) {
          const check = (what: string, operation: () => Promise<unknown>): Promise<OwnRows> =>
            confined(opened, tag, what, operation);
          const added = await check('addTag formatted', () =>
            store.addTag({ tag, step: 10, start: 1n, description: tag, format: FORMAT }),
          );
          assert.deepEqual(added.formats, [
            { tag: hexOf(tag), format: hexOf(FORMAT.format), zone: hexOf(FORMAT.timeZone) },
          ]);
          assert.equal(added.leaf.length, 1, shown(tag));
          await check('tag', async () => assert.deepEqual((await store.tag(tag))?.format, FORMAT));
          await check('unjournaled advance', async () =>
            assert.deepEqual(await plain.advance(tag), { maxId: 11n, step: 10, tableStep: 10, kind }),
          );
          await check('listFormats', async () =>
            assert.deepEqual((await store.listFormats()).get(tag), FORMAT),
          );
          await check('removeTag', () => store.removeTag(tag));
          const refused = await check(
            'addTag',
            rejectsWith('FORMAT_TAG_FIXED', () => store.addTag({ tag, step: 10, start: 1n })),
          );
          assert.deepEqual(refused.leaf, [], shown(tag));
          await check(
            'addTag other format',
            rejectsWith('FORMAT_TAG_FIXED', () =>
              store.addTag({ tag, step: 10, start: 1n, format: { ...FORMAT, timeZone: 'UTC' } }),
            ),
          );
          const back = await check('addTag same format', () =>
            store.addTag({ tag, step: 10, start: 1n, format: FORMAT }),
          );
          assert.equal(back.leaf[0]?.max_id, '11', shown(tag));
          assert.equal(back.formats.length, 1, shown(tag));
        }
      } finally {
        await store.close();
        await opened.close();
      }
    });

    it('serves opaque tags named as SQL under settings that are SQL, and touches no other row', async (t) => {
      const opened = await target.open(t);
      if (opened === undefined) return;
      const store = openStore(opened.url) as MysqlSegmentStore;
      const plain = unjournaled(store);
      try {
        await seed(store);
        for (const tag of CORPUS) {
          const check = (what: string, operation: () => Promise<unknown>): Promise<OwnRows> =>
            confined(opened, tag, what, operation);
          const added = await check('addTag opaque', () =>
            store.addTag({ tag, step: 10, start: 1n, description: tag }, SETTING),
          );
          assert.deepEqual(added.options, [
            { tag: hexOf(tag), domain: hexOf(SETTING.domain), key_check: hexOf(SETTING.keyCheck) },
          ]);
          assert.equal(added.leaf.length, 1, shown(tag));
          await check('tag', async () => assert.deepEqual((await store.tag(tag))?.opaque, SETTING));
          await check('unjournaled advance', async () =>
            assert.deepEqual(await plain.advance(tag), {
              maxId: 11n,
              step: 10,
              tableStep: 10,
              kind: { opaque: SETTING, format: null },
            }),
          );
          await check('primitive advance', async () => {
            const result = await store.advance(tag, 4);
            assert.deepEqual(result?.kind === 'granted' && result.allocation, {
              maxId: 15n,
              step: 4,
              tableStep: 10,
              kind: { opaque: SETTING, format: null },
            });
          });
          await check('listOpaque', async () =>
            assert.deepEqual((await store.listOpaque()).get(tag), SETTING),
          );
          await check(
            'addTag',
            rejectsWith('TAG_EXISTS', () => store.addTag({ tag, step: 10, start: 1n })),
          );
          // Its row deleted by hand: the name stays opaque, and refuses both kinds of new tag.
          await check('DELETE', () => opened.deleteRow(tag));
          const refused = await check(
            'addTag',
            rejectsWith('OPAQUE_TAG_FIXED', () => store.addTag({ tag, step: 10, start: 1n })),
          );
          assert.deepEqual(refused.leaf, [], shown(tag));
          await check(
            'addTag opaque',
            rejectsWith('OPAQUE_TAG_FIXED', () => store.addTag({ tag, step: 10, start: 1n }, SETTING)),
          );
          await check('tag', async () => assert.equal(await store.tag(tag), undefined));
        }
      } finally {
        await store.close();
        await opened.close();
      }
    });
  });
}

// The whole store contract on the server with NO_BACKSLASH_ESCAPES, alone and through the fence.
let contractDatabase: Promise<{ server: SqlModeServer; url: string }> | undefined;
async function contractStore(t: TestContext): Promise<{ server: SqlModeServer; url: string } | undefined> {
  const server = await serverWithoutBackslashes(t);
  if (server === undefined) return undefined;
  contractDatabase ??= server
    .createDatabase('contract')
    .then(() => ({ server, url: server.url('contract') }));
  return contractDatabase;
}

const raw: RawTable = {
  async deleteRow(t, tag) {
    await (await contractStore(t))?.server.sql('DELETE FROM leaf_alloc WHERE biz_tag = ?', [tag], 'contract');
  },
  async insertRow(t, tag, maxId, step) {
    await (await contractStore(t))?.server.sql(
      'INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES (?, ?, ?)',
      [tag, maxId.toString(), step],
      'contract',
    );
  },
};

describeSegmentStore(
  'MariaDB with NO_BACKSLASH_ESCAPES',
  async (t) => {
    const database = await contractStore(t);
    return database && bare(openStore(database.url));
  },
  raw,
);

describeSegmentStore(
  'MariaDB with NO_BACKSLASH_ESCAPES, fenced',
  async (t) => {
    const database = await contractStore(t);
    return database && servedStore(openStore(database.url), { dataDir: tempDir(), fenceSkip: 1_000_000_000 });
  },
  raw,
);
