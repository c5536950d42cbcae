// Leaf compatibility (issue 12, items 3, 5, 6 and 7): a Leaf user's leaf.properties, worker cache and
// ZooKeeper tree, as Leaf itself reads and writes them. The expected Leaf behaviour is written down
// from Leaf's source (Meituan-Dianping/Leaf), the file cited at each test.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { readLeafProperties } from '../src/cli/config-sources.js';
import { loadJavaProperties, MalformedPropertiesError } from '../src/cli/java-properties.js';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';
import { parseServeArgs } from '../src/cli/serve.js';
import { isFrondError } from '../src/core/errors.js';
import { detectIpv4 } from '../src/worker-ids/worker-id-registry.js';
import { CreateMode } from '../src/worker-ids/zookeeper/zookeeper-client.js';
import { leafNodeData, zookeeperPaths } from '../src/worker-ids/zookeeper/zookeeper-paths.js';
import { leafModeArgs, randomName, ZOOKEEPER, zookeeperClient, zookeeperUp } from './support/coordinators.js';
import { fakeClock } from './support/fake-clock.js';
import {
  assertOneLineError,
  type FrondProcess,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';
import { workerIdOf } from './support/snowflake-traffic.js';
import { testDatabase } from './support/test-database.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function leafProperties(lines: string[]): string {
  const path = join(tempDir(), 'leaf.properties');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

function warningsOf(node: FrondProcess): string[] {
  return node.logs
    .map((line) => JSON.parse(line) as { event: string; message?: string })
    .filter((event) => event.event === 'config.warning')
    .map((event) => event.message as string);
}

function listeningHost(node: FrondProcess): string {
  const line = node.logs.find((text) => text.includes('"listening"')) as string;
  return new URL((JSON.parse(line) as { url: string }).url).hostname;
}

/** Leaf's cache file of `name` and `port` under `tmpdir` (SnowflakeZookeeperHolder.java's PROP_PATH). */
function leafCachePath(tmpdir: string, name: string, port: number): string {
  return join(tmpdir, name, 'leafconf', String(port), 'workerID.properties');
}

describe('Leaf compatibility: listening (item 3)', () => {
  // Leaf is a Spring Boot application (leaf-server/.../LeafServerApplication.java) whose
  // application.properties sets no server.address: Spring Boot then listens on every interface,
  // with Tomcat's wildcard socket, which Java opens for IPv6 and IPv4 at once (a dual-stack socket).
  it('with --leaf-config listens on every interface, IPv6 and IPv4, as Leaf, and says so at start', async (t) => {
    // Segment mode off; snowflake mode (Leaf's default: on) with a worker ID given on the command line.
    const both = leafProperties(['leaf.segment.enable=false']);
    const args = ['--leaf-config', both, '--port', '0', '--data-dir', tempDir(), '--worker-id', '3'];
    const node = await startFrond(args);
    t.after(() => node.stop('SIGKILL'));
    assert.equal(listeningHost(node), '[::]');
    assert.ok(
      warningsOf(node).some((message) => /every interface, IPv6 and IPv4 \(::\), as Leaf does/.test(message)),
      node.logs.join('\n'),
    );
    const port = new URL(node.url).port;
    // Both loopbacks, as a client of a Java server on this machine reaches it.
    for (const host of ['127.0.0.1', '[::1]']) {
      const answer = await fetch(`http://${host}:${port}/api/snowflake/get/any`);
      assert.equal(answer.status, 200, host);
    }
    const ip = detectIpv4();
    if (ip !== undefined) {
      // A remote client's way in: the machine's own address, not loopback.
      const answer = await fetch(`http://${ip}:${port}/api/snowflake/get/any`);
      assert.equal(answer.status, 200);
    }
    const loopback = await startFrond([
      ...args.slice(0, 4),
      '--data-dir',
      tempDir(),
      '--worker-id',
      '3',
      '--host',
      '127.0.0.1',
    ]);
    t.after(() => loopback.stop('SIGKILL'));
    assert.equal(listeningHost(loopback), '127.0.0.1');
    assert.deepEqual(warningsOf(loopback), []);
    const fromFile = leafProperties(['leaf.segment.enable=false', 'server.address=127.0.0.1']);
    assert.equal(
      parseServeArgs(['--leaf-config', fromFile, '--worker-id', '1'], {}).host,
      '127.0.0.1',
      'server.address',
    );
    assert.equal(parseServeArgs(['--worker-id', '1'], {}).host, '127.0.0.1', 'without --leaf-config');
  });
});

describe('Leaf compatibility: leaf.properties as Leaf reads it (item 5)', () => {
  // leaf-server/src/main/java/com/sankuai/inf/leaf/server/service/SegmentService.java and
  // SnowflakeService.java: Boolean.parseBoolean(properties.getProperty(KEY, "true")). Absent: on;
  // "true" in any case: on; anything else, the empty text and "true " (Properties keeps trailing
  // blanks) included: off.
  it('reads leaf.segment.enable and leaf.snowflake.enable as Boolean.parseBoolean', () => {
    const cases: [string | undefined, boolean, boolean][] = [
      [undefined, true, false],
      ['true', true, false],
      ['TRUE', true, false],
      ['True', true, false],
      ['false', false, false],
      ['FALSE', false, false],
      ['', false, true],
      ['yes', false, true],
      ['1', false, true],
      ['on', false, true],
      ['true ', false, true],
    ];
    for (const [text, on, warned] of cases) {
      const lines = text === undefined ? ['leaf.name=x'] : [`leaf.snowflake.enable=${text}`];
      const read = readLeafProperties(leafProperties(lines), SERVE_OPTIONS);
      assert.equal(read.values.snowflake ?? true, on, JSON.stringify(text));
      assert.equal(read.warnings.length > 0, warned, `${JSON.stringify(text)}: ${read.warnings}`);
    }
  });

  it('never starts snowflake mode without the ZooKeeper Leaf would need (no uncoordinated worker ID)', async () => {
    // An empty leaf.snowflake.enable= is off (above): with segment mode off too, nothing is served.
    const empty = leafProperties(['leaf.segment.enable=false', 'leaf.snowflake.enable=']);
    const off = await runFrond(['serve', '--leaf-config', empty, '--data-dir', tempDir()]);
    assert.equal(off.code, 2);
    assert.match(off.stderr, /leaf\.segment\.enable and leaf\.snowflake\.enable are both off/);
    // On (absent: Leaf's default) without leaf.snowflake.zk.address: Leaf's init fails
    // (SnowflakeZookeeperHolder has no server and no cache), so frond refuses too.
    for (const lines of [
      ['leaf.segment.enable=false'],
      ['leaf.segment.enable=false', 'leaf.snowflake.enable=true', 'leaf.snowflake.zk.address='],
    ]) {
      const result = await runFrond([
        'serve',
        '--leaf-config',
        leafProperties(lines),
        '--data-dir',
        tempDir(),
      ]);
      assert.equal(result.code, 2, lines.join(' '));
      assert.match(result.stderr, /snowflake mode is on .* but leaf\.snowflake\.zk\.address is empty/);
      assert.equal(result.stderr.trim().split('\n').length, 1);
    }
    // Segment mode on without leaf.jdbc.url: Leaf's Druid has no URL; frond does not fall back to SQLite.
    assert.throws(
      () => parseServeArgs(['--leaf-config', leafProperties(['leaf.snowflake.enable=false'])], {}),
      (error) => isFrondError(error, 'INVALID_CONFIG') && /leaf\.jdbc\.url is empty/.test(error.message),
    );
  });

  it('warns about unknown leaf.* keys instead of refusing them', async (t) => {
    // Leaf asks Properties only for the keys it knows (leaf-server/.../Constants.java), so others are ignored.
    const path = leafProperties(['leaf.segment.enable=false', 'leaf.snowflake.mode=zk', 'leaf.jdbc.uri=x']);
    const node = await startFrond([
      '--leaf-config',
      path,
      '--port',
      '0',
      '--worker-id',
      '2',
      '--data-dir',
      tempDir(),
    ]);
    t.after(() => node.stop('SIGKILL'));
    const warnings = warningsOf(node);
    assert.ok(warnings.some((message) => /unknown Leaf key "leaf.snowflake.mode", ignored/.test(message)));
    assert.ok(warnings.some((message) => /unknown Leaf key "leaf.jdbc.uri", ignored/.test(message)));
  });

  // Leaf gives leaf.jdbc.url to Druid unchanged (SegmentService.java), so the drivers' URL syntax
  // holds: host lists, Connector/J's and MariaDB's protocols, and their properties.
  it('carries over hosts, multi-host protocols and query properties of leaf.jdbc.url, warning about the rest', () => {
    const convert = (url: string) => {
      const read = readLeafProperties(
        leafProperties([`leaf.jdbc.url=${url}`, 'leaf.jdbc.username=leaf', 'leaf.jdbc.password=pw']),
        SERVE_OPTIONS,
      );
      return { store: read.values.store, warnings: read.warnings };
    };
    const cases: [string, string, RegExp[]][] = [
      [
        'jdbc:mysql://127.0.0.1:3306/leaf?useUnicode=true&characterEncoding=utf8&autoReconnect=true',
        'mysql://leaf:pw@127.0.0.1:3306/leaf',
        [],
      ],
      // frond follows one address: the first host, and a warning to put a VIP or proxy in front.
      ['jdbc:mysql://h1:3306,h2/leaf', 'mysql://leaf:pw@h1:3306/leaf', [/uses h1:3306 and not h2:3306/]],
      [
        'jdbc:mysql:loadbalance://h1:3306,h2:3307/leaf?connectTimeout=2000&socketTimeout=3000',
        'mysql://leaf:pw@h1:3306/leaf?connect_timeout_ms=2000&query_timeout_ms=3000',
        [/uses h1:3306 and not h2:3307/],
      ],
      [
        'jdbc:mysql:replication://h1,h2/leaf',
        'mysql://leaf:pw@h1:3306/leaf',
        [/uses the source h1:3306 alone/],
      ],
      [
        'jdbc:mariadb:sequential://h1,[::1]:3307/leaf',
        'mysql://leaf:pw@h1:3306/leaf',
        [/uses h1:3306 and not \[::1\]:3307/],
      ],
      [
        'jdbc:mysql://h1/leaf?useSSL=true&requireSSL=true&serverTimezone=UTC&rewriteBatchedStatements=true',
        'mysql://leaf:pw@h1:3306/leaf?ssl-mode=REQUIRED',
        [/serverTimezone=UTC means nothing to frond/, /rewriteBatchedStatements=true means nothing/],
      ],
      [
        'jdbc:mysql://h1/leaf?characterEncoding=gbk&connectTimeout=0',
        'mysql://leaf:pw@h1:3306/leaf',
        [
          /characterEncoding=gbk: frond always speaks UTF-8/,
          /connectTimeout=0 \(no timeout\) is not offered/,
        ],
      ],
      [
        'jdbc:postgresql://h1:5432,h2:5433/leaf?targetServerType=primary&loadBalanceHosts=true&connectTimeout=3',
        'postgres://leaf:pw@h1:5432/leaf?connect_timeout_ms=3000',
        [/uses h1:5432 and not h2:5433/, /loadBalanceHosts=true means nothing/],
      ],
      ['jdbc:postgresql:leaf', 'postgres://leaf:pw@localhost:5432/leaf', []],
      [
        'jdbc:postgresql://db/leaf?socketTimeout=600&ApplicationName=leaf',
        'postgres://leaf:pw@db:5432/leaf?query_timeout_ms=120000',
        [/socketTimeout=600 is 600000 ms, outside/, /ApplicationName=leaf means nothing/],
      ],
    ];
    for (const [url, store, warnings] of cases) {
      const converted = convert(url);
      assert.equal(converted.store, store, url);
      assert.equal(converted.warnings.length, warnings.length, `${url}: ${converted.warnings.join(' | ')}`);
      for (const [i, pattern] of warnings.entries())
        assert.match(converted.warnings[i] as string, pattern, url);
    }
    const refused: [string, RegExp][] = [
      ['jdbc:postgresql://h1,h2/leaf?targetServerType=secondary', /a standby takes no writes/],
      ['jdbc:postgresql://h1/leaf?currentSchema=ids', /set the user's search_path instead/],
      ['jdbc:mysql:fabric://h1/leaf', /is not a protocol frond takes/],
      ['jdbc:mysql://address=(host=h1)(port=3306)/leaf', /address=\(host=…\)/],
      ['jdbc:mysql://h1:99999/leaf', /is not a host or host:port/],
      ['jdbc:oracle:thin:@h1:1521:leaf', /is not a jdbc:mysql:\/\//],
    ];
    for (const [url, pattern] of refused) {
      assert.throws(
        () => convert(url),
        (error) => isFrondError(error, 'INVALID_CONFIG') && pattern.test(error.message),
        url,
      );
    }
  });

  for (const dialect of ['postgres', 'mysql'] as const) {
    const database = testDatabase(dialect);
    it(`serves segment IDs from a ${dialect} leaf.jdbc.url with driver properties`, async (t) => {
      const db = await database.open(t);
      if (db === undefined) return;
      t.after(() => database.drop());
      const init = await runFrond(['db', 'init', '--store', db.url]);
      assert.equal(init.code, 0, init.stderr);
      const added = await runFrond(['tag', 'add', 'orders', '--store', db.url]);
      assert.equal(added.code, 0, added.stderr);
      const jdbc =
        dialect === 'postgres'
          ? `jdbc:postgresql://127.0.0.1:5432/${db.name}?connectTimeout=3&socketTimeout=10&ApplicationName=leaf`
          : `jdbc:mysql://127.0.0.1:3306/${db.name}?useUnicode=true&characterEncoding=utf8&connectTimeout=3000&serverTimezone=UTC`;
      const user = dialect === 'postgres' ? 'postgres' : 'root';
      const path = leafProperties([
        `leaf.jdbc.url=${jdbc}`,
        `leaf.jdbc.username=${user}`,
        'leaf.snowflake.enable=false',
      ]);
      const node = await startFrond([
        '--leaf-config',
        path,
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--data-dir',
        tempDir(),
      ]);
      t.after(() => node.stop('SIGKILL'));
      const answer = await fetch(`${node.url}/api/segment/get/orders`);
      assert.equal(answer.status, 200);
      assert.match(await answer.text(), /^[0-9]+$/);
      const warned = warningsOf(node);
      assert.equal(warned.length, 1, warned.join(' | '));
      assert.match(warned[0] as string, /(ApplicationName|serverTimezone)=\S+ means nothing to frond/);
    });
  }

  it('takes a ZooKeeper chroot in leaf.snowflake.zk.address, as Curator does, and refuses a missing one', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const chroot = `/${randomName('frond_chroot')}`;
    const client = await zookeeperClient();
    t.after(() => client.close());
    await client.mkdirp(chroot);
    const name = randomName();
    const dir = tempDir();
    const path = leafProperties([
      `leaf.name=${name}`,
      'leaf.segment.enable=false',
      `leaf.snowflake.zk.address=${ZOOKEEPER}${chroot}`,
      'leaf.snowflake.port=7301',
    ]);
    const node = await startFrond([
      '--leaf-config',
      path,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--advertise',
      '127.0.0.1:7301',
      '--data-dir',
      dir,
      '--leaf-tmpdir',
      join(dir, 'tmp'),
    ]);
    t.after(() => node.stop('SIGKILL'));
    const { children } = await client.getChildren(`${chroot}${zookeeperPaths(name).forever}`);
    assert.deepEqual(children, ['127.0.0.1:7301-0000000000']);
    assert.equal(await client.exists(zookeeperPaths(name).forever), undefined, 'nothing outside the chroot');
    const missing = await runFrond([
      'serve',
      '--no-segment',
      '--zk',
      `${ZOOKEEPER}/${randomName('frond_absent')}`,
      '--name',
      name,
      '--advertise',
      '127.0.0.1:7302',
      '--data-dir',
      tempDir(),
      '--leaf-tmpdir',
      'none',
    ]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /ZooKeeper has no \/frond_absent_\w+, the chroot of/);
  });

  // SnowflakeZookeeperHolder.java splits `forever`'s children (`ip:port-seq`, no name in them) at
  // '-'; the only split of a path holding the name is a new node's `newNode.split("-")[1]`, which
  // with a '-' in the name throws after creating the node: that Leaf start fails, and its next start
  // finds the child and takes its sequence. frond takes the same number, from the child's name.
  it("takes a '-' in leaf.name, with the worker ID Leaf's restart takes", async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = `${randomName()}-orders-v2`;
    const client = await zookeeperClient();
    t.after(() => client.close());
    const { forever } = zookeeperPaths(name);
    await client.mkdirp(forever);
    // A Leaf node already registered under this name.
    await client.create(
      `${forever}/10.9.9.9:8080-`,
      leafNodeData('10.9.9.9', 8080, Date.now()),
      CreateMode.PERSISTENT_SEQUENTIAL,
    );
    const dir = tempDir();
    const node = await startFrond(leafModeArgs(ZOOKEEPER, name, 7311, dir));
    t.after(() => node.stop('SIGKILL'));
    const { children } = await client.getChildren(forever);
    const own = children.find((child) => child.startsWith('127.0.0.1:7311-')) as string;
    // What Leaf's restart reads: key.split("-") → [ip:port, seq], Integer.parseInt(seq).
    const parts = own.split('-');
    assert.equal(parts.length, 2);
    assert.equal(workerIdOf(node), Number.parseInt(parts[1] as string, 10));
    assert.equal(workerIdOf(node), 1);
  });
});

/** Writes Leaf's node data every 3 s as a running Leaf does (SnowflakeZookeeperHolder.scheduledUploadData). */
async function fakeLeafNode(t: TestContext, name: string, ip: string, port: number) {
  const client = await zookeeperClient();
  const { forever } = zookeeperPaths(name);
  await client.mkdirp(forever);
  const path = await client.create(
    `${forever}/${ip}:${port}-`,
    leafNodeData(ip, port, Date.now()),
    CreateMode.PERSISTENT_SEQUENTIAL,
  );
  const timer = setInterval(() => {
    void client.setData(path, leafNodeData(ip, port, Date.now())).catch(() => {});
  }, 3_000);
  const stop = async () => {
    clearInterval(timer);
    await client.close();
  };
  t.after(stop);
  return { path, stop };
}

describe("Leaf compatibility: Leaf's local worker cache (item 6)", () => {
  // SnowflakeZookeeperHolder.java: PROP_PATH = java.io.tmpdir + File.separator + leaf.name +
  // "/leafconf/{port}/workerID.properties"; updateLocalWorkerID writes "workerID=" + id after each
  // registration; init() reads it (Properties, key workerID) when ZooKeeper fails.
  it("writes Leaf's cache, starts from its own with ZooKeeper down, and refuses Leaf's alone (no time) or a disagreeing one", async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const dir = tempDir();
    const leafTmp = join(dir, 'leaf-tmpdir');
    const port = 7321;
    const node = await startFrond(leafModeArgs(ZOOKEEPER, name, port, dir));
    const workerId = workerIdOf(node);
    const leafCache = leafCachePath(leafTmp, name, port);
    assert.equal(readFileSync(leafCache, 'utf8'), `workerID=${workerId}`, "Leaf's exact text");
    // The SIGTERM handler is set just after the listening line.
    await sleep(300);
    assert.equal(await node.stop('SIGTERM'), 0);

    // ZooKeeper unreachable: frond's cache (with its time) and Leaf's agree.
    const down = ['--coordinator-timeout-ms', '1000'];
    const fromCache = await startFrond(leafModeArgs('127.0.0.1:1', name, port, dir, down));
    assert.equal(workerIdOf(fromCache), workerId);
    assert.ok(fromCache.logs.some((line) => line.includes('worker.zookeeper_unreachable_using_cache')));
    await sleep(300);
    assert.equal(await fromCache.stop('SIGTERM'), 0);

    // Leaf's cache names another worker ID: one of the two is stale, so neither is trusted.
    writeFileSync(leafCache, `workerID=${workerId + 1}`);
    const disagree = await runFrond(['serve', ...leafModeArgs('127.0.0.1:1', name, port, dir, down)]);
    assert.equal(disagree.code, 1, disagree.stderr);
    assert.match(
      disagree.stderr,
      new RegExp(`gives worker ID ${workerId} but Leaf's cache .*workerID.properties gives ${workerId + 1}`),
    );
    assert.equal(disagree.stderr.trim().split('\n').length, 1);

    // Only Leaf's cache (a cut-over from Leaf while ZooKeeper is down): a worker ID without a time.
    writeFileSync(leafCache, `workerID=${workerId}`);
    rmSync(join(dir, 'zookeeper-worker.json'));
    const alone = await runFrond(['serve', ...leafModeArgs('127.0.0.1:1', name, port, dir, down)]);
    assert.equal(alone.code, 1, alone.stderr);
    assert.match(alone.stderr, new RegExp(`Leaf's cache .* gives worker ID ${workerId} but no time`));
    assert.equal(alone.stderr.trim().split('\n').length, 1);

    // With ZooKeeper back, the same cut-over works: the worker ID from the node, Leaf's cache kept.
    const back = await startFrond(leafModeArgs(ZOOKEEPER, name, port, dir));
    t.after(() => back.stop('SIGKILL'));
    assert.equal(workerIdOf(back), workerId);
    assert.equal(readFileSync(leafCache, 'utf8'), `workerID=${workerId}`);
  });

  it("cuts over from a Leaf node: its ZooKeeper node gives the worker ID, Leaf's cache is rewritten, --leaf-tmpdir none leaves it alone", async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const client = await zookeeperClient();
    t.after(() => client.close());
    const { forever } = zookeeperPaths(name);
    await client.mkdirp(forever);
    await client.create(
      `${forever}/10.9.9.9:8080-`,
      leafNodeData('10.9.9.9', 8080, Date.now()),
      CreateMode.PERSISTENT_SEQUENTIAL,
    );
    // The Leaf node this frond replaces: stopped a minute ago, its cache file left behind.
    await client.create(
      `${forever}/127.0.0.1:7331-`,
      leafNodeData('127.0.0.1', 7331, Date.now() - 60_000),
      CreateMode.PERSISTENT_SEQUENTIAL,
    );
    const dir = tempDir();
    const leafCache = leafCachePath(join(dir, 'leaf-tmpdir'), name, 7331);
    mkdirSync(join(leafCache, '..'), { recursive: true });
    writeFileSync(leafCache, 'workerID=1');
    const node = await startFrond(leafModeArgs(ZOOKEEPER, name, 7331, dir));
    t.after(() => node.stop('SIGKILL'));
    assert.equal(workerIdOf(node), 1);
    assert.equal(readFileSync(leafCache, 'utf8'), 'workerID=1');
    await sleep(300);
    await node.stop('SIGTERM');
    const untouched = tempDir();
    const none = await startFrond(leafModeArgs(ZOOKEEPER, name, 7332, untouched, ['--leaf-tmpdir', 'none']));
    t.after(() => none.stop('SIGKILL'));
    assert.equal(existsSync(join(untouched, 'leaf-tmpdir')), false);
  });
});

