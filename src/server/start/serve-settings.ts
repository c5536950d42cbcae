import { LOG_FORMATS, LOG_LEVELS } from '../../core/logger.js';
import { boolean, integer, list, type OptionEntry, oneOf, string } from '../../core/option-entry.js';
import { DEFAULT_SEGMENT_ALLOCATOR_OPTIONS } from '../../core/segment-allocator.js';
import { LEAF_STEP_RULES } from '../../core/segment-step.js';
import {
  type LayoutNames,
  layoutOf,
  MAX_ANY_WORKER_ID,
  MAX_TIME_UNIT_MS,
  type SnowflakeLayout,
} from '../../core/snowflake-layout.js';
import { DEFAULT_SNOWFLAKE_OPTIONS } from '../../core/snowflake-service.js';
import { MAX_TABLE_STEP } from '../../core/tag.js';
import { DEFAULT_FENCE_SKIP } from '../../stores/segment-primitive.js';
import { STORE_BACKENDS } from '../../stores/store-registry.js';
import { COORDINATOR_OPTIONS } from '../../worker-ids/worker-id-registry.js';
import { RESERVED_DESCRIPTORS } from '../http/http-server.js';
import { DEFAULT_FORMAT_RETENTION_DAYS } from '../opaque/format-retention.js';
import { DEFAULT_METRICS_TAGS } from '../ops/tag-labels.js';

const MINUTE = 60_000;
/** A stop's hand-back bound: one transaction a tag, four at a time, takes well under 1 s on a healthy database. */
export const DEFAULT_HAND_BACK_TIMEOUT_MS = 5_000;
const HOUR = 60 * MINUTE;

/**
 * The parts of the server a setting is handed to, each typed from its entries in `serve-config.ts`:
 * `start` how the node is put together (`startServer`, `frond serve`), `listen` HTTP and its
 * shutdown, `access` who may ask and how often, `segment` and `snowflake` the two modes, `ops`
 * what operators read, `resp` the Redis protocol's port (`--resp-port`).
 */
export type ServeSlice = 'start' | 'listen' | 'access' | 'segment' | 'snowflake' | 'ops' | 'resp';

/** `--workers` stops here: far above the cores of one machine, far below the 1024 worker IDs. */
export const MAX_WORKERS = 64;

/** The forms of a `--store` value, as the store registry lists them: `` `sqlite:PATH`, … or `mysql://…` ``. */
function storeForms(): string {
  const forms = STORE_BACKENDS.map((backend) => `\`${backend.usage}\``);
  return forms.length < 2 ? forms.join('') : `${forms.slice(0, -1).join(', ')} or ${forms.at(-1)}`;
}

/** Where `leaf_alloc` lives; every command that reaches the store takes these two. */
export const STORE_OPTIONS = [
  string({
    name: 'dataDir',
    slice: 'start',
    flag: 'data-dir',
    default: './data',
    placeholder: 'PATH',
    help: "the node's own files: SQLite database (by default), worker ID and recorded timestamp, pid file",
  }),
  string({
    name: 'store',
    slice: 'segment',
    flag: 'store',
    default: undefined,
    describedDefault: '`sqlite:<data-dir>/frond.db`',
    leafKey: 'leaf.jdbc.url',
    placeholder: 'URL',
    secret: true,
    help: `where \`leaf_alloc\` lives: ${storeForms()}; see [docs/databases.md](docs/databases.md)`,
  }),
] as const;

/**
 * `--worker-id`; with a coordinator's setting, where snowflake mode takes its worker ID from. Its
 * bound here is the widest layout's; `serve-config.ts` checks it against the layout's worker bits.
 */
export const WORKER_ID = integer({
  name: 'workerId',
  slice: 'snowflake',
  flag: 'worker-id',
  default: undefined,
  min: 0,
  max: MAX_ANY_WORKER_ID,
  describedDefault: 'kept in the data dir (random on first start)',
  help: "snowflake worker ID, up to 2^worker bits − 1 (1023 in Leaf's layout)",
});

