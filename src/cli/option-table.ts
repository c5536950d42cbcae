import { boolean, integer, type OptionEntry, type SettingsOf, string } from '../core/option-entry.js';
import { MAX_TABLE_STEP } from '../core/tag.js';
import { DEFAULT_TAG_STEP } from '../core/tag-catalogue.js';
import { DEFAULT_GAPS_LIMIT, MAX_GAPS_LIMIT } from '../server/ops/gap-routes.js';
import { LAYOUT_OPTIONS, SERVE_SETTINGS, STORE_OPTIONS } from '../server/start/serve-settings.js';
import { DEFAULT_FENCE_SKIP } from '../stores/segment-primitive.js';

/**
 * Every setting of `frond serve`: the server's (`SERVE_SETTINGS`, each with the slice of the server
 * it is handed to), then the files they may come from, which only the CLI reads.
 */
export const SERVE_OPTIONS = [
  ...SERVE_SETTINGS,
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
    // Longer than a format may be (100): parseFormat's one line says what is wrong, not the parser.
    string({
      name: 'format',
      flag: 'format',
      default: undefined,
      maxLength: 255,
      env: false,
      placeholder: 'FORMAT',
      help: 'serve numbers such as ORD-20261201-000123: text with {yyyy} {yy} {MM} {dd} {HH} and one {seq:N} or {seq}, numbered from 1 each period, fixed for good (docs/formats.md)',
    }),
    string({
      name: 'timeZone',
      flag: 'time-zone',
      default: undefined,
      maxLength: 100,
      env: false,
      placeholder: 'ZONE',
      help: "the IANA time zone of --format's dates (Europe/Berlin), UTC by default",
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

export const TAG_GAPS = command({
  name: 'tag gaps',
  positionals: ['tag'],
  summary:
    "lists a tag's gaps: the ranges of IDs given up for good (a crash, a stop that could not hand them back, a client's unused range, a fence), by start",
  options: [
    ...STORE_OPTIONS,
    string({
      name: 'after',
      flag: 'after',
      default: undefined,
      env: false,
      placeholder: 'ID',
      help: 'only gaps starting above this ID (the `next` a page printed)',
    }),
    integer({
      name: 'limit',
      flag: 'limit',
      default: DEFAULT_GAPS_LIMIT,
      min: 1,
      max: MAX_GAPS_LIMIT,
      env: false,
      help: 'at most this many gaps (more when the last start has several)',
    }),
    boolean({ name: 'json', flag: 'json', default: false, env: false, help: 'one JSON object' }),
  ],
});

export const TAG_SET_STEP = command({
  name: 'tag set-step',
  positionals: ['tag', 'step'],
  summary:
    "changes a tag's step: the length of a node's first two segments, and the floor of its dynamic step from its next load",
  options: STORE_OPTIONS,
});

export const TAG_REMOVE = command({
  name: 'tag remove',
  positionals: ['tag'],
  summary:
    "removes a tag's row; the name keeps its high-water, so a tag added again under it starts above what it served",
  options: [
    ...STORE_OPTIONS,
    boolean({
      name: 'yes',
      flag: 'yes',
      default: false,
      env: false,
      help: 'remove without asking (needed where stdin is not a terminal)',
    }),
  ],
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
      help: "print the tables' DDL instead (no connection)",
    }),
    string({
      name: 'grantTo',
      flag: 'grant-to',
      default: undefined,
      maxLength: 340,
      env: false,
      placeholder: 'USER',
      help: 'with --print: the GRANTs that give the account USER (MySQL: USER or USER@HOST) what frond needs',
    }),
  ],
});

export const DECODE = command({
  name: 'decode',
  positionals: ['id'],
  summary:
    'shows the time, worker ID and sequence of a snowflake ID, or with --tag the segment ID behind an opaque ID',
  options: [
    ...LAYOUT_OPTIONS,
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
    boolean({
      name: 'yes',
      flag: 'yes',
      default: false,
      env: false,
      help: 'fence without asking: it cannot be undone (without it, a terminal is asked and anything else refused)',
    }),
  ],
});

export const DB_CHECK = command({
  name: 'db check',
  positionals: [],
  summary:
    'lists the tags the next fences would put at risk (a 32-bit ID column passed, a step above the skip, an opaque domain used up); changes nothing, exit 1 if it lists any',
  options: [
    ...STORE_OPTIONS,
    integer({
      name: 'fenceSkip',
      flag: 'fence-skip',
      default: DEFAULT_FENCE_SKIP,
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
      env: false,
      help: "the nodes' --fence-skip: IDs a fence adds to every tag",
    }),
  ],
});

export const COMMANDS: readonly CommandSpec[] = [
  SERVE,
  TAG_ADD,
  TAG_LIST,
  TAG_GAPS,
  TAG_SET_STEP,
  TAG_REMOVE,
  DB_INIT,
  DB_FENCE,
  DB_CHECK,
  DECODE,
];