describe('Leaf compatibility: two live processes on one worker ID (item 7)', () => {
  // SnowflakeZookeeperHolder.java takes an existing child of its ip:port without looking at it
  // (only checkInitTimeStamp), so a second Leaf of one identity shares the worker ID. A live Leaf
  // writes its node every 3 s (scheduleWithFixedDelay(…, 1L, 3L, TimeUnit.SECONDS)); frond watches
  // for that and refuses.
  it('refuses to start beside a live Leaf node of its identity, naming it, and starts once it has stopped', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const leaf = await fakeLeafNode(t, name, '127.0.0.1', 7341);
    await sleep(500);
    const started = Date.now();
    const refused = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7341, tempDir())]);
    const tookMs = Date.now() - started;
    assert.equal(refused.code, 1, refused.stderr);
    const line = refused.stderr.trim();
    assert.equal(line.split('\n').length, 1, line);
    assert.match(
      line,
      new RegExp(
        `worker ID 0 is held by a live process: ${leaf.path.replace(/\./g, '\\.')} \\(\\{"ip":"127\\.0\\.0\\.1","port":"7341"`,
      ),
    );
    t.diagnostic(`refused beside a live Leaf node in ${tookMs} ms: ${line}`);

    await leaf.stop();
    const node = await startFrond(leafModeArgs(ZOOKEEPER, name, 7341, tempDir()));
    t.after(() => node.stop('SIGKILL'));
    assert.equal(workerIdOf(node), 0);
  });

  it('refuses a second frond process of one identity; a clean restart does not wait', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const dir = tempDir();
    const first = await startFrond(leafModeArgs(ZOOKEEPER, name, 7351, dir));
    t.after(() => first.stop('SIGKILL'));
    const second = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7351, tempDir())]);
    assert.equal(second.code, 1, second.stderr);
    assert.match(
      second.stderr,
      /worker ID 0 is held by a live process: \/snowflake\/\S+\/forever\/127\.0\.0\.1:7351-0000000000/,
    );
    await sleep(300);
    assert.equal(await first.stop('SIGTERM'), 0);
    const again = await startFrond(leafModeArgs(ZOOKEEPER, name, 7351, dir));
    t.after(() => again.stop('SIGKILL'));
    assert.equal(workerIdOf(again), 0);
    assert.ok(
      !again.logs.some((line) => line.includes('worker.holder_check')),
      'no watch after a clean stop',
    );
  });
});

