/** What a setting holds; `list` is a repeatable flag, a comma list in the environment, a JSON list in a file. */
export type OptionType = 'string' | 'integer' | 'boolean' | 'list' | 'enum';

/**
 * One setting, everything about it in one place: plain data, so the layer that reads a setting can
 * declare it (a worker-ID backend its `--zk`, the server its `--segment-wait-ms`) and the CLI only
 * collects the entries. `name` is the one name of the value at every layer: the field of the
 * parsed settings, of `ServeConfig`, of the core's options and of `CoordinatorFlags`. `V` only
 * carries the value's type, for `SettingsOf`; `S` is the slice the entry belongs to, for `SliceOf`.
 */
export interface OptionEntry<
  N extends string = string,
  V = unknown,
  S extends string | undefined = string | undefined,
> {
  readonly name: N;
  /**
   * The part of the program the value is handed to (`listen`, `segment`): `SliceOf` types that
   * part's settings from the entries of its slice. Undefined: read where it is parsed.
   */
  readonly slice: S;
  /** The flag without `--`. A boolean that is on by default has a `no-…` flag (`negated`) that turns it off. */
  readonly flag: string;
  /** A one-letter flag as well (`-p` for `--port`), without `-`; `-h` and `-v` are help and version. */
  readonly short: string | undefined;
  /** The flag sets the value to false: `--no-segment` is `segment: false`, and so are its variable and key. */
  readonly negated: boolean;
  /** `FROND_` and the flag in capitals, or null: the setting has no environment variable. */
  readonly env: string | null;
  /**
   * A variable a hosting platform sets for the process (`PORT`), read after `env` and before the
   * files: an explicit `FROND_PORT` wins over it, the platform's value over a config file.
   */
  readonly platformEnv: string | undefined;
  /**
   * A secret's `*_FILE` variable (`FROND_STORE_FILE`): the value is read from the file it names, so
   * it is in neither the process list nor the environment. Read after `env`; setting both is an error.
   */
  readonly fileEnv: string | undefined;
  /** The key in `--config FILE` (the flag's name), or null: not settable from the file. */
  readonly configKey: string | null;
  /** The key in Leaf's `leaf.properties`, where Leaf has one. */
  readonly leafKey: string | undefined;
  /**
   * Spring Boot's property for the setting (`server.port`), read with `--leaf-config` the ways
   * Leaf is deployed: `--server.port=N` among the flags and `SERVER_PORT` (`springEnv`) after `env`.
   */
  readonly springKey: string | undefined;
  /** Spring Boot's relaxed name of `springKey` in the environment: `SERVER_PORT`. */
  readonly springEnv: string | undefined;
  readonly type: OptionType;
  /** The value when nothing sets it; undefined: no value (`describedDefault` says what happens then). */
  readonly default: V | undefined;
  /** The default in words, for help and docs/configuration.md, when it is not a plain value. */
  readonly describedDefault: string | undefined;
  readonly min: number | undefined;
  /** `'now'`: the current time in ms since 1970 (an epoch cannot lie in the future). */
  readonly max: number | 'now' | undefined;
  /** The longest a string may be, in characters. */
  readonly maxLength: number | undefined;
  /** The values an `enum` takes. */
  readonly values: readonly string[] | undefined;
  readonly unit: string | undefined;
  /** The value in a usage line: `--port N`. */
  readonly placeholder: string;
  /** One line for `--help` and docs/configuration.md. */
  readonly help: string;
  /** Never set: carries the value's type. */
  readonly valueType?: V;
}

/** The values of a table, by name, typed from its entries. */
export type SettingsOf<T extends readonly OptionEntry[]> = {
  [E in T[number] as E['name']]: E extends OptionEntry<string, infer V> ? V : never;
};

/** The values of the entries of one slice of a table, by name: what the part of the program named `S` reads. */
export type SliceOf<T extends readonly OptionEntry[], S extends string> = SettingsOf<
  readonly Extract<T[number], { readonly slice: S }>[]
>;

/** The values of one slice, taken from all the values of a table. */
export function sliceOf<const T extends readonly OptionEntry[], S extends string>(
  table: T,
  slice: S,
  settings: SettingsOf<T>,
): SliceOf<T, S> {
  const all = settings as Record<string, unknown>;
  const picked = table.filter((entry) => entry.slice === slice).map((entry) => [entry.name, all[entry.name]]);
  return Object.fromEntries(picked) as SliceOf<T, S>;
}

