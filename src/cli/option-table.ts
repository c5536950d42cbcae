import { LOG_LEVELS } from '../core/logger.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS } from '../core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../core/segment-step.js';
import { MAX_WORKER_ID } from '../core/snowflake-layout.js';
import { DEFAULT_SNOWFLAKE_OPTIONS } from '../core/snowflake-service.js';
import { MAX_TABLE_STEP } from '../core/tag.js';
import { DEFAULT_TAG_STEP } from '../core/tag-catalogue.js';
import { MAX_WORKERS } from '../server/cluster/cluster.js';
import { RESERVED_DESCRIPTORS } from '../server/http/http-server.js';
import { DEFAULT_METRICS_TAGS } from '../server/ops/tag-labels.js';
import { DEFAULT_FENCE_SKIP } from '../stores/segment-primitive.js';
import {
  DEFAULT_COORDINATOR_TIMEOUT_MS,
  DEFAULT_LEAF_TMPDIR,
  DEFAULT_LEASE_TTL_MS,
  DEFAULT_MAX_CLOCK_SKEW_MS,
} from '../worker-ids/worker-id-registry.js';
import { boolean, integer, list, type OptionEntry, oneOf, type SettingsOf, string } from './option-entry.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Where `leaf_alloc` lives; every command that reaches the store takes these two. */
export const STORE_OPTIONS = [
  string({
    name: 'dataDir',
    flag: 'data-dir',
    default: './data',
    placeholder: 'PATH',
    help: "the node's own files: SQLite database (by default), worker ID and recorded timestamp, pid file",
  }),
  string({
    name: 'store',
    flag: 'store',
    default: undefined,
    describedDefault: '`sqlite:<data-dir>/frond.db`',
    leafKey: 'leaf.jdbc.url',
    placeholder: 'URL',
    secret: true,
    help: 'where `leaf_alloc` lives: `sqlite:PATH`, `postgres://user:pass@host:5432/db` or `mysql://user:pass@host:3306/db` (MySQL and MariaDB); see [docs/databases.md](docs/databases.md)',
  }),
] as const;

/** Shared by `serve` and `decode`: the IDs of a node decode with the epoch it was started with. */
const EPOCH = integer({
  name: 'epoch',
  flag: 'epoch',
  default: DEFAULT_SNOWFLAKE_OPTIONS.epoch,
  min: 0,
  max: 'now',
  unit: 'ms',
  placeholder: 'MS',
  help: "snowflake epoch in ms since 1970 (Leaf's); also used to decode",
});

/**
 * Every setting of `frond serve`, in the order of `--help` and the README. Defaults of the core's
 * settings are the core's own (`DEFAULT_SNOWFLAKE_OPTIONS`, …), so the core stays the source.
 */
