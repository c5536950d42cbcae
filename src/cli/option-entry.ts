/** What a setting holds; `list` is a repeatable flag, a comma list in the environment, a JSON list in a file. */
export type OptionType = 'string' | 'integer' | 'boolean' | 'list' | 'enum';

/**
 * One setting, everything about it in one place. `name` is the one name of the value at every
 * layer: the field of `Settings`, of `ServeConfig`, of the core's options and of `CoordinatorFlags`.
 * `V` only carries the value's type, for `SettingsOf`.
 */
export interface OptionEntry<N extends string = string, V = unknown> {
  readonly name: N;
  /** The flag without `--`. A boolean that is on by default has a `no-…` flag (`negated`) that turns it off. */
  readonly flag: string;
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
  readonly type: OptionType;
  /** The value when nothing sets it; undefined: no value (`describedDefault` says what happens then). */
  readonly default: V | undefined;
  /** The default in words, for help and the README, when it is not a plain value. */
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
  /** One line for `--help` and the README. */
  readonly help: string;
  /** Never set: carries the value's type. */
  readonly valueType?: V;
}

/** The values of a table, by name, typed from its entries. */
export type SettingsOf<T extends readonly OptionEntry[]> = {
  [E in T[number] as E['name']]: E extends OptionEntry<string, infer V> ? V : never;
};

/** `--data-dir` is `FROND_DATA_DIR`. */
export function envName(flag: string): string {
  return `FROND_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/** The fields an entry may leave out; they follow from its flag. */
interface Common<N extends string> {
  name: N;
  flag: string;
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
  describedDefault?: string;
  unit?: string;
  placeholder?: string;
}

function entry<N extends string, V>(
  spec: Common<N>,
  type: OptionType,
  rest: Partial<OptionEntry<N, V>>,
): OptionEntry<N, V> {
  return {
    name: spec.name,
    flag: spec.flag,
    negated: false,
    env: spec.env === false ? null : envName(spec.flag),
    platformEnv: spec.platformEnv,
    fileEnv: spec.secret && spec.env !== false ? `${envName(spec.flag)}_FILE` : undefined,
    configKey: spec.configKey === false || spec.env === false ? null : spec.flag,
    leafKey: spec.leafKey,
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
export function integer<const N extends string, D extends number | undefined>(
  spec: Common<N> & { default: D; min: number; max: number | 'now' },
): OptionEntry<N, D extends number ? number : number | undefined> {
  return entry(spec, 'integer', {
    default: spec.default as unknown as D extends number ? number : number | undefined,
    min: spec.min,
    max: spec.max,
    placeholder: spec.placeholder ?? 'N',
  });
}

/** A string; without a default it may be absent. */
export function string<const N extends string, D extends string | undefined>(
  spec: Common<N> & { default: D; maxLength?: number },
): OptionEntry<N, D extends string ? string : string | undefined> {
  return entry(spec, 'string', {
    default: spec.default as unknown as D extends string ? string : string | undefined,
    maxLength: spec.maxLength,
  });
}

/** One of `values`. */
export function oneOf<const N extends string, const T extends readonly string[]>(
  spec: Common<N> & { values: T; default: T[number] },
): OptionEntry<N, T[number]> {
  return entry(spec, 'enum', { default: spec.default, values: spec.values });
}

/**
 * A switch. Default off: `--flag` turns it on. Default on: the flag is `--no-…` and turns it off
 * (its variable and config key then say true to turn it off, as the flag does).
 */
export function boolean<const N extends string>(
  spec: Common<N> & { default: boolean },
): OptionEntry<N, boolean> {
  return entry(spec, 'boolean', { default: spec.default, negated: spec.default });
}

/** A list of strings: the flag repeated, a comma list in the environment, a JSON list in a file. */
export function list<const N extends string>(spec: Common<N>): OptionEntry<N, string[]> {
  return entry(spec, 'list', { default: [] });
}