/** `--data-dir` is `FROND_DATA_DIR`. */
export function envName(flag: string): string {
  return `FROND_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/** The fields an entry may leave out; they follow from its flag. */
interface Common<N extends string, S extends string | undefined> {
  name: N;
  flag: string;
  /** See `OptionEntry.short`. */
  short?: string;
  /** See `OptionEntry.slice`. */
  slice?: S;
  help: string;
  /** false: no environment variable (options of one command, like `tag add --step`). */
  env?: false;
  /** See `OptionEntry.platformEnv`. */
  platformEnv?: string;
  /** A secret (a password in a URL, a token): it also has a `*_FILE` variable (`fileEnv`). */
  secret?: true;
  /** false: not a key of `--config FILE`. */
  configKey?: false;
  leafKey?: string;
  /** See `OptionEntry.springKey`. */
  springKey?: string;
  describedDefault?: string;
  unit?: string;
  placeholder?: string;
}

function entry<N extends string, V, S extends string | undefined>(
  spec: Common<N, S>,
  type: OptionType,
  rest: Partial<OptionEntry<N, V, S>>,
): OptionEntry<N, V, S> {
  return {
    name: spec.name,
    slice: spec.slice as S,
    flag: spec.flag,
    short: spec.short,
    negated: false,
    env: spec.env === false ? null : envName(spec.flag),
    platformEnv: spec.platformEnv,
    fileEnv: spec.secret && spec.env !== false ? `${envName(spec.flag)}_FILE` : undefined,
    configKey: spec.configKey === false || spec.env === false ? null : spec.flag,
    leafKey: spec.leafKey,
    springKey: spec.springKey,
    springEnv: spec.springKey?.toUpperCase().replace(/\./g, '_'),
    type,
    default: undefined,
    describedDefault: spec.describedDefault,
    min: undefined,
    max: undefined,
    maxLength: undefined,
    values: undefined,
    unit: spec.unit,
    placeholder: spec.placeholder ?? 'VALUE',
    help: spec.help,
    ...rest,
  };
}

/** An integer within `min`–`max`; without a default it may be absent. */
export function integer<
  const N extends string,
  D extends number | undefined,
  const S extends string | undefined = undefined,
>(
  spec: Common<N, S> & { default: D; min: number; max: number | 'now' },
): OptionEntry<N, D extends number ? number : number | undefined, S> {
  return entry(spec, 'integer', {
    default: spec.default as unknown as D extends number ? number : number | undefined,
    min: spec.min,
    max: spec.max,
    placeholder: spec.placeholder ?? 'N',
  });
}

/** A string; without a default it may be absent. */
export function string<
  const N extends string,
  D extends string | undefined,
  const S extends string | undefined = undefined,
>(
  spec: Common<N, S> & { default: D; maxLength?: number },
): OptionEntry<N, D extends string ? string : string | undefined, S> {
  return entry(spec, 'string', {
    default: spec.default as unknown as D extends string ? string : string | undefined,
    maxLength: spec.maxLength,
  });
}

/** One of `values`. */
export function oneOf<
  const N extends string,
  const T extends readonly string[],
  const S extends string | undefined = undefined,
>(spec: Common<N, S> & { values: T; default: T[number] }): OptionEntry<N, T[number], S> {
  return entry(spec, 'enum', { default: spec.default, values: spec.values });
}

/**
 * A switch. Default off: `--flag` turns it on. Default on: the flag is `--no-…` and turns it off
 * (its variable and config key then say true to turn it off, as the flag does).
 */
export function boolean<const N extends string, const S extends string | undefined = undefined>(
  spec: Common<N, S> & { default: boolean },
): OptionEntry<N, boolean, S> {
  return entry(spec, 'boolean', { default: spec.default, negated: spec.default });
}

/** A list of strings: the flag repeated, a comma list in the environment, a JSON list in a file. */
export function list<const N extends string, const S extends string | undefined = undefined>(
  spec: Common<N, S>,
): OptionEntry<N, string[], S> {
  return entry(spec, 'list', { default: [] });
}
