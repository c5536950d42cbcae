import { boolean, integer, string } from '../core/option-entry.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const DEFAULT_LEASE_TTL_MS = 6_000;
export const DEFAULT_COORDINATOR_TIMEOUT_MS = 3_000;
export const DEFAULT_MAX_CLOCK_SKEW_MS = 5_000;
/** Java's `java.io.tmpdir` on Linux and macOS servers, where Leaf keeps its worker cache. */
export const DEFAULT_LEAF_TMPDIR = '/tmp';

/**
 * The worker-ID settings every coordinator reads, in the order of `frond serve --help`; each
 * backend's own setting (`--zk`) comes from its descriptor. `selectingFlags` names those settings
 * (`` `--zk`/`--etcd` ``), which `--name` is required with.
 */
export function sharedCoordinatorOptions(selectingFlags: string) {
  return [
    string({
      name: 'name',
      flag: 'name',
      default: undefined,
      describedDefault: `none (required with ${selectingFlags})`,
      leafKey: 'leaf.name',
      placeholder: 'NAME',
      help: 'paths live under `/snowflake/NAME/`',
    }),
    string({
      name: 'advertise',
      flag: 'advertise',
      default: undefined,
      describedDefault: 'first non-internal IPv4 and the HTTP port',
      placeholder: 'HOST:PORT',
      help: "the node's `ip:port` identity in Leaf's layout; set it in containers",
    }),
    integer({
      name: 'advertisePort',
      flag: 'advertise-port',
      default: undefined,
      min: 1,
      max: 65_535,
      describedDefault: 'the HTTP port',
      leafKey: 'leaf.snowflake.port',
      help: 'only the port of that identity',
    }),
    string({
      name: 'leafTmpdir',
      flag: 'leaf-tmpdir',
      default: DEFAULT_LEAF_TMPDIR,
      describedDefault: "`/tmp` (Java's `java.io.tmpdir` on Linux)",
      placeholder: 'DIR',
      help: "Leaf layout: Leaf's own worker cache `DIR/NAME/leafconf/PORT/workerID.properties` is read and kept written, for cutting over from Leaf and rolling back to it; `none`: neither",
    }),
    boolean({
      name: 'workerLease',
      flag: 'worker-lease',
      default: false,
      help: 'lease mode on ZooKeeper (etcd and `--worker-lease-store` are always lease mode)',
    }),
    integer({
      name: 'workerLeaseTtlMs',
      flag: 'worker-lease-ttl-ms',
      default: DEFAULT_LEASE_TTL_MS,
      // ZooKeeper's floor is 2 ticks (4 s with its default tickTime, 1 s in scripts/services.sh); etcd's
      // is 2 s; SQL leases have none of their own (a heartbeat every third of it must fit its round trips).
      min: 1_000,
      max: 10 * MINUTE,
      unit: 'ms',
      help: 'ZooKeeper session timeout, or etcd or SQL lease TTL',
    }),
    integer({
      name: 'coordinatorTimeoutMs',
      flag: 'coordinator-timeout-ms',
      default: DEFAULT_COORDINATOR_TIMEOUT_MS,
      min: 100,
      max: 10 * MINUTE,
      unit: 'ms',
      help: 'bound on connecting and on every call to ZooKeeper, etcd or the lease database',
    }),
    integer({
      name: 'clockMaxSkewMs',
      flag: 'clock-max-skew-ms',
      default: DEFAULT_MAX_CLOCK_SKEW_MS,
      min: 0,
      max: HOUR,
      unit: 'ms',
      help: "Leaf layout: refuse to start with a clock further than this from the other live nodes' (0: off)",
    }),
  ] as const;
}
