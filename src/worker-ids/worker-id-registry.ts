import { networkInterfaces } from 'node:os';
import { FrondError } from '../core/errors.js';
import type { SettingsOf } from '../core/option-entry.js';
import type { WorkerIdSource } from '../core/worker-id-source.js';
import { sharedCoordinatorOptions } from './coordinator-options.js';
import { etcdBackend } from './etcd/etcd-backend.js';
import { FileWorkerIdSource } from './file/file-worker-id-source.js';
import { sqlBackend } from './sql/sql-backend.js';
import type {
  CoordinatorBackend,
  CoordinatorConfig,
  EndpointSettings,
  WorkerSourceContext,
} from './worker-id-backend.js';
import { zookeeperBackend } from './zookeeper/zookeeper-backend.js';

export type { CoordinatorConfig, WorkerSourceContext } from './worker-id-backend.js';

/**
 * Every coordinator frond can take worker IDs from, one line each. Without one, worker IDs come from
 * the data dir's file (`FileWorkerIdSource`).
 */
export const COORDINATOR_BACKENDS = [
  zookeeperBackend,
  etcdBackend,
  sqlBackend,
] as const satisfies readonly CoordinatorBackend[];

/** Each backend's own setting, the one that selects it: `--zk`, `--etcd`, `--worker-lease-store`. */
const BACKEND_OPTIONS = COORDINATOR_BACKENDS.map((backend) => backend.option);

const SHARED_OPTIONS = sharedCoordinatorOptions(
  BACKEND_OPTIONS.map((option) => `\`--${option.flag}\``).join('/'),
);

/**
 * The worker-ID settings of `frond serve`, in the order of its `--help`: each backend's own, then
 * those every coordinator reads. The CLI's option table takes them from here, so a new backend
 * brings its flag, variable and help with it.
 */
export const COORDINATOR_OPTIONS = [...BACKEND_OPTIONS, ...SHARED_OPTIONS] as const;

/**
 * The settings as parsed (named as in the option table), before their rules are checked: a
 * backend's endpoints may be absent (only the chosen backend's are given).
 */
export type CoordinatorFlags = Partial<SettingsOf<typeof BACKEND_OPTIONS>> &
  SettingsOf<typeof SHARED_OPTIONS> &
  EndpointSettings & {
    workerId: number | undefined;
    /** The HTTP port: the identity's port unless advertised. */
    port: number;
  };

function usage(message: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', message);
}

/** Checks the worker-ID flags together; undefined means the data dir's file (no coordinator). */
export function coordinatorConfig(flags: CoordinatorFlags): CoordinatorConfig | undefined {
  const chosen = COORDINATOR_BACKENDS.filter((backend) => endpointsOf(flags, backend) !== undefined);
  if (chosen.length > 1)
    throw usage(`${chosen.map((backend) => `--${backend.option.flag}`).join(' and ')}: pick one`);
  const backend = chosen[0];
  if (backend === undefined) {
    if (flags.workerLease)
      throw usage(`--worker-lease needs ${BACKEND_OPTIONS.map((option) => `--${option.flag}`).join(' or ')}`);
    return undefined;
  }
  const kind = backend.kind;
  const flag = `--${backend.option.flag}`;
  if (flags.workerId !== undefined) throw usage(`--worker-id and ${flag}: pick one`);
  const name = flags.name;
  if (name === undefined)
    throw usage(`${flag} needs --name (Leaf's leaf.name), e.g. --name com.example.orders`);
  // A '-' is fine: Leaf splits at '-' only the children of `forever` (`ip:port-seq`), which hold no
  // name. The one place Leaf splits a path with the name in it is a new node's first start
  // (SnowflakeZookeeperHolder.java: `newNode.split("-")[1]` on the created path): with a '-' in the
  // name that throws after the node is created, Leaf's start fails, and its next start finds the
  // node and takes its number, the number frond takes from the child's name at once.
  // A blank too: Leaf keeps one at the end of leaf.name (Properties.load keeps trailing blanks), and
  // its nodes then live under `/snowflake/NAME /`, where frond's must be to see them.
  if (!/^[A-Za-z0-9_. -]{1,200}$/.test(name) || name.trim() === '' || name === '.' || name === '..')
    throw usage(`--name ${JSON.stringify(name)} is invalid: use letters, digits, '.', '_', '-' and blanks`);
  const value = endpointsOf(flags, backend) as string;
  const endpoints =
    backend.endpointsOf?.(value, flags) ??
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item !== '');
  if (endpoints.length === 0) throw usage(`${flag} is empty`);
  for (const [i, endpoint] of endpoints.entries()) {
    if (!backend.isEndpoint(endpoint, i === endpoints.length - 1))
      throw usage(`${flag} ${JSON.stringify(endpoint)} is invalid: use ${backend.endpointsUsage}`);
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
  const lease = !backend.leafLayout || flags.workerLease;
  if (!lease && advertisePort === undefined && flags.port === 0)
    throw usage(
      `${flag} with --port 0 has no stable identity (ip:port is the worker ID): set --advertise host:port or --advertise-port`,
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
    leafTmpdir: flags.leafTmpdir === 'none' ? undefined : flags.leafTmpdir,
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

/** The worker-ID source the flags ask for: the data dir's file, ZooKeeper (Leaf or lease mode), etcd or SQL leases. */
export function openWorkerIdSource(
  config: CoordinatorConfig | undefined,
  context: WorkerSourceContext,
): WorkerIdSource {
  if (config === undefined)
    return new FileWorkerIdSource(context.dataDir, {
      workerId: context.workerId,
      logger: context.logger,
      maxWorkerId: context.maxWorkerId,
    });
  const host = config.advertiseHost ?? detectIpv4();
  if (host === undefined)
    throw new FrondError(
      'INVALID_CONFIG',
      'no non-internal IPv4 address found for the node identity ip:port; set --advertise host:port',
    );
  const port = config.advertisePort ?? context.httpPort;
  const kindBackend = COORDINATOR_BACKENDS.find((candidate) => candidate.kind === config.kind);
  if (kindBackend === undefined)
    throw new FrondError('INVALID_CONFIG', `no worker-ID backend of kind ${JSON.stringify(config.kind)}`);
  return kindBackend.open(config, { host, port }, context);
}

/** The endpoints `flags` give for `backend`, if any. */
function endpointsOf(flags: CoordinatorFlags, backend: CoordinatorBackend): string | undefined {
  const value = (flags as unknown as Record<string, unknown>)[backend.option.name];
  return typeof value === 'string' ? value : undefined;
}

/** The flag that selects the backend of `kind`: `--zk`. */
export function flagOfKind(kind: string): string {
  const backend = COORDINATOR_BACKENDS.find((candidate) => candidate.kind === kind);
  return backend === undefined ? kind : `--${backend.option.flag}`;
}