export const SERVE_OPTIONS = [
  string({
    name: 'host',
    flag: 'host',
    default: '127.0.0.1',
    describedDefault: '`127.0.0.1`; with `--leaf-config`, `0.0.0.0` as Leaf (logged)',
    leafKey: 'server.address',
    placeholder: 'HOST',
    help: 'address to listen on (`0.0.0.0` for all)',
  }),
  integer({
    name: 'port',
    flag: 'port',
    default: 8080,
    min: 0,
    max: 65_535,
    leafKey: 'server.port',
    // The platforms' convention (Heroku, Cloud Run, Render…): they say the port in PORT.
    platformEnv: 'PORT',
    help: 'HTTP port, as Leaf (`0`: any free port, printed in the `listening` log line); `PORT` is read when `FROND_PORT` is not set',
  }),
  ...STORE_OPTIONS,
  integer({
    name: 'workerId',
    flag: 'worker-id',
    default: undefined,
    min: 0,
    max: MAX_WORKER_ID,
    describedDefault: 'kept in the data dir (random on first start)',
    help: 'snowflake worker ID',
  }),
  string({
    name: 'zk',
    flag: 'zk',
    default: undefined,
    leafKey: 'leaf.snowflake.zk.address',
    placeholder: 'HOST:PORT[,…]',
    help: 'ZooKeeper `host:port[,host:port…][/chroot]` for worker IDs',
  }),
  string({
    name: 'etcd',
    flag: 'etcd',
    default: undefined,
    placeholder: 'http://HOST:PORT[,…]',
    help: 'etcd `http://host:port[,…]` for leased worker IDs',
  }),
  string({
    name: 'name',
    flag: 'name',
    default: undefined,
    describedDefault: 'none (required with `--zk`/`--etcd`)',
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
    help: 'lease mode on ZooKeeper (etcd is always lease mode)',
  }),
  integer({
    name: 'workerLeaseTtlMs',
    flag: 'worker-lease-ttl-ms',
    default: DEFAULT_LEASE_TTL_MS,
    // ZooKeeper's floor is 2 ticks (4 s with its default tickTime, 1 s in scripts/services.sh); etcd's is 2 s.
    min: 1_000,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'ZooKeeper session timeout or etcd lease TTL',
  }),
  integer({
    name: 'coordinatorTimeoutMs',
    flag: 'coordinator-timeout-ms',
    default: DEFAULT_COORDINATOR_TIMEOUT_MS,
    min: 100,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'bound on connecting and on every call to ZooKeeper or etcd',
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
  boolean({
    name: 'segment',
    flag: 'no-segment',
    default: true,
    leafKey: 'leaf.segment.enable',
    describedDefault: 'segment mode on',
    help: 'switch segment mode off',
  }),
  boolean({
    name: 'snowflake',
    flag: 'no-snowflake',
    default: true,
    leafKey: 'leaf.snowflake.enable',
    describedDefault: 'snowflake mode on',
    help: 'switch snowflake mode off',
  }),
  EPOCH,
  boolean({
    name: 'randomSequence',
    flag: 'no-random-sequence',
    default: DEFAULT_SNOWFLAKE_OPTIONS.randomSequence,
    describedDefault: 'random start on',
    help: "start each millisecond's sequence at 0 instead of a random 0–99",
  }),
  integer({
    name: 'segmentWaitMs',
    flag: 'segment-wait-ms',
    default: DEFAULT_SEGMENT_ALLOCATOR_OPTIONS.segmentWaitMs,
    min: 1,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'how long a request waits for a segment when both buffers are empty',
  }),
  integer({
    name: 'tagRefreshMs',
    flag: 'tag-refresh-ms',
    default: DEFAULT_SEGMENT_ALLOCATOR_OPTIONS.tagRefreshMs,
    // Below 100 ms the tag list would be read more often than a busy node loads segments.
    min: 100,
    max: 24 * HOUR,
    unit: 'ms',
    help: 'how often the tag list is re-read',
  }),
  integer({
    name: 'metricsTags',
    flag: 'metrics-tags',
    default: DEFAULT_METRICS_TAGS,
    // 0 puts every tag under tag="(other)"; 10,000 series per metric is already more than one scrape should carry.
    min: 0,
    max: 10_000,
    unit: 'tags',
    help: 'how many of the busiest tags get their own tag label in /metrics; the rest are added up as tag="(other)"',
  }),
  integer({
    name: 'maxStep',
    flag: 'max-step',
    default: LEAF_STEP_RULES.maxStep,
    min: 1,
    max: MAX_TABLE_STEP,
    help: 'upper bound of the dynamic step',
  }),
  integer({
    name: 'fenceSkip',
    flag: 'fence-skip',
    default: DEFAULT_FENCE_SKIP,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    help: 'IDs a fence adds to every tag when the database may have lost grants (a failover, a restore); see [docs/databases.md](docs/databases.md#failover-restore-and-split-brain)',
  }),
  integer({
    name: 'clockToleranceMs',
    flag: 'clock-tolerance-ms',
    default: DEFAULT_SNOWFLAKE_OPTIONS.clockToleranceMs,
    min: 0,
    // A request may wait twice this (as Leaf); past 1 s a caller is better served by an error.
    max: 1_000,
    unit: 'ms',
    help: 'a clock step back up to this is waited out while running',
  }),
  integer({
    name: 'clockStartupWaitMs',
    flag: 'clock-startup-wait-ms',
    default: DEFAULT_SNOWFLAKE_OPTIONS.clockStartupWaitMs,
    min: 0,
    max: HOUR,
    unit: 'ms',
    help: 'at start, a clock behind the recorded timestamp by up to this is waited for; more refuses to start',
  }),
  integer({
    name: 'shutdownTimeoutMs',
    flag: 'shutdown-timeout-ms',
    default: 10_000,
    min: 0,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'on SIGTERM, how long requests in flight may take before connections are cut',
  }),
  oneOf({
    name: 'logLevel',
    flag: 'log-level',
    values: LOG_LEVELS,
    default: 'info',
    placeholder: 'LEVEL',
    help: 'the least severe log events written',
  }),
  integer({
    name: 'workers',
    flag: 'workers',
    default: 1,
    min: 1,
    max: MAX_WORKERS,
    help: 'run N processes on one port (node:cluster), each a full node with its own worker ID and its files in `<data-dir>/worker-<i>`: IDs stay unique, but increase per process, not per URL (see Running in production)',
  }),
  list({
    name: 'tokens',
    flag: 'token',
    describedDefault: 'none: ID endpoints open',
    placeholder: 'T',
    secret: true,
    help: 'a token that may ask for IDs; repeat the flag for several (a value is never split; `FROND_TOKEN` is a comma list); an empty or blank one stops the start',
  }),
  list({
    name: 'opaqueTags',
    flag: 'opaque-tag',
    describedDefault: 'none',
    placeholder: 'TAG=DOMAIN',
    help: 'a tag that serves opaque IDs (`order=digits:11`, `user=bits:53`): created opaque at start if missing, checked if present (a plain tag or another domain stops the start); repeat the flag for several; needs FROND_OPAQUE_SECRET(_FILE)',
  }),
  string({
    name: 'adminToken',
    flag: 'admin-token',
    default: undefined,
    describedDefault: 'none: admin API on loopback only',
    placeholder: 'T',
    secret: true,
    help: 'the token of the admin API',
  }),
  integer({
    name: 'rateLimit',
    flag: 'rate-limit',
    default: 0,
    min: 0,
    max: 10_000_000,
    unit: 'requests/s',
    describedDefault: '`0` (off)',
    help: 'requests per second per client address; more answer 429',
  }),
  integer({
    name: 'maxConnections',
    flag: 'max-connections',
    default: undefined,
    min: 1,
    max: 1_000_000,
    describedDefault: `the file-descriptor limit (\`ulimit -n\`, read at start) less ${RESERVED_DESCRIPTORS}`,
    help: 'connections held at once per process; more are closed as they arrive, so the node never runs out of file descriptors',
  }),
  integer({
    name: 'requestTimeoutMs',
    flag: 'request-timeout-ms',
    default: 30_000,
    min: 100,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'a request (headers and body) that takes longer to arrive is answered 408 and its connection closed',
  }),
  string({
    name: 'tlsCert',
    flag: 'tls-cert',
    default: undefined,
    describedDefault: 'plain HTTP',
    placeholder: 'PEM',
    help: 'PEM certificate: with `--tls-key` the node speaks HTTPS',
  }),
  string({
    name: 'tlsKey',
    flag: 'tls-key',
    default: undefined,
    describedDefault: 'plain HTTP',
    placeholder: 'PEM',
    help: 'PEM key of `--tls-cert`',
  }),
  string({
    name: 'config',
    flag: 'config',
    default: undefined,
    configKey: false,
    placeholder: 'frond.json',
    help: "a JSON file of settings, keyed by the flags' names",
  }),
  string({
    name: 'leafConfig',
    flag: 'leaf-config',
    default: undefined,
    configKey: false,
    placeholder: 'leaf.properties',
    help: "Leaf's `leaf.properties`, for the settings that have a Leaf key",
  }),
] as const;

/** The settings of `frond serve`, by their one name. */
export type ServeSettings = SettingsOf<typeof SERVE_OPTIONS>;

/** A command's arguments and options, for its parser and its `--help`. */
export interface CommandSpec<O extends readonly OptionEntry[] = readonly OptionEntry[]> {
  /** `serve`, `tag add`. */
  readonly name: string;
  /** Names of positional arguments; a trailing `?` marks one as optional. */
  readonly positionals: readonly string[];
  readonly options: O;
  readonly summary: string;
}

/** Keeps the entries' names in the type, so the command's settings are typed. */
function command<const O extends readonly OptionEntry[]>(spec: CommandSpec<O>): CommandSpec<O> {
  return spec;
}

export const TAG_ADD = command({
  name: 'tag add',
  positionals: ['tag'],
  summary: 'adds a tag to leaf_alloc',
  options: [
    ...STORE_OPTIONS,
    integer({
      name: 'step',
      flag: 'step',
      default: DEFAULT_TAG_STEP,
      min: 1,
      max: MAX_TABLE_STEP,
      env: false,
      help: 'IDs per segment load',
    }),
    // A string: the first ID may be any signed 64-bit integer, beyond what a number holds exactly.
    string({
      name: 'start',
      flag: 'start',
      default: '1',
      maxLength: 20,
      env: false,
      placeholder: 'N',
      help: 'the first ID: an integer from -2^63 to 2^63 - 1 - step',
    }),
    string({
      name: 'description',
      flag: 'description',
      default: undefined,
      maxLength: 256,
      env: false,
      placeholder: 'TEXT',
      help: "Leaf's description column",
    }),
    string({
      name: 'opaque',
      flag: 'opaque',
      default: undefined,
      maxLength: 16,
      env: false,
      placeholder: 'DOMAIN',
      help: 'serve opaque IDs: bits:20..63 or digits:6..18, fixed for good (needs FROND_OPAQUE_SECRET or FROND_OPAQUE_SECRET_FILE)',
    }),
  ],
});

export const TAG_LIST = command({
  name: 'tag list',
  positionals: [],
  summary: 'lists the tags',
  options: [
    ...STORE_OPTIONS,
    boolean({ name: 'json', flag: 'json', default: false, env: false, help: 'one JSON array' }),
  ],
});

export const TAG_SET_STEP = command({
  name: 'tag set-step',
  positionals: ['tag', 'step'],
  summary: "changes a tag's step; running nodes use it from their next segment load",
  options: STORE_OPTIONS,
});

export const DB_INIT = command({
  name: 'db init',
  positionals: [],
  summary: 'creates leaf_alloc if it is missing (an existing table is left as it is)',
  options: [
    ...STORE_OPTIONS,
    boolean({
      name: 'print',
      flag: 'print',
      default: false,
      env: false,
      help: "print the table's DDL instead (no connection)",
    }),
  ],
});

export const DECODE = command({
  name: 'decode',
  positionals: ['id'],
  summary:
    'shows the time, worker ID and sequence of a snowflake ID, or with --tag the segment ID behind an opaque ID',
  options: [
    EPOCH,
    ...STORE_OPTIONS,
    string({
      name: 'tag',
      flag: 'tag',
      default: undefined,
      maxLength: 128,
      env: false,
      placeholder: 'TAG',
      help: "the opaque tag the ID is from (reads the tag's domain from the store; needs the opaque-ID secret)",
    }),
  ],
});

export const SERVE = command({
  name: 'serve',
  positionals: [],
  summary: 'runs a node: the HTTP API in segment and snowflake mode',
  options: SERVE_OPTIONS,
});

/** Every command, in the order of `frond help`. */
export const DB_FENCE = command({
  name: 'db fence',
  positionals: [],
  summary:
    "raises every tag's max_id by the fence's skip and starts a new fence epoch: run it after restoring a whole database from a backup",
  options: [
    ...STORE_OPTIONS,
    integer({
      name: 'fenceSkip',
      flag: 'fence-skip',
      default: DEFAULT_FENCE_SKIP,
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
      env: false,
      help: 'IDs added to every tag',
    }),
  ],
});

export const COMMANDS: readonly CommandSpec[] = [
  SERVE,
  TAG_ADD,
  TAG_LIST,
  TAG_SET_STEP,
  DB_INIT,
  DB_FENCE,
  DECODE,
];
