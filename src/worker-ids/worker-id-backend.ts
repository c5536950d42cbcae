import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/logger.js';
import type { OptionEntry } from '../core/option-entry.js';
import type { WorkerIdSource } from '../core/worker-id-source.js';

/** A coordinator and how to use it, once the settings are checked (`coordinatorConfig`). */
export interface CoordinatorConfig {
  /** The backend's `kind`: `zookeeper`, `etcd` or `sql`. */
  kind: string;
  /** ZooKeeper `host:port[,…]`, etcd `http://host:port` URLs, or one database URL (with its password). */
  endpoints: string[];
  /** Leaf's `leaf.name`: `/snowflake/{name}/…` in ZooKeeper and etcd, the rows' `name` in SQL. */
  name: string;
  /** Lease mode (worker IDs reused after their lease) rather than Leaf's persistent layout. */
  lease: boolean;
  /** `--advertise host:port` (or only the port, from `--advertise-port`); the rest is detected. */
  advertiseHost: string | undefined;
  advertisePort: number | undefined;
  /** ZooKeeper session timeout, etcd or SQL lease TTL in lease mode. */
  workerLeaseTtlMs: number;
  /** Bound on connecting and on each call to the coordinator. */
  coordinatorTimeoutMs: number;
  /** Leaf mode: refuse to start with a clock further than this from the other live nodes'; 0: off. */
  clockMaxSkewMs: number;
  /** Leaf layout: Leaf's `java.io.tmpdir`, for its worker cache file; undefined: not used. */
  leafTmpdir?: string | undefined;
}

/** The settings besides its own that a backend's endpoints may refer to. */
export interface EndpointSettings {
  /** `--store`, where segment mode keeps leaf_alloc; undefined: the data dir's SQLite file. */
  store?: string | undefined;
}

/** What every source is opened with besides its own configuration. */
export interface WorkerSourceContext {
  dataDir: string;
  /** `--worker-id`, for the file source. */
  workerId: number | undefined;
  /**
   * The largest worker ID of the layout (2^worker bits − 1; 1023 in Leaf's): a source hands out
   * worker IDs from 0 to this, and counts this many plus one as all of them.
   */
  maxWorkerId: number;
  /** The HTTP port: the identity's port unless advertised. */
  httpPort: number;
  /** The core's record-ahead: how far past its last report a Leaf-mode node may have issued IDs. */
  recordAheadMs: number;
  clock: Clock;
  logger: Logger;
}

/** The node's identity in the coordinator: `host:port`, advertised or detected. */
export interface NodeIdentity {
  host: string;
  port: number;
}

/**
 * A coordinator that hands out worker IDs. Each backend folder exports one; the registry
 * (`worker-id-registry.ts`) lists them, and `frond serve` takes each one's option entry from there.
 * A new backend is a folder with a `WorkerIdSource` (or a `LeaseBackend` for `LeaseWorkerIdSource`),
 * this descriptor, one line in the registry, and the contract suite
 * (`test/worker-id-source.suite.ts`) passing. `S` is the name of its setting (`zk`), so the parsed
 * settings have a typed field for it.
 */
export interface CoordinatorBackend<S extends string = string> {
  /** In logs, errors and `CoordinatorConfig.kind`. */
  readonly kind: string;
  /**
   * The setting that selects it and names its endpoints (`--zk`, `FROND_ZK`, Leaf's key if it has
   * one): the CLI's option table, `--help` and docs/configuration.md take it from here. In no slice: it is
   * read by `coordinatorConfig`, with the settings every coordinator reads.
   */
  readonly option: OptionEntry<S, string | undefined, undefined>;
  /** What the endpoint list looks like, for messages: `host:port[,host:port…]`. */
  readonly endpointsUsage: string;
  /** `last`: the list's last endpoint (ZooKeeper's chroot, `host:port/path`, may follow only it). */
  isEndpoint(endpoint: string, last: boolean): boolean;
  /**
   * The endpoints of its setting's value, for a backend whose value is not a comma list checked
   * item by item with `isEndpoint`: a database URL, whose password may hold a comma and must not be
   * repeated in an error. `settings` are the other settings it may refer to (`--store`). Throws a
   * one-line error.
   */
  endpointsOf?(value: string, settings: EndpointSettings): string[];
  /** Whether it also offers Leaf's persistent layout (identity = ip:port); if not, always lease mode. */
  readonly leafLayout: boolean;
  open(config: CoordinatorConfig, identity: NodeIdentity, context: WorkerSourceContext): WorkerIdSource;
}
