import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decomposeSnowflake } from '../src/core/snowflake-layout.js';
import { CreateMode } from '../src/worker-ids/zookeeper/zookeeper-client.js';
import {
  leafNodeData,
  leafNodeTimestamp,
  zookeeperPaths,
} from '../src/worker-ids/zookeeper/zookeeper-paths.js';
import {
  leafModeArgs,
  randomName,
  ZOOKEEPER,
  ZooKeeperServer,
  zookeeperClient,
  zookeeperUp,
} from './support/coordinators.js';
import { type FrondProcess, runFrond, startFrond, tempDir } from './support/frond-process.js';
import { assertUnique, maxOf, minOf, takeIds, traffic, workerIdOf } from './support/snowflake-traffic.js';
import { TcpProxy } from './support/tcp-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function stopAll(nodes: (FrondProcess | undefined)[]): Promise<void> {
  await Promise.all(nodes.map((node) => node?.stop('SIGKILL')));
}

describe('worker IDs from ZooKeeper in Leaf layout (real processes)', () => {
  it('gives three nodes three worker IDs whose IDs never collide, in Leaf nodes, and keeps a worker ID across a SIGKILL restart', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const dirs = [tempDir(), tempDir(), tempDir()];
    const nodes: FrondProcess[] = [];
    t.after(() => stopAll(nodes));
    nodes.push(
      ...(await Promise.all(dirs.map((dir, i) => startFrond(leafModeArgs(ZOOKEEPER, name, 7100 + i, dir))))),
    );
    const workerIds = nodes.map(workerIdOf);
    assert.equal(new Set(workerIds).size, 3, `worker IDs ${workerIds.join(', ')}`);

    // Leaf's layout and data, readable by Leaf itself.
    const client = await zookeeperClient();
    t.after(() => client.close());
    const { forever } = zookeeperPaths(name);
    const { children } = await client.getChildren(forever);
    assert.deepEqual(children.map((child) => child.replace(/-\d{10}$/, '')).sort(), [
      '127.0.0.1:7100',
      '127.0.0.1:7101',
      '127.0.0.1:7102',
    ]);
    for (const child of children) {
      const data = JSON.parse((await client.getData(`${forever}/${child}`)).data.toString()) as Record<
        string,
        unknown
      >;
      assert.deepEqual(Object.keys(data), ['ip', 'port', 'timestamp']);
      assert.equal(typeof data.port, 'string');
      assert.equal(Number(child.slice(-10)), workerIds[Number(String(data.port).slice(-1))], child);
    }

    const loads = nodes.map((node) => traffic(node));
    await sleep(1500);
    await Promise.all(loads.map((load) => load.stop()));
    loads.forEach((load, i) => {
      assert.ok(load.ids.length > 100, `node ${i} served ${load.ids.length} IDs`);
      for (const id of load.ids) assert.equal(decomposeSnowflake(id).workerId, workerIds[i]);
    });
    const all = loads.flatMap((load) => load.ids);
    const unique = assertUnique(all);

    // SIGKILL and restart with the same identity and data dir: same worker ID, IDs above the old ones.
    const killed = nodes[0] as FrondProcess;
    await killed.stop('SIGKILL');
    nodes[0] = await startFrond(leafModeArgs(ZOOKEEPER, name, 7100, dirs[0] as string));
    assert.equal(workerIdOf(nodes[0]), workerIds[0]);
    const after = await takeIds(nodes[0], 100);
    assert.ok(
      minOf(after) > maxOf(loads[0]?.ids ?? []),
      'first IDs after the restart are above every earlier one',
    );
    assertUnique([...all, ...after]);
    assert.equal((await client.getChildren(forever)).children.length, 3, 'no new node for a restart');
    t.diagnostic(
      `3 Leaf-mode nodes: worker IDs ${workerIds.join(', ')}, ${unique} IDs in 1.5 s, 0 duplicates; restart kept worker ID ${workerIds[0]}`,
    );
  });

  it('keeps serving while ZooKeeper is down, restarts a node from its cache file, refuses a first start, and reports again once ZooKeeper is back', async (t) => {
    const zk = await ZooKeeperServer.start(t);
    if (zk === undefined) return;
    const name = randomName();
    const dirA = tempDir();
    const dirB = tempDir();
    const fast = ['--coordinator-timeout-ms', '1000'];
    const nodes: (FrondProcess | undefined)[] = [];
    t.after(() => stopAll(nodes));
    const [a, b] = await Promise.all([
      startFrond(leafModeArgs(zk.connect, name, 7201, dirA, fast)),
      startFrond(leafModeArgs(zk.connect, name, 7202, dirB, fast)),
    ]);
    nodes.push(a, b);
    const workerA = workerIdOf(a);
    const before = await takeIds(a, 100);

    await zk.stop();
    const down = Date.now();
    // Longer than one 3 s report period, under load.
    const loads = [traffic(a), traffic(b)];
    await sleep(3500);
    await Promise.all(loads.map((load) => load.stop()));
    for (const load of loads) {
      assert.deepEqual(
        [...load.statuses.keys()],
        [200],
        `answers while ZooKeeper is down: ${[...load.statuses]}`,
      );
    }
    const served = loads.reduce((sum, load) => sum + load.ids.length, 0);

    // A restart while ZooKeeper is down: the cache file gives the worker ID and the last time used.
    assert.equal(await a.stop('SIGTERM'), 0);
    const restartedAt = Date.now();
    const a2 = await startFrond(leafModeArgs(zk.connect, name, 7201, dirA, fast));
    nodes[0] = a2;
    const restartMs = Date.now() - restartedAt;
    assert.equal(workerIdOf(a2), workerA);
    assert.ok(a2.logs.some((line) => line.includes('worker.zookeeper_unreachable_using_cache')));
    const after = await takeIds(a2, 100);
    assert.ok(minOf(after) > maxOf([...before, ...(loads[0]?.ids ?? [])]));
    assertUnique([...before, ...loads.flatMap((load) => load.ids), ...after]);

    // A node that never registered cannot start without ZooKeeper: one line, exit code 1.
    const first = await runFrond(['serve', ...leafModeArgs(zk.connect, name, 7203, tempDir(), fast)]);
    assert.equal(first.code, 1);
    assert.match(first.stderr, /^frond: .*first start needs ZooKeeper\n$/);

    // ZooKeeper back: the restarted node's 3 s report reaches its node again.
    await zk.resume();
    const client = await zookeeperClient(zk.connect);
    t.after(() => client.close());
    const node = (await client.getChildren(zookeeperPaths(name).forever)).children.find((child) =>
      child.startsWith('127.0.0.1:7201-'),
    );
    let reported = 0;
    // Reports every 3 s; a client stuck without a connection is replaced after three (9 s).
    for (let waited = 0; waited < 20_000 && reported < down; waited += 250) {
      reported =
        leafNodeTimestamp((await client.getData(`${zookeeperPaths(name).forever}/${node}`)).data) ?? 0;
      if (reported < down) await sleep(250);
    }
    assert.ok(
      reported > down,
      `the node reports its time again after ZooKeeper came back; its worker log:\n${a2.logs
        .filter((line) => line.includes('worker.'))
        .join('\n')}`,
    );
    t.diagnostic(
      `ZooKeeper down 3.5 s: ${served} IDs served, 0 errors; restart from the cache file in ${restartMs} ms with worker ID ${workerA}; a first start refused`,
    );
  });

  it('reports again when its first connection hangs unanswered: a client with no connection for three reports is replaced', async (t) => {
    if (!(await zookeeperUp(t))) return;
    // The node reaches ZooKeeper through a proxy that can hold a connection open and silent: a TCP
    // connect that succeeds and a session handshake that is never answered, which
    // node-zookeeper-client waits on without a bound.
    const proxy = await TcpProxy.start({ port: Number(ZOOKEEPER.split(':')[1]) });
    t.after(() => proxy.close());
    const connect = `127.0.0.1:${proxy.port}`;
    const name = randomName();
    const dir = tempDir();
    const fast = ['--coordinator-timeout-ms', '1000'];
    const nodes: (FrondProcess | undefined)[] = [];
    t.after(() => stopAll(nodes));
    const first = await startFrond(leafModeArgs(connect, name, 7301, dir, fast));
    nodes.push(first);
    const workerId = workerIdOf(first);
    assert.equal(await first.stop('SIGTERM'), 0);

    proxy.blackhole();
    const restarted = await startFrond(leafModeArgs(connect, name, 7301, dir, fast));
    nodes[0] = restarted;
    assert.equal(workerIdOf(restarted), workerId, 'started from its cache file');
    proxy.restore();
    const back = Date.now();
    assert.equal((await takeIds(restarted, 10)).length, 10);

    const client = await zookeeperClient();
    t.after(() => client.close());
    const { forever } = zookeeperPaths(name);
    const node = (await client.getChildren(forever)).children.find((child) =>
      child.startsWith('127.0.0.1:7301-'),
    );
    let reported = 0;
    // Three failed 3 s reports, a new client, its first report: about 10 s.
    for (let waited = 0; waited < 20_000 && reported <= back; waited += 250) {
      reported = leafNodeTimestamp((await client.getData(`${forever}/${node}`)).data) ?? 0;
      if (reported <= back) await sleep(250);
    }
    assert.ok(
      reported > back,
      `the node reports again; its worker log:\n${restarted.logs.filter((line) => line.includes('worker.')).join('\n')}`,
    );
    assert.ok(restarted.logs.some((line) => line.includes('worker.zookeeper_client_replaced')));
  });

  it('refuses the 1025th identity in Leaf layout with one line, while registered identities keep their worker IDs', async (t) => {
    if (!(await zookeeperUp(t))) return;
    const name = randomName();
    const { forever } = zookeeperPaths(name);
    const client = await zookeeperClient();
    t.after(() => client.close());
    await client.mkdirp(forever);
    const started = Date.now();
    // 1024 Leaf nodes of other machines, 10.0.x.y:8080, created at once (pipelined on one session).
    await Promise.all(
      Array.from({ length: 1024 }, (_, i) => {
        const ip = `10.0.${i >> 8}.${i & 255}`;
        return client.create(
          `${forever}/${ip}:8080-`,
          leafNodeData(ip, 8080, Date.now()),
          CreateMode.PERSISTENT_SEQUENTIAL,
        );
      }),
    );
    const createMs = Date.now() - started;
    const refused = await runFrond(['serve', ...leafModeArgs(ZOOKEEPER, name, 7300, tempDir())]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /^frond: .*worker IDs end at 1023.*--worker-lease.*\n$/);
    assert.equal((await client.getChildren(forever)).children.length, 1024, 'no node created for it');
    // An identity already registered (sequence 5) still starts with its worker ID.
    const known = await startFrond([
      '--port',
      '0',
      '--no-segment',
      '--zk',
      ZOOKEEPER,
      '--name',
      name,
      '--advertise',
      '10.0.0.5:8080',
      '--data-dir',
      tempDir(),
    ]);
    t.after(() => known.stop('SIGKILL'));
    assert.equal(workerIdOf(known), 5);
    t.diagnostic(
      `1024 Leaf nodes created in ${createMs} ms; the 1025th identity refused: ${refused.stderr.trim()}`,
    );
  });

  it('checks the ZooKeeper flags with one-line errors', async () => {
    const cases: [string[], RegExp][] = [
      [['--zk', ZOOKEEPER, '--name', 'com/example'], /--name "com\/example" is invalid/],
      [['--zk', `${ZOOKEEPER}/leaf,${ZOOKEEPER}`, '--name', 'a'], /--zk "127.0.0.1:2181\/leaf" is invalid/],
      [['--zk', ZOOKEEPER], /--zk needs --name/],
      [['--zk', ZOOKEEPER, '--name', 'a', '--port', '0'], /--port 0 has no stable identity/],
      [['--worker-lease'], /--worker-lease needs --zk or --etcd/],
      [['--zk', ZOOKEEPER, '--etcd', 'http://127.0.0.1:2379', '--name', 'a'], /--zk and --etcd: pick one/],
      [['--zk', ZOOKEEPER, '--name', 'a', '--worker-id', '3'], /--worker-id and --zk: pick one/],
      [['--zk', 'localhost', '--name', 'a'], /--zk "localhost" is invalid/],
      [['--zk', ZOOKEEPER, '--name', 'a', '--advertise', 'my-host:80'], /has a '-'/],
      [['--etcd', '127.0.0.1:2379', '--name', 'a'], /--etcd "127.0.0.1:2379" is invalid/],
    ];
    for (const [args, message] of cases) {
      const result = await runFrond(['serve', '--no-segment', '--data-dir', tempDir(), ...args]);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, message);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    }
    const fromEnv = await runFrond(['serve', '--no-segment', '--data-dir', tempDir()], {
      env: { FROND_ZK: ZOOKEEPER, FROND_NAME: 'a\tb' },
    });
    assert.equal(fromEnv.code, 2);
    // A tab: ZooKeeper refuses control characters in paths (a blank is fine: Leaf keeps one in leaf.name).
    assert.match(fromEnv.stderr, /--name "a\\tb" is invalid/);
  });
});
