import { performance } from 'node:perf_hooks';
import { string } from '../../core/option-entry.js';
import { leaseSource } from '../lease/lease-options.js';
import type { CoordinatorBackend } from '../worker-id-backend.js';
import { LEAF_REPORT_EVERY_MS, ZooKeeperLeafWorkerIdSource } from './leaf-worker-id-source.js';
import { ZooKeeperLeaseBackend } from './zookeeper-lease-backend.js';

/** ZooKeeper: Leaf's persistent layout, or lease mode with `--worker-lease`. */
export const zookeeperBackend: CoordinatorBackend<'zk'> = {
  kind: 'zookeeper',
  option: string({
    name: 'zk',
    flag: 'zk',
    default: undefined,
    leafKey: 'leaf.snowflake.zk.address',
    placeholder: 'HOST:PORT[,…]',
    help: 'ZooKeeper `host:port[,host:port…][/chroot]` for worker IDs',
  }),
  endpointsUsage: 'host:port[,host:port…][/chroot]',
  // A chroot after the last server, as ZooKeeper's own connect string (and so Leaf's
  // leaf.snowflake.zk.address, handed to Curator as it is): every path is then under it.
  isEndpoint: (endpoint, last) =>
    /^[A-Za-z0-9.\-_]+:[0-9]{1,5}$/.test(endpoint) ||
    (last && /^[A-Za-z0-9.\-_]+:[0-9]{1,5}(\/[A-Za-z0-9.\-_]+)+$/.test(endpoint)),
  leafLayout: true,
  open(config, identity, context) {
    const connect = config.endpoints.join(',');
    const { clock, logger } = context;
    if (!config.lease)
      return new ZooKeeperLeafWorkerIdSource({
        connect,
        name: config.name,
        host: identity.host,
        port: identity.port,
        dataDir: context.dataDir,
        timeoutMs: config.coordinatorTimeoutMs,
        maxClockSkewMs: config.clockMaxSkewMs,
        leafTmpdir: config.leafTmpdir,
        unreportedMarginMs: LEAF_REPORT_EVERY_MS + context.recordAheadMs,
        clock,
        logger,
        maxWorkerId: context.maxWorkerId,
      });
    const backend = new ZooKeeperLeaseBackend({
      connect,
      name: config.name,
      identity: `${identity.host}:${identity.port}`,
      sessionTimeoutMs: config.workerLeaseTtlMs,
      timeoutMs: config.coordinatorTimeoutMs,
      clock,
      maxWorkerId: context.maxWorkerId,
    });
    return leaseSource(backend, config, context, () => performance.now());
  },
};
