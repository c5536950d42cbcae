import type { TestContext } from 'node:test';
import { Etcd3 } from 'etcd3';
import { CreateMode, type ZooKeeperClient } from '../../src/worker-ids/zookeeper/zookeeper-client.js';
import { zookeeperPaths } from '../../src/worker-ids/zookeeper/zookeeper-paths.js';
import { ETCD, etcdUp, randomName, ZOOKEEPER, zookeeperClient, zookeeperUp } from './coordinators.js';
import { tempDir } from './frond-process.js';
import { serviceMissing } from './service-gate.js';
import { leaseRows } from './sql-leases.js';
import { createDatabase, SERVICE_NAME, type ServerDialect } from './test-database.js';

/** The rest of the fleet, played by the test: holds claims, reads records. */
export interface Coordinator {
  name: string;
  args(port: number): string[];
  /** Claims every worker ID but 0, as 1023 live nodes would, until the test ends. */
  holdAllButZero(): Promise<void>;
  /** Claims every worker ID but those in `keep`, as live nodes would, until the test ends or `free`. */
  holdAllBut(keep: readonly number[]): Promise<void>;
  /** Gives up the test's own claim on `workerId` (one `holdAllBut` took), as a node that stops. */
  free(workerId: number): Promise<void>;
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
  const coordinator: Coordinator = {
    name,
    // 1 s sessions: the floor of scripts/services.sh's ZooKeeper (minSessionTimeout=1000).
    args: (port) => leaseArgs(['--zk', ZOOKEEPER], name, port, '1000'),
    holdAllButZero: () => coordinator.holdAllBut([0]),
    async holdAllBut(keep) {
      await client.mkdirp(paths.claims);
      await Promise.all(
        Array.from({ length: 1024 }, (_, i) =>
          keep.includes(i) ? undefined : client.create(`${paths.claims}/${i}`, null, CreateMode.EPHEMERAL),
        ),
      );
    },
    free: (workerId) => client.remove(`${paths.claims}/${workerId}`),
    claimed: async (workerId) => (await client.exists(`${paths.claims}/${workerId}`)) !== undefined,
    async recorded(workerId) {
      const { data } = await client.getData(`${paths.workers}/${workerId}`);
      return (JSON.parse(data.toString()) as { timestamp: number }).timestamp;
    },
  };
  return coordinator;
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
  const coordinator: Coordinator = {
    name,
    // 2 s leases: etcd's floor.
    args: (port) => leaseArgs(['--etcd', ETCD], name, port, '2000'),
    holdAllButZero: () => coordinator.holdAllBut([0]),
    async holdAllBut(keep) {
      const id = await lease.grant();
      await Promise.all(
        Array.from({ length: 1024 }, (_, i) =>
          keep.includes(i) ? undefined : client.put(`${prefix}/claims/${i}`).value('other').lease(id).exec(),
        ),
      );
    },
    async free(workerId) {
      await client.delete().key(`${prefix}/claims/${workerId}`).exec();
    },
    claimed: async (workerId) => (await client.get(`${prefix}/claims/${workerId}`).string()) !== null,
    recorded: async (workerId) => Number(await client.get(`${prefix}/workers/${workerId}`).string()),
  };
  return coordinator;
}

/**
 * Leases in `frond_worker_lease` of a database of the test's own on the machine's PostgreSQL or
 * MariaDB, dropped when the test ends; the other nodes' claims are rows of holder `other`.
 */
export function sqlCoordinator(dialect: ServerDialect) {
  return async (t: TestContext): Promise<Coordinator | undefined> => {
    let database: Awaited<ReturnType<typeof createDatabase>>;
    try {
      database = await createDatabase(dialect);
    } catch (error) {
      serviceMissing(t, SERVICE_NAME[dialect], (error as Error).message);
      return undefined;
    }
    t.after(() => database.drop());
    const name = randomName();
    const rows = leaseRows(database);
    return {
      name,
      // 2 s leases: a heartbeat every 667 ms, each a round trip to a database on a busy machine.
      args: (port) => leaseArgs(['--worker-lease-store', database.url], name, port, '2000'),
      holdAllButZero: () => rows.holdAllBut(name, [0]),
      holdAllBut: (keep) => rows.holdAllBut(name, keep),
      free: (workerId) => rows.expire(name, workerId),
      claimed: (workerId) => rows.live(name, workerId),
      recorded: (workerId) => rows.recorded(name, workerId),
    };
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
  ['PostgreSQL', sqlCoordinator('postgres')],
  ['MariaDB', sqlCoordinator('mysql')],
];
