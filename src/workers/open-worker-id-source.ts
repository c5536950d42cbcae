import { networkInterfaces } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Clock } from '../core/clock.js';
import { FrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import type { WorkerIdSource } from '../core/worker-id-source.js';
import { EtcdLeaseBackend } from './etcd/etcd-lease-backend.js';
import { FileWorkerIdSource } from './file/file-worker-id-source.js';
import { LeaseWorkerIdSource } from './lease/lease-worker-id-source.js';
import { LEAF_REPORT_EVERY_MS, ZooKeeperLeafWorkerIdSource } from './zookeeper/leaf-worker-id-source.js';
import { ZooKeeperLeaseBackend } from './zookeeper/zookeeper-lease-backend.js';

/** Where snowflake worker IDs come from when not from the data dir's file. */
export interface CoordinatorConfig {
  /** `zookeeper`: `--zk`, Leaf's layout unless `lease`; `etcd`: `--etcd`, always lease mode. */
  kind: 'zookeeper' | 'etcd';
  /** ZooKeeper `host:port[,…]`, or etcd `http://host:port` URLs. */
  endpoints: string[];
  /** Leaf's `leaf.name`: `/snowflake/{name}/…` in ZooKeeper and etcd. */
  name: string;
  lease: boolean;
  /** `--advertise host:port` (or only the port, from `--advertise-port`); the rest is detected. */
  advertiseHost: string | undefined;
  advertisePort: number | undefined;
  /** ZooKeeper session timeout or etcd lease TTL in lease mode. */
  workerLeaseTtlMs: number;
  /** Bound on connecting and on each call to the coordinator. */
  coordinatorTimeoutMs: number;
  /** Leaf mode: refuse to start with a clock further than this from the other live nodes'; 0: off. */
  clockMaxSkewMs: number;
}

/** The settings as parsed (named as in the CLI's option table), before their rules are checked. */
export interface CoordinatorFlags {
  zk: string | undefined;
  etcd: string | undefined;
  name: string | undefined;
  advertise: string | undefined;
  advertisePort: number | undefined;
  workerLease: boolean;
  workerLeaseTtlMs: number;
  coordinatorTimeoutMs: number;
  clockMaxSkewMs: number;
  workerId: number | undefined;
  /** The HTTP port: the identity's port unless advertised. */
  port: number;
}

export const DEFAULT_LEASE_TTL_MS = 6_000;
export const DEFAULT_COORDINATOR_TIMEOUT_MS = 3_000;
export const DEFAULT_MAX_CLOCK_SKEW_MS = 5_000;

function usage(message: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', message);
}

/** Checks the worker-ID flags together; undefined means the data dir's file (no coordinator). */
export function coordinatorConfig(flags: CoordinatorFlags): CoordinatorConfig | undefined {
  if (flags.zk !== undefined && flags.etcd !== undefined) throw usage('--zk and --etcd: pick one');
  if (flags.zk === undefined && flags.etcd === undefined) {
    if (flags.workerLease) throw usage('--worker-lease needs --zk or --etcd');
    return undefined;
  }
  const kind = flags.zk !== undefined ? 'zookeeper' : 'etcd';
  const flag = kind === 'zookeeper' ? '--zk' : '--etcd';
  if (flags.workerId !== undefined) throw usage(`--worker-id and ${flag}: pick one`);
  const name = flags.name;
  if (name === undefined)
    throw usage(`${flag} needs --name (Leaf's leaf.name), e.g. --name com.example.orders`);
  if (name.includes('-'))
    throw usage(
      `--name ${JSON.stringify(name)} has a '-': Leaf splits node names at '-', so it cannot be used`,
    );
  if (!/^[A-Za-z0-9_.]{1,200}$/.test(name) || name === '.' || name === '..')
    throw usage(`--name ${JSON.stringify(name)} is invalid: use letters, digits, '.' and '_'`);
  const endpoints = (kind === 'zookeeper' ? (flags.zk as string) : (flags.etcd as string))
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (endpoints.length === 0) throw usage(`${flag} is empty`);
  for (const endpoint of endpoints) {
    if (kind === 'zookeeper' && !/^[A-Za-z0-9.\-_]+:[0-9]{1,5}$/.test(endpoint))
      throw usage(`--zk ${JSON.stringify(endpoint)} is invalid: use host:port[,host:port…]`);
    if (kind === 'etcd' && !/^https?:\/\/[A-Za-z0-9.\-_[\]:]+:[0-9]{1,5}\/?$/.test(endpoint))
      throw usage(`--etcd ${JSON.stringify(endpoint)} is invalid: use http://host:port[,http://host:port…]`);
  }
  let advertiseHost: string | undefined;
  let advertisePort = flags.advertisePort;
  if (flags.advertise !== undefined) {
    const match = /^([^:/\s]+):([0-9]{1,5})$/.exec(flags.advertise);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65_535)
      throw usage(
        `--advertise ${JSON.stringify(flags.advertise)} is invalid: use host:port (IPv4 or a name)`,
      );
    advertiseHost = match[1] as string;
    advertisePort = port;
  }
  if (advertiseHost?.includes('-'))
    throw usage(
      `--advertise ${JSON.stringify(flags.advertise)} has a '-': Leaf splits node names at '-'; use the IP address`,
    );
  const lease = kind === 'etcd' || flags.workerLease;
  if (!lease && advertisePort === undefined && flags.port === 0)
    throw usage(
      '--zk with --port 0 has no stable identity (ip:port is the worker ID): set --advertise host:port or --advertise-port',
    );
  return {
    kind,
    endpoints,
    name,
    lease,
    advertiseHost,
    advertisePort,
    workerLeaseTtlMs: flags.workerLeaseTtlMs,
    coordinatorTimeoutMs: flags.coordinatorTimeoutMs,
    clockMaxSkewMs: flags.clockMaxSkewMs,
  };
}

