import type { TestContext } from 'node:test';
import { Etcd3 } from 'etcd3';
import { CreateMode, type ZooKeeperClient } from '../../src/worker-ids/zookeeper/zookeeper-client.js';
import { zookeeperPaths } from '../../src/worker-ids/zookeeper/zookeeper-paths.js';
import { ETCD, etcdUp, randomName, ZOOKEEPER, zookeeperClient, zookeeperUp } from './coordinators.js';
import { tempDir } from './frond-process.js';

/** The rest of the fleet, played by the test: holds claims, reads records. */
export interface Coordinator {
  name: string;
  args(port: number): string[];
  /** Claims every worker ID but 0, as 1023 live nodes would, until the test ends. */
  holdAllButZero(): Promise<void>;
  claimed(workerId: number): Promise<boolean>;
  /** The last timestamp recorded for `workerId`. */
  recorded(workerId: number): Promise<number>;
}

export async function zookeeperCoordinator(t: TestContext): Promise<Coordinator | undefined> {
  if (!(await zookeeperUp(t))) return undefined;
  const name = randomName();
  const client: ZooKeeperClient = await zookeeperClient();
  t.after(() => client.close());
  const paths = zookeeperPaths(name);
  return {
    name,
    // 1 s sessions: the floor of scripts/services.sh's ZooKeeper (minSessionTimeout=1000).
    args: (port) => leaseArgs(['--zk', ZOOKEEPER], name, port, '1000'),
    async holdAllButZero() {
      await client.mkdirp(paths.claims);
      await Promise.all(
        Array.from({ length: 1023 }, (_, i) =>
          client.create(`${paths.claims}/${i + 1}`, null, CreateMode.EPHEMERAL),
        ),
      );
    },
    claimed: async (workerId) => (await client.exists(`${paths.claims}/${workerId}`)) !== undefined,
    async recorded(workerId) {
      const { data } = await client.getData(`${paths.workers}/${workerId}`);
      return (JSON.parse(data.toString()) as { timestamp: number }).timestamp;
    },
  };
}

export async function etcdCoordinator(t: TestContext): Promise<Coordinator | undefined> {
  if (!(await etcdUp(t))) return undefined;
  const name = randomName();
  const client = new Etcd3({ hosts: ETCD });
  const prefix = `/snowflake/${name}/lease`;
  const lease = client.lease(60, { autoKeepAlive: false });
  t.after(async () => {
    await lease.revoke().catch(() => {});
    client.close();
  });
  return {
    name,
    // 2 s leases: etcd's floor.
    args: (port) => leaseArgs(['--etcd', ETCD], name, port, '2000'),
    async holdAllButZero() {
      const id = await lease.grant();
      await Promise.all(
        Array.from({ length: 1023 }, (_, i) =>
          client
            .put(`${prefix}/claims/${i + 1}`)
            .value('other')
            .lease(id)
            .exec(),
        ),
      );
    },
    claimed: async (workerId) => (await client.get(`${prefix}/claims/${workerId}`).string()) !== null,
    recorded: async (workerId) => Number(await client.get(`${prefix}/workers/${workerId}`).string()),
  };
}

export function leaseArgs(coordinator: string[], name: string, port: number, ttlMs: string): string[] {
  return [
    '--port',
    '0',
    '--no-segment',
    ...coordinator,
    '--worker-lease',
    '--worker-lease-ttl-ms',
    ttlMs,
    '--name',
    name,
    '--advertise',
    `127.0.0.1:${port}`,
    '--coordinator-timeout-ms',
    '1000',
    '--data-dir',
    tempDir(),
  ];
}

export const LEASE_BACKENDS: [string, (t: TestContext) => Promise<Coordinator | undefined>][] = [
  ['ZooKeeper', zookeeperCoordinator],
  ['etcd', etcdCoordinator],
];
