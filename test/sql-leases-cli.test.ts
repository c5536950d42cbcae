import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { assertOneLineError, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { takeIds, workerIdOf } from './support/snowflake-traffic.js';
import { leaseRows } from './support/sql-leases.js';
import { SERVICE_NAME, type ServerDialect, testDatabase } from './support/test-database.js';

/** `frond serve` on SQL leases of `url`, short timings (the CLI's floors are 1000 ms and 100 ms). */
function serveArgs(where: string[], name: string): string[] {
  return [
    'serve',
    '--port',
    '0',
    '--no-segment',
    ...where,
    '--name',
    name,
    '--worker-lease-ttl-ms',
    '1000',
    '--coordinator-timeout-ms',
    '500',
    '--data-dir',
    tempDir(),
  ];
}

describe('--worker-lease-store: what the CLI refuses', () => {
  it('refuses store without a database server in --store, and a value that is no database URL, in one line without the password', async () => {
    assertOneLineError(
      await runFrond(serveArgs(['--worker-lease-store', 'store'], 'cli')),
      2,
      /^frond: --worker-lease-store store needs --store postgres:\/\/USER@HOST:PORT\/DB or mysql:\/\/USER@HOST:PORT\/DB \(none is given/,
    );
    assertOneLineError(
      await runFrond(serveArgs(['--store', 'sqlite:ids.db', '--worker-lease-store', 'store'], 'cli')),
      2,
      /^frond: --worker-lease-store store needs --store .* \(an SQLite file is one machine's\)/,
    );
    const wrong = await runFrond(serveArgs(['--worker-lease-store', 'redis://u:s3cret,x@h/0'], 'cli'));
    assertOneLineError(
      wrong,
      2,
      /^frond: --worker-lease-store "redis:\/\/\*\*\*@h\/0" is invalid: use postgres:\/\//,
    );
    const parameter = await runFrond(
      serveArgs(['--worker-lease-store', 'postgres://u:s3cret@h/db?nope=1'], 'cli'),
    );
    assertOneLineError(
      parameter,
      2,
      /^frond: --worker-lease-store postgres:\/\/\*\*\*@h\/db\?nope=1: unknown parameter "nope"/,
    );
    for (const result of [wrong, parameter]) assert.doesNotMatch(result.stderr, /s3cret/);
    assertOneLineError(
      await runFrond([
        ...serveArgs(['--worker-lease-store', 'postgres://h/db'], 'cli'),
        '--zk',
        '127.0.0.1:2181',
      ]),
      2,
      /^frond: --zk and --worker-lease-store: pick one$/,
    );
    assertOneLineError(
      await runFrond(serveArgs(['--worker-lease-store', 'postgres://h/db', '--worker-id', '3'], 'cli')),
      2,
      /^frond: --worker-id and --worker-lease-store: pick one$/,
    );
  });

  it("prints frond_worker_lease with frond's other tables for a database server, and not for SQLite", async () => {
    for (const [store, ddl] of [
      ['postgres://h:1/db', /CREATE TABLE IF NOT EXISTS frond_worker_lease \(\n {2}name {11}VARCHAR\(200\)/],
      [
        'mysql://h:1/db',
        /CREATE TABLE IF NOT EXISTS `frond_worker_lease` \(\n {2}`name` varchar\(200\) CHARACTER SET ascii/,
      ],
    ] as const) {
      const printed = await runFrond(['db', 'init', '--print', '--store', store]);
      assert.equal(printed.code, 0, printed.stderr);
      assert.match(printed.stdout, ddl);
      assert.match(printed.stdout, /frond_tag_options[\s\S]*frond_worker_lease[\s\S]*;\n$/);
    }
    const sqlite = await runFrond(['db', 'init', '--print', '--store', 'sqlite:x.db']);
    assert.doesNotMatch(sqlite.stdout, /frond_worker_lease/);
  });
});

for (const dialect of ['postgres', 'mysql'] as ServerDialect[]) {
  const server = testDatabase(dialect);
  after(() => server.drop());

  describe(`--worker-lease-store on ${SERVICE_NAME[dialect]}`, () => {
    it("creates frond_worker_lease with 'frond db init', and a node on 'store' leases from it", async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      const init = await runFrond(['db', 'init', '--store', database.url]);
      assert.equal(init.code, 0, init.stderr);
      const [count] = await database.sql('SELECT COUNT(*) AS n FROM frond_worker_lease');
      assert.equal(Number(count?.n), 0, 'the table is there, empty');
      const node = await startFrond(
        serveArgs(['--store', database.url, '--worker-lease-store', 'store'], 'init').slice(1),
      );
      t.after(() => node.stop('SIGKILL'));
      assert.equal(workerIdOf(node), 0);
      assert.equal((await takeIds(node, 10)).length, 10);
      const holders = await leaseRows(database).holders('init');
      assert.match(holders.get(0) ?? '', /^[0-9a-f]{16} \S+:\d+$/);
      assert.equal(await node.stop('SIGTERM'), 0);
      assert.equal((await leaseRows(database).holders('init')).size, 0, 'released on a clean stop');
    });

    it('refuses to start in one line once every worker ID stayed held for the whole wait', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      await leaseRows(database).holdAllBut('full', []);
      const started = Date.now();
      const result = await runFrond(serveArgs(['--worker-lease-store', database.url], 'full'));
      const waited = Date.now() - started;
      assertOneLineError(
        result,
        1,
        /^frond: all 1024 worker IDs are held by live leases in \S+ frond_worker_lease --name full$/,
      );
      // Twice the TTL and the timeout: a crashed node's claim would have lapsed by then.
      assert.ok(waited >= 2500, `gave up after ${waited} ms`);
    });

    it('refuses a frond_worker_lease that lacks a column, and leaves it as it is', async (t) => {
      const database = await server.open(t);
      if (database === undefined) return;
      await database.sql('DROP TABLE IF EXISTS frond_worker_lease');
      await database.sql(
        'CREATE TABLE frond_worker_lease (name VARCHAR(200), worker_id INT, holder VARCHAR(200))',
      );
      const result = await runFrond(serveArgs(['--worker-lease-store', database.url], 'broken'));
      assertOneLineError(
        result,
        2,
        /frond_worker_lease lacks a column frond needs .*'frond db init --print'/,
      );
      const columns = await database.sql(
        "SELECT COUNT(*) AS n FROM information_schema.columns WHERE table_name = 'frond_worker_lease' AND table_schema = " +
          (dialect === 'postgres' ? 'current_schema()' : 'DATABASE()'),
      );
      assert.equal(Number(columns[0]?.n), 3);
      await database.sql('DROP TABLE frond_worker_lease');
    });
  });
}