/** Leaf's IP detection: interfaces in the OS's order, the first IPv4 address that is not internal. */
export function detectIpv4(interfaces = networkInterfaces()): string | undefined {
  for (const addresses of Object.values(interfaces)) {
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return undefined;
}

export interface WorkerSourceContext {
  dataDir: string;
  /** `--worker-id`, for the file source. */
  workerId: number | undefined;
  /** The HTTP port: the identity's port unless advertised. */
  httpPort: number;
  /** The core's record-ahead: how far past its last report a Leaf-mode node may have issued IDs. */
  recordAheadMs: number;
  clock: Clock;
  logger: Logger;
}

/** The worker-ID source the flags ask for: the data dir's file, ZooKeeper (Leaf or lease mode), or etcd. */
export function openWorkerIdSource(
  config: CoordinatorConfig | undefined,
  context: WorkerSourceContext,
): WorkerIdSource {
  if (config === undefined) return new FileWorkerIdSource(context.dataDir, { workerId: context.workerId });
  const host = config.advertiseHost ?? detectIpv4();
  if (host === undefined)
    throw new FrondError(
      'INVALID_CONFIG',
      'no non-internal IPv4 address found for the node identity ip:port; set --advertise host:port',
    );
  const port = config.advertisePort ?? context.httpPort;
  const identity = `${host}:${port}`;
  const { clock, logger } = context;
  if (!config.lease)
    return new ZooKeeperLeafWorkerIdSource({
      connect: config.endpoints.join(','),
      name: config.name,
      host,
      port,
      dataDir: context.dataDir,
      timeoutMs: config.coordinatorTimeoutMs,
      maxClockSkewMs: config.clockMaxSkewMs,
      unreportedMarginMs: LEAF_REPORT_EVERY_MS + context.recordAheadMs,
      clock,
      logger,
    });
  const backend =
    config.kind === 'etcd'
      ? new EtcdLeaseBackend({
          hosts: config.endpoints,
          name: config.name,
          identity,
          ttlMs: config.workerLeaseTtlMs,
          timeoutMs: config.coordinatorTimeoutMs,
        })
      : new ZooKeeperLeaseBackend({
          connect: config.endpoints.join(','),
          name: config.name,
          identity,
          sessionTimeoutMs: config.workerLeaseTtlMs,
          timeoutMs: config.coordinatorTimeoutMs,
          clock,
        });
  return new LeaseWorkerIdSource(backend, {
    clock,
    monotonic: () => performance.now(),
    logger,
    timeoutMs: config.coordinatorTimeoutMs,
    // A crashed node's claim lasts one TTL after its last heartbeat; twice that and more is enough.
    acquireWaitMs: 2 * config.workerLeaseTtlMs + config.coordinatorTimeoutMs,
    retryMs: 500,
  });
}
