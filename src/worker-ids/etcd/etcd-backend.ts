import { performance } from 'node:perf_hooks';
import { string } from '../../core/option-entry.js';
import { leaseSource } from '../lease/lease-options.js';
import type { CoordinatorBackend } from '../worker-id-backend.js';
import { EtcdLeaseBackend } from './etcd-lease-backend.js';

/** etcd: lease mode only (keys under `/snowflake/{name}/lease`). */
export const etcdBackend: CoordinatorBackend<'etcd'> = {
  kind: 'etcd',
  option: string({
    name: 'etcd',
    flag: 'etcd',
    default: undefined,
    placeholder: 'http://HOST:PORT[,…]',
    help: 'etcd `http://host:port[,…]` for leased worker IDs',
  }),
  endpointsUsage: 'http://host:port[,http://host:port…]',
  isEndpoint: (endpoint) => /^https?:\/\/[A-Za-z0-9.\-_[\]:]+:[0-9]{1,5}\/?$/.test(endpoint),
  leafLayout: false,
  open(config, identity, context) {
    const backend = new EtcdLeaseBackend({
      hosts: config.endpoints,
      name: config.name,
      identity: `${identity.host}:${identity.port}`,
      ttlMs: config.workerLeaseTtlMs,
      timeoutMs: config.coordinatorTimeoutMs,
      maxWorkerId: context.maxWorkerId,
    });
    return leaseSource(backend, config, context, () => performance.now());
  },
};