/** A StatefulSet pod's ordinal as the worker ID, with no coordinator (`serve-config.ts` reads the hostname). */
export const WORKER_ID_ORDINAL = boolean({
  name: 'workerIdOrdinal',
  slice: 'snowflake',
  flag: 'worker-id-ordinal',
  default: false,
  help: "the worker ID is the number ending the hostname (`HOSTNAME`, else the system's): StatefulSet pod `frond-3` is 3, plus `--worker-id-offset`; see [docs/worker-ids.md](docs/worker-ids.md#statefulset-ordinals)",
});

export const WORKER_ID_OFFSET = integer({
  name: 'workerIdOffset',
  slice: 'snowflake',
  flag: 'worker-id-offset',
  default: 0,
  min: 0,
  max: MAX_ANY_WORKER_ID,
  help: 'added to the ordinal of `--worker-id-ordinal` (a second StatefulSet sharing the worker IDs starts above the first)',
});

/** Shared by `serve` and `decode`: the IDs of a node decode with the epoch it was started with. */
export const EPOCH = integer({
  name: 'epoch',
  slice: 'snowflake',
  flag: 'epoch',
  default: DEFAULT_SNOWFLAKE_OPTIONS.layout.epoch,
  min: 0,
  max: 'now',
  unit: 'ms',
  placeholder: 'MS',
  help: "snowflake epoch in ms since 1970 (Leaf's); also used to decode",
});

/** Shared by `serve` and `decode`, as the epoch: with `TIME_UNIT_MS` and `EPOCH`, the layout. */
export const SNOWFLAKE_LAYOUT = string({
  name: 'snowflakeLayout',
  slice: 'snowflake',
  flag: 'snowflake-layout',
  default: DEFAULT_SNOWFLAKE_OPTIONS.layout.bits,
  placeholder: 'T+W+S',
  help: "snowflake bits of time, worker ID and sequence, summing to 63 (Leaf's `41+10+12`; Sonyflake-like `39+16+8`); also used to decode; see [docs/snowflake-layouts.md](docs/snowflake-layouts.md)",
});

export const TIME_UNIT_MS = integer({
  name: 'timeUnitMs',
  slice: 'snowflake',
  flag: 'time-unit-ms',
  default: DEFAULT_SNOWFLAKE_OPTIONS.layout.timeUnitMs,
  min: 1,
  max: MAX_TIME_UNIT_MS,
  unit: 'ms',
  help: "what one step of the snowflake time bits is (Leaf's 1 ms; 10 as Sonyflake; 1000 for seconds); also used to decode",
});

/** The layout's settings, in the order `serve` and `decode` list them. */
export const LAYOUT_OPTIONS = [EPOCH, SNOWFLAKE_LAYOUT, TIME_UNIT_MS] as const;

/** What a refused layout's message calls its parts: their flags. */
export const LAYOUT_FLAGS: LayoutNames = {
  bits: `--${SNOWFLAKE_LAYOUT.flag}`,
  unit: `--${TIME_UNIT_MS.flag}`,
  epoch: `--${EPOCH.flag}`,
};

/** The layout of parsed settings (`serve`'s or `decode`'s), refused in one line if it cannot work. */
export function layoutSetting(settings: {
  snowflakeLayout: string;
  timeUnitMs: number;
  epoch: number;
}): SnowflakeLayout {
  return layoutOf(settings.snowflakeLayout, settings.timeUnitMs, settings.epoch, LAYOUT_FLAGS);
}

/**
 * Every setting the server reads, in the order of `frond serve --help` and docs/configuration.md's table; the CLI adds
 * only where settings come from (`--config`, `--leaf-config`). Each entry names its slice, the
 * part of the server it is handed to (`serve-config.ts` types the slices from here); the
 * coordinator's settings have none: they are checked together into `SnowflakeConfig.coordinator`.
 * Defaults of the core's settings are the core's own (`DEFAULT_SNOWFLAKE_OPTIONS`, …), so the core
 * stays the source.
 */
