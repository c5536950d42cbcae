import type { TestContext } from 'node:test';
import { systemClock } from '../src/core/clock.js';
import { silentLogger } from '../src/core/logger.js';
import type { WorkerIdSource } from '../src/core/worker-id-source.js';
import { LeaseWorkerIdSource } from '../src/worker-ids/lease/lease-worker-id-source.js';
import { ZooKeeperLeafWorkerIdSource } from '../src/worker-ids/zookeeper/leaf-worker-id-source.js';
import { CreateMode, type ZooKeeperClient } from '../src/worker-ids/zookeeper/zookeeper-client.js';
import { ZooKeeperLeaseBackend } from '../src/worker-ids/zookeeper/zookeeper-lease-backend.js';
import { zookeeperPaths } from '../src/worker-ids/zookeeper/zookeeper-paths.js';
import { randomName, ZOOKEEPER, zookeeperClient, zookeeperUp } from './support/coordinators.js';
import { tempDir } from './support/frond-process.js';
import { describeWorkerIdSource } from './worker-id-source.suite.js';

/** Sources a test opened are released when it ends (a "crashed" one included), so no timer is left. */
function closeAfter<T extends WorkerIdSource>(t: TestContext, source: T): T {
  t.after(() => source.release(0).catch(() => {}));
  return source;
}

// Leaf's layout: identities ip:port under one name; each identity keeps its data dir across restarts.
const leafName = randomName();
const dataDirs = new Map<string, string>();
let nextPort = 20_000;
describeWorkerIdSource(
  'ZooKeeper, Leaf layout',
  async (t, identity) => {
    if (!(await zookeeperUp(t))) return undefined;
    const dataDir = dataDirs.get(identity) ?? tempDir('frond-zk-leaf-');
    dataDirs.set(identity, dataDir);
    const [host, port] = identity.split(':') as [string, string];
    return closeAfter(
      t,
      new ZooKeeperLeafWorkerIdSource({
        connect: ZOOKEEPER,
        name: leafName,
        host,
        port: Number(port),
        dataDir,
        timeoutMs: 5000,
        maxClockSkewMs: 5000,
        unreportedMarginMs: 5000,
        clock: systemClock,
        logger: silentLogger,
      }),
    );
  },
  () => `127.0.0.1:${nextPort++}`,
  { kind: 'identity', distinct: true },
);

// Lease mode: a fresh name per test, and a client of the test's own playing the other nodes.
const leaseNames = new WeakMap<TestContext, string>();
const nameOf = (t: TestContext) => {
  const name = leaseNames.get(t) ?? randomName();
  leaseNames.set(t, name);
  return name;
};
const others = new WeakMap<TestContext, Promise<ZooKeeperClient>>();
const otherNodes = (t: TestContext) => {
  let client = others.get(t);
  if (client === undefined) {
    client = zookeeperClient();
    others.set(t, client);
    t.after(async () => (await client)?.close());
  }
  return client;
};

describeWorkerIdSource(
  'ZooKeeper, lease mode',
  async (t, identity) => {
    if (!(await zookeeperUp(t))) return undefined;
    const backend = new ZooKeeperLeaseBackend({
      connect: ZOOKEEPER,
      name: nameOf(t),
      identity,
      // The server's floor in scripts/services.sh (minSessionTimeout=1000).
      sessionTimeoutMs: 1000,
      timeoutMs: 2000,
      clock: systemClock,
    });
    return closeAfter(
      t,
      new LeaseWorkerIdSource(backend, {
        clock: systemClock,
        monotonic: () => performance.now(),
        logger: silentLogger,
        timeoutMs: 2000,
        acquireWaitMs: 1000,
        retryMs: 200,
      }),
    );
  },
  () => `127.0.0.1:${nextPort++}`,
  {
    kind: 'lease',
    distinct: true,
    lease: {
      async holdAllBut(t, keep) {
        const client = await otherNodes(t);
        const { claims } = zookeeperPaths(nameOf(t));
        await client.mkdirp(claims);
        await Promise.all(
          Array.from({ length: 1024 }, (_, id) =>
            id === keep ? undefined : client.create(`${claims}/${id}`, null, CreateMode.EPHEMERAL),
          ),
        );
      },
      async dropClaim(t, workerId) {
        const client = await otherNodes(t);
        await client.remove(`${zookeeperPaths(nameOf(t)).claims}/${workerId}`);
      },
    },
  },
);