/**
 * Tricky files and what `java.util.Properties.load(InputStream)` makes of them: each expected map was
 * printed once by JDK 17.0.15 (`new Properties().load(new FileInputStream(file))`, the keys sorted),
 * the way Leaf loads leaf.properties (leaf-core/src/main/java/com/sankuai/inf/leaf/common/
 * PropertyFactory.java). The files are bytes: each character of a text below is one byte
 * (`\xc3\xa9` is UTF-8 "é", which Java reads as ISO-8859-1 "Ã©"). `malformed`: load throws
 * IllegalArgumentException ("Malformed \uxxxx encoding."), which Leaf's PropertyFactory does not
 * catch, so Leaf does not start.
 */
const PROPERTIES_CORPUS: [string, string, Record<string, string> | 'malformed'][] = [
  [
    'trailing-blanks',
    'leaf.name=orders \nleaf.snowflake.zk.address = 127.0.0.1:2181\t\nleaf.jdbc.password=pw  \nplain=x\n',
    {
      'leaf.jdbc.password': 'pw  ',
      'leaf.name': 'orders ',
      'leaf.snowflake.zk.address': '127.0.0.1:2181\t',
      plain: 'x',
    },
  ],
  [
    'separators',
    'a=1\nb:2\nc 3\nd = 4\ne : 5\nf\t=\t6\ng==7\nh = = 8\ni:=9\nj =:10\nk\nl=\nm   \n\fn\f=\f11\n',
    {
      a: '1',
      b: '2',
      c: '3',
      d: '4',
      e: '5',
      f: '6',
      g: '=7',
      h: '= 8',
      i: '=9',
      j: ':10',
      k: '',
      l: '',
      m: '',
      n: '11',
    },
  ],
  [
    'escaped-keys',
    'key\\ with\\ spaces=v1\nk\\=eq=v2\nk\\:colon:v3\n\\#notcomment=v4\n\\!bang=v5\n=empty key\n:colon key\n',
    {
      '': 'colon key',
      '!bang': 'v5',
      '#notcomment': 'v4',
      'k:colon': 'v3',
      'k=eq': 'v2',
      'key with spaces': 'v1',
    },
  ],
  [
    'comments',
    '# a comment\n! another\n   # indented comment\n\t! tab comment\na=b # not a comment\n#c=d\nx=1\\\n# not a comment: continued\n',
    { a: 'b # not a comment', x: '1# not a comment: continued' },
  ],
  [
    'continuations',
    'm=a\\\n   b\nn=a \\\nb \\\n  c\np=ends with two\\\\\nq=next\ns=three\\\\\\\n  more\nt=\\\n\n u=after blank\n',
    { m: 'ab', n: 'a b c', p: 'ends with two\\', q: 'next', s: 'three\\more', t: '', u: 'after blank' },
  ],
  ['lone-backslash', '\\\n#x=comment after a lone backslash\ny=1\n', { y: '1' }],
  [
    'unicode',
    't=\\u0041\\u00e9\\u4e2d\nu=caf\\u00E9\nv=\xc3\xa9\nw=\\t\\n\\r\\f\\b\\z\\\\\\"\\\'\n',
    { t: 'A\xe9\u4e2d', u: 'caf\xe9', v: '\xc3\xa9', w: '\t\n\r\fbz\\"\'' },
  ],
  [
    'line-endings',
    'crlf=1\r\ncr=2\rlf=3\ncont=a\\\r\n  b\r\ncontcr=c\\\r  d\r',
    { cont: 'ab', contcr: 'cd', cr: '2', crlf: '1', lf: '3' },
  ],
  ['duplicates', 'dup=first\ndup=second\n  dup   =   third  \n', { dup: 'third  ' }],
  ['eof-backslash', 'a=1\nlast=value\\', { a: '1', last: 'value' }],
  ['eof-no-newline', 'a=1\nb=2', { a: '1', b: '2' }],
  ['malformed-short', 'ok=1\nx=\\u12\n', 'malformed'],
  ['malformed-hex', 'x=\\uZZZZ\n', 'malformed'],
];