export const SERVE_SETTINGS = [
  string({
    name: 'host',
    slice: 'listen',
    flag: 'host',
    default: '127.0.0.1',
    describedDefault: '`127.0.0.1`; with `--leaf-config`, `::` as Leaf (logged)',
    leafKey: 'server.address',
    springKey: 'server.address',
    placeholder: 'HOST',
    help: "address to listen on (`::` for every interface, IPv6 and IPv4; `0.0.0.0` for IPv4's); with `--leaf-config`, Spring's `--server.address=HOST` and `SERVER_ADDRESS` too",
  }),
  integer({
    name: 'port',
    slice: 'listen',
    flag: 'port',
    default: 8080,
    min: 0,
    max: 65_535,
    leafKey: 'server.port',
    springKey: 'server.port',
    short: 'p',
    // The platforms' convention (Heroku, Cloud Run, Render…): they say the port in PORT.
    platformEnv: 'PORT',
    help: "HTTP port, as Leaf (`0`: any free port, printed in the `listening` log line); with `--leaf-config`, Spring's `--server.port=N` and `SERVER_PORT` too; `PORT` after those",
  }),
  integer({
    name: 'grpcPort',
    slice: 'listen',
    flag: 'grpc-port',
    default: 0,
    min: 0,
    max: 65_535,
    describedDefault: '`0` (off)',
    help: 'also serve gRPC (`frond.v1.Ids` and `grpc.health.v1.Health`, TLS with `--tls-cert`) on this port, on `--host`; not with `--workers` above 1; see [docs/grpc.md](docs/grpc.md)',
  }),
  integer({
    name: 'grpcMaxConnections',
    slice: 'listen',
    flag: 'grpc-max-connections',
    default: undefined,
    min: 1,
    max: 1_000_000,
    describedDefault:
      'a quarter of the file-descriptor budget (`ulimit -n` less 128), at most 10,000; `--max-connections` by default gets what gRPC and RESP leave',
    help: 'gRPC connections held at once (apart from `--max-connections`, which counts HTTP ones); more are closed as they arrive',
  }),
  ...STORE_OPTIONS,
  WORKER_ID,
  WORKER_ID_ORDINAL,
  WORKER_ID_OFFSET,
  ...COORDINATOR_OPTIONS,
  boolean({
    name: 'segment',
    slice: 'start',
    flag: 'no-segment',
    default: true,
    leafKey: 'leaf.segment.enable',
    describedDefault: 'segment mode on',
    help: 'switch segment mode off',
  }),
  boolean({
    name: 'snowflake',
    slice: 'start',
    flag: 'no-snowflake',
    default: true,
    leafKey: 'leaf.snowflake.enable',
    describedDefault: 'snowflake mode on',
    help: 'switch snowflake mode off',
  }),
  ...LAYOUT_OPTIONS,
  boolean({
    name: 'randomSequence',
    slice: 'snowflake',
    flag: 'no-random-sequence',
    default: DEFAULT_SNOWFLAKE_OPTIONS.randomSequence,
    describedDefault: 'random start on',
    help: "start each millisecond's (time unit's) sequence at 0 instead of a random 0–99",
  }),
  integer({
    name: 'segmentWaitMs',
    slice: 'segment',
    flag: 'segment-wait-ms',
    default: DEFAULT_SEGMENT_ALLOCATOR_OPTIONS.segmentWaitMs,
    min: 1,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'how long a request waits for a segment when both buffers are empty',
  }),
  integer({
    name: 'tagRefreshMs',
    slice: 'segment',
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
    slice: 'ops',
    flag: 'metrics-tags',
    default: DEFAULT_METRICS_TAGS,
    // 0 puts every tag under tag="(other)"; 10,000 series per metric is already more than one scrape should carry.
    min: 0,
    max: 10_000,
    unit: 'tags',
    help: 'how many of the busiest tags get their own tag label in /metrics; the rest are added up as tag="(other)"',
  }),
  integer({
    name: 'formatRetentionDays',
    slice: 'segment',
    flag: 'format-retention-days',
    default: DEFAULT_FORMAT_RETENTION_DAYS,
    min: 1,
    // A century: a counter row a period costs a few bytes, and numbers never need it back.
    max: 36_500,
    unit: 'days',
    help: "how long a formatted tag's counter row (one per period) is kept after its period ended; every node removes older ones every 10 min, frond_high_water keeps what they served ([docs/formats.md](docs/formats.md#serving))",
  }),
  integer({
    name: 'maxStep',
    slice: 'segment',
    flag: 'max-step',
    default: LEAF_STEP_RULES.maxStep,
    min: 1,
    max: MAX_TABLE_STEP,
    help: 'upper bound of the dynamic step',
  }),
  integer({
    name: 'fenceSkip',
    slice: 'segment',
    flag: 'fence-skip',
    default: DEFAULT_FENCE_SKIP,
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    help: 'IDs a fence adds to every tag when the database may have lost grants (a failover, a restore); see [docs/databases.md](docs/databases.md#failover-restore-and-split-brain)',
  }),
  integer({
    name: 'clockToleranceMs',
    slice: 'snowflake',
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
    slice: 'snowflake',
    flag: 'clock-startup-wait-ms',
    default: DEFAULT_SNOWFLAKE_OPTIONS.clockStartupWaitMs,
    min: 0,
    max: HOUR,
    unit: 'ms',
    help: 'at start, a clock behind the recorded timestamp by up to this is waited for; more refuses to start',
  }),
  integer({
    name: 'shutdownTimeoutMs',
    slice: 'listen',
    flag: 'shutdown-timeout-ms',
    default: 10_000,
    min: 0,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'on SIGTERM, how long requests in flight may take before connections are cut',
  }),
  integer({
    name: 'handBackTimeoutMs',
    slice: 'segment',
    flag: 'hand-back-timeout-ms',
    default: DEFAULT_HAND_BACK_TIMEOUT_MS,
    min: 0,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'on SIGTERM, after requests in flight finished, how long the node may take to hand the unused IDs of its segments back to the table (what it cannot is recorded as gaps, or reported as a crash at its next start); `0` hands nothing back',
  }),
  list({
    name: 'denseTags',
    slice: 'segment',
    flag: 'dense-tag',
    describedDefault: 'none',
    placeholder: 'TAG',
    help: "a tag numbered densely: no look-ahead (a request waits for the database once per segment) and the table's step on every load, so a crash loses at most one step; repeat the flag for several; a tag not in the table is warned of at start",
  }),
  oneOf({
    name: 'logLevel',
    slice: 'start',
    flag: 'log-level',
    values: LOG_LEVELS,
    default: 'info',
    placeholder: 'LEVEL',
    help: 'the least severe log events written',
  }),
  oneOf({
    name: 'logFormat',
    slice: 'start',
    flag: 'log-format',
    values: LOG_FORMATS,
    default: 'auto',
    placeholder: 'FORMAT',
    help: '`json`: one JSON object a line; `pretty`: one plain line an event (`22:14:15 info  listening url=…`); `auto`: pretty when standard output is a terminal, else JSON',
  }),
  integer({
    name: 'workers',
    slice: 'start',
    flag: 'workers',
    default: 1,
    min: 1,
    max: MAX_WORKERS,
    help: 'run N processes on one port (node:cluster), each a full node with its own worker ID and its files in `<data-dir>/worker-<i>`: IDs stay unique, but increase per process, not per URL (see docs/operations.md)',
  }),
  list({
    name: 'tokens',
    slice: 'access',
    flag: 'token',
    describedDefault: 'none: ID endpoints open',
    placeholder: 'T',
    secret: true,
    help: 'a token that may ask for IDs; repeat the flag for several (a value is never split; `FROND_TOKEN` is a comma list); an empty or blank one stops the start',
  }),
  list({
    name: 'opaqueTags',
    slice: 'segment',
    flag: 'opaque-tag',
    describedDefault: 'none',
    placeholder: 'TAG=DOMAIN',
    help: 'a tag that serves opaque IDs (`order=digits:11`, `user=bits:53`): created opaque at start if missing, checked if present (a plain tag or another domain stops the start); repeat the flag for several; needs FROND_OPAQUE_SECRET(_FILE)',
  }),
  list({
    name: 'formatTags',
    slice: 'segment',
    flag: 'format-tag',
    describedDefault: 'none',
    placeholder: 'TAG=FORMAT[@ZONE]',
    help: 'a formatted tag (`order-no={yyyy}{MM}{dd}{seq:6}@Asia/Shanghai`, UTC without `@ZONE`): created at start if missing, checked if present (another kind or format stops the start); repeat the flag for several; see [docs/formats.md](docs/formats.md#serving)',
  }),
  string({
    name: 'adminToken',
    slice: 'access',
    flag: 'admin-token',
    default: undefined,
    describedDefault: 'none: admin API on loopback only',
    placeholder: 'T',
    secret: true,
    help: 'the token of the admin API',
  }),
  integer({
    name: 'rateLimit',
    slice: 'access',
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
    slice: 'listen',
    flag: 'max-connections',
    default: undefined,
    min: 1,
    max: 1_000_000,
    describedDefault: `the file-descriptor limit (\`ulimit -n\`, read at start) less ${RESERVED_DESCRIPTORS}`,
    help: 'connections held at once per process; more are closed as they arrive, so the node never runs out of file descriptors',
  }),
  integer({
    name: 'requestTimeoutMs',
    slice: 'listen',
    flag: 'request-timeout-ms',
    default: 30_000,
    min: 100,
    max: 10 * MINUTE,
    unit: 'ms',
    help: 'a request (headers and body) that takes longer to arrive is answered 408 and its connection closed',
  }),
  integer({
    name: 'respPort',
    slice: 'resp',
    flag: 'resp-port',
    default: 0,
    min: 0,
    max: 65_535,
    describedDefault: '`0` (off)',
    help: 'also serve the Redis protocol (RESP2/RESP3) on this port, on `--host`: `INCR tag`, `GET tag`, `SNOWFLAKE`…, with TLS and `--token` as HTTP; not with `--workers` above 1; see [docs/resp.md](docs/resp.md)',
  }),
  integer({
    name: 'respMaxConnections',
    slice: 'resp',
    flag: 'resp-max-connections',
    default: undefined,
    min: 1,
    max: 1_000_000,
    describedDefault:
      'a quarter of the file-descriptor budget (`ulimit -n` less 128), at most 10,000; `--max-connections` by default gets what gRPC and RESP leave',
    help: 'RESP connections held at once; more are closed as they arrive',
  }),
  integer({
    name: 'respIdleTimeoutMs',
    slice: 'resp',
    flag: 'resp-idle-timeout-ms',
    default: 300_000,
    min: 0,
    max: 24 * HOUR,
    unit: 'ms',
    describedDefault: '`300000` (5 minutes)',
    help: "a RESP connection that sends nothing for this long is closed (`0`: never), as Redis' `timeout`",
  }),
  string({
    name: 'tlsCert',
    slice: 'listen',
    flag: 'tls-cert',
    default: undefined,
    describedDefault: 'plain HTTP',
    placeholder: 'PEM',
    help: 'PEM certificate: with `--tls-key` the node speaks HTTPS',
  }),
  string({
    name: 'tlsKey',
    slice: 'listen',
    flag: 'tls-key',
    default: undefined,
    describedDefault: 'plain HTTP',
    placeholder: 'PEM',
    help: 'PEM key of `--tls-cert`',
  }),
] as const satisfies readonly OptionEntry<string, unknown, ServeSlice | undefined>[];