describe("Leaf compatibility: leaf.properties read as Java's Properties.load reads it", () => {
  it('reads every file of the corpus to the keys and values JDK 17 printed for it', () => {
    for (const [name, text, expected] of PROPERTIES_CORPUS) {
      const bytes = Buffer.from(text, 'latin1');
      if (expected === 'malformed') {
        assert.throws(() => loadJavaProperties(bytes), MalformedPropertiesError, name);
        // --leaf-config refuses it in one line naming the line, as Leaf would not start.
        const path = join(tempDir(), `${name}.properties`);
        writeFileSync(path, bytes);
        assert.throws(
          () => readLeafProperties(path, SERVE_OPTIONS),
          (error) =>
            isFrondError(error, 'INVALID_CONFIG') &&
            /malformed \\uxxxx escape in line \d, which Leaf's Properties\.load refuses/.test(error.message),
          name,
        );
        continue;
      }
      const sorted = [...loadJavaProperties(bytes)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      assert.deepEqual(Object.fromEntries(sorted), expected, name);
    }
  });

  it('keeps trailing blanks of names and passwords, as Leaf, and warns once naming each key', () => {
    const read = readLeafProperties(
      leafProperties([
        'leaf.name=orders ',
        'leaf.jdbc.url=jdbc:mysql://127.0.0.1:3306/leaf',
        'leaf.jdbc.username=root',
        'leaf.jdbc.password=s3cret\t',
        'leaf.snowflake.port=7400 ',
      ]),
      SERVE_OPTIONS,
    );
    assert.equal(read.values.name, 'orders ');
    // The tab is the password's last character, percent-encoded in the store URL.
    assert.equal(read.values.store, 'mysql://root:s3cret%09@127.0.0.1:3306/leaf');
    const blanks = read.warnings.filter((line) => / in a blank, kept as Leaf's Properties\.load/.test(line));
    assert.equal(blanks.length, 1, read.warnings.join(' | '));
    assert.match(
      blanks[0] as string,
      /leaf\.name, leaf\.jdbc\.password, leaf\.snowflake\.port end in a blank/,
    );
    assert.doesNotMatch(blanks[0] as string, /s3cret/, 'no value is shown: one may be a password');
    // Bytes above 127 in a value are ISO-8859-1, as Java reads an InputStream; a comment's are not warned about.
    const latin1 = readLeafProperties(
      leafProperties(['# 注册中心为zk的配置', 'leaf.name=caf\u00e9']),
      SERVE_OPTIONS,
    );
    assert.equal(latin1.values.name, 'caf\xc3\xa9');
    assert.equal(latin1.warnings.length, 1, latin1.warnings.join(' | '));
    assert.match(latin1.warnings[0] as string, /leaf\.name holds bytes above 127, read as ISO-8859-1/);
  });

  // SnowflakeZookeeperHolder.java: prefixZkPath = "/snowflake/" + snowflakeName, the name being
  // PropertyFactory.getProperties().getProperty("leaf.name") (SnowflakeIDGenImpl.java), blank kept.
  it('registers under the ZooKeeper path Leaf registers a name with a trailing blank under, beside its nodes', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = `${randomName()} `;
    const client = await zookeeperClient();
    t.after(() => client.close());
    const { forever } = zookeeperPaths(name);
    assert.equal(forever, `/snowflake/${name}/forever`);
    await client.mkdirp(forever);
    // The Leaf node already registered under the name as Leaf reads it.
    await client.create(
      `${forever}/10.9.9.9:8080-`,
      leafNodeData('10.9.9.9', 8080, Date.now()),
      CreateMode.PERSISTENT_SEQUENTIAL,
    );
    const path = leafProperties([
      `leaf.name=${name}`,
      'leaf.segment.enable=false',
      `leaf.snowflake.zk.address=${ZOOKEEPER}`,
      'leaf.snowflake.port=7361',
    ]);
    const dir = tempDir();
    const node = await startFrond([
      '--leaf-config',
      path,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--advertise',
      '127.0.0.1:7361',
      '--data-dir',
      dir,
      '--leaf-tmpdir',
      join(dir, 'tmp'),
    ]);
    t.after(() => node.stop('SIGKILL'));
    const { children } = await client.getChildren(forever);
    assert.deepEqual(children.sort(), ['10.9.9.9:8080-0000000000', '127.0.0.1:7361-0000000001']);
    assert.equal(workerIdOf(node), 1, "the next worker ID after the Leaf node's, not 0 under another path");
    assert.equal(await client.exists(zookeeperPaths(name.trimEnd()).forever), undefined);
    assert.ok(
      warningsOf(node).some((line) =>
        /leaf\.name ends in a blank, kept as Leaf's Properties\.load/.test(line),
      ),
      node.logs.join('\n'),
    );
  });
});

/** A port free on 127.0.0.1 right now (the test's frond takes it a moment later). */
async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("Leaf compatibility: Spring's port settings", () => {
  // Leaf is run as `java -jar leaf.jar` (leaf-server/deploy/run.sh) and its port set the Spring Boot
  // way: `--server.port=N` (SimpleCommandLinePropertySource, `--name=value` only) or the relaxed
  // environment name SERVER_PORT of server.port (ServerProperties, @ConfigurationProperties
  // "server"). Spring Boot 1.5's order ("Externalized Configuration"): command-line arguments, then
  // OS environment variables, then application.properties.
  it('listens on SERVER_PORT and on --server.port=N with --leaf-config, the command line first', async (t) => {
    const file = leafProperties(['leaf.segment.enable=false']);
    const base = ['--leaf-config', file, '--host', '127.0.0.1', '--worker-id', '4'];
    const fromEnv = await freePort();
    const node = await startFrond([...base, '--data-dir', tempDir()], {
      env: { SERVER_PORT: String(fromEnv) },
    });
    t.after(() => node.stop('SIGKILL'));
    assert.equal(new URL(node.url).port, String(fromEnv));
    assert.equal((await fetch(`http://127.0.0.1:${fromEnv}/api/snowflake/get/a`)).status, 200);

    const fromArg = await freePort();
    const both = await startFrond([...base, `--server.port=${fromArg}`, '--data-dir', tempDir()], {
      env: { SERVER_PORT: String(fromEnv) },
    });
    t.after(() => both.stop('SIGKILL'));
    assert.equal(new URL(both.url).port, String(fromArg), 'the command line wins over the environment');
  });

  it("ranks Spring's settings as Spring does, frond's own beside them", () => {
    const file = leafProperties([
      'leaf.segment.enable=false',
      'server.port=7003',
      'server.address=127.0.0.3',
    ]);
    const port = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      parseServeArgs(['--leaf-config', file, '--worker-id', '1', ...args], env).port;
    assert.equal(port([]), 7003, 'the file alone');
    assert.equal(port([], { PORT: '7004' }), 7004, "the platform's PORT over the file");
    assert.equal(port([], { PORT: '7004', SERVER_PORT: '7002' }), 7002, 'SERVER_PORT over PORT and the file');
    assert.equal(port([], { SERVER_PORT: '7002', FROND_PORT: '7005' }), 7005, "frond's own variable first");
    assert.equal(port(['--server.port=7001'], { SERVER_PORT: '7002', FROND_PORT: '7005' }), 7001);
    assert.equal(port(['--port', '7006'], { SERVER_PORT: '7002' }), 7006);
    const host = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      parseServeArgs(['--leaf-config', file, '--worker-id', '1', ...args], env).host;
    assert.equal(host([], { SERVER_ADDRESS: '127.0.0.2' }), '127.0.0.2');
    assert.equal(host(['--server.address=127.0.0.1'], { SERVER_ADDRESS: '127.0.0.2' }), '127.0.0.1');
    // A bad value is refused naming where it came from, as any setting's.
    assert.throws(
      () => port([], { SERVER_PORT: 'http' }),
      (error) =>
        isFrondError(error, 'INVALID_ARGUMENT') && /^SERVER_PORT "http" is invalid/.test(error.message),
    );
    assert.throws(() => port(['--port', '1', '--server.port=2']), /--port and --server\.port: pick one/);
    // Spring reads `--server.port 7001` as no value (and serves its default port): refused instead.
    assert.throws(() => port(['--server.port', '7001']), /--server\.port takes its value after '='/);
  });

  it('refuses --server.port=N without --leaf-config and says SERVER_PORT is not used there', async () => {
    const refused = await runFrond(['serve', '--server.port=7001', '--data-dir', tempDir()]);
    assertOneLineError(
      refused,
      2,
      /^frond: --server\.port=7001 is Spring's spelling, read with --leaf-config \(as Leaf runs\); without it give --port 7001$/,
    );
    const warnings: string[] = [];
    const settings = parseServeArgs([], { SERVER_PORT: '7001' }, Date.now(), warnings);
    assert.equal(settings.port, 8080);
    assert.deepEqual(warnings, [
      "SERVER_PORT=7001 is Spring's, read only with --leaf-config: it is not used (give --port or FROND_PORT)",
    ]);
  });
});

describe('Leaf compatibility: starts Leaf allows and frond refuses', () => {
  // leaf-server/src/main/resources/leaf.properties, Leaf's own sample, as it is: both modes off.
  // SegmentService and SnowflakeService (leaf-server/.../service/) then take ZeroIDGen
  // (leaf-core/.../common/ZeroIDGen.java: `new Result(0, Status.SUCCESS)`), so Leaf starts and
  // LeafController answers "0" to every ID request.
  it('refuses both modes off in one line, where Leaf starts and answers 0 to every ID request', async () => {
    const sample = leafProperties([
      'leaf.name=com.sankuai.leaf.opensource.test',
      'leaf.segment.enable=false',
      '#leaf.jdbc.url=',
      '#leaf.jdbc.username=',
      '#leaf.jdbc.password=',
      '',
      'leaf.snowflake.enable=false',
      '#leaf.snowflake.zk.address=',
      '#leaf.snowflake.port=',
    ]);
    const refused = await runFrond(['serve', '--leaf-config', sample, '--data-dir', tempDir()]);
    assertOneLineError(
      refused,
      2,
      /^frond: \S+leaf\.properties: leaf\.segment\.enable and leaf\.snowflake\.enable are both off, which leaves nothing to serve \(Leaf would start and answer 0 to every ID request\); set one of them to true$/,
    );
    // The flags say the same in frond's words.
    const flags = await runFrond(['serve', '--no-segment', '--no-snowflake', '--data-dir', tempDir()]);
    assertOneLineError(flags, 2, /^frond: --no-segment and --no-snowflake together leave nothing to serve$/);
  });

  // SnowflakeZookeeperHolder.init: a new ip:port creates its node with no time check at all ("不用
  // check时间"); checkInitTimeStamp, its only clock check, runs for a node's own existing node and
  // compares the clock with that node's last report only (and its failure is caught by init's
  // catch, which falls back to the cached workerID.properties). No Leaf start reads another node's
  // clock, so Leaf starts 10 s ahead of its live peers.
  it("refuses to start 10 s ahead of a live Leaf node's clock in one line, and starts with --clock-max-skew-ms 0", async (t) => {
    if (!(await zookeeperUp(t))) return;
    const ahead = fakeClock(t, '+10s')?.env;
    if (ahead === undefined) return;
    const name = randomName();
    await fakeLeafNode(t, name, '10.9.9.9', 8080);
    const refused = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7371, tempDir())], {
      env: ahead,
    });
    assertOneLineError(
      refused,
      1,
      new RegExp(
        `^frond: the clock is (\\d+) ms ahead of the median of 1 live node\\(s\\) under /snowflake/${name}/forever \\(limit --clock-max-skew-ms 5000\\); fix the clock \\(NTP\\) and start again \\(--clock-max-skew-ms 0 skips this check\\)$`,
      ),
    );
    const skew = Number(/the clock is (\d+) ms/.exec(refused.stderr)?.[1]);
    assert.ok(Math.abs(skew - 10_000) < 1000, `measured ${skew} ms for a clock 10 s ahead`);
    // The check off: the node starts as Leaf would, beside the Leaf node, on the next worker ID.
    const node = await startFrond(
      leafModeArgs(ZOOKEEPER, name, 7372, tempDir(), ['--clock-max-skew-ms', '0']),
      { env: ahead },
    );
    t.after(() => node.stop('SIGKILL'));
    assert.equal(workerIdOf(node), 1);
    t.diagnostic(`10 s ahead of a live Leaf node: refused (${refused.stderr.trim()})`);
  });
});
