import { FrondError } from '../core/errors.js';
import { assertOpaqueStart, formatDomain, parseDomain } from '../core/opaque-codec.js';
import { isCounterName } from '../core/segment-allocator.js';
import { assertStart, assertStep, assertValidTag, MAX_TABLE_STEP, parseDecimal } from '../core/tag.js';
import { tagNotFound } from '../core/tag-catalogue.js';
import { counterCounts, newFormatSetting, removeTagAndCounters } from '../server/opaque/format-setting.js';
import { OpaqueSecret } from '../server/opaque/opaque-keys.js';
import { gapsPage } from '../server/ops/gap-routes.js';
import { ask, mustAsk } from './confirm.js';
import { TAG_ADD, TAG_GAPS, TAG_LIST, TAG_REMOVE, TAG_SET_STEP } from './option-table.js';
import { didYouMean, parseCommand, parseInteger, usage } from './options.js';
import { commandStore, withStore } from './store-options.js';
import { textTable } from './text-table.js';

async function add(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals, sources } = parseCommand(TAG_ADD, args, { rejectUnknownEnv: true });
  const choice = commandStore(settings, sources);
  const tag = assertValidTag(positionals[0] as string);
  const step = assertStep(settings.step);
  if (settings.format !== undefined) return addFormatted(tag, step, settings, choice, out);
  if (settings.timeZone !== undefined)
    throw new FrondError('INVALID_ARGUMENT', '--time-zone goes with --format: give both, or neither');
  const parsed = parseDecimal(settings.start);
  if (parsed === undefined) {
    throw new FrondError(
      'INVALID_ARGUMENT',
      `--start ${JSON.stringify(settings.start)} is not an integer: use decimal digits, with - for a negative start`,
    );
  }
  const start = assertStart(parsed, step);
  const description = settings.description ?? null;
  if (settings.opaque === undefined) {
    const [row, where] = await withStore(choice, async (store) => {
      await store.addTag({ tag, step, start, description });
      return [await store.tag(tag), store.description] as const;
    });
    // A name that served IDs before (a removed tag) starts at its high-water, not below it; so does
    // a name the database does not know once a fence has raised the floor of new names (a failover
    // or a restore may have lost the whole tag: src/stores/new-names.ts).
    const first = row !== undefined && row.maxId > start ? row.maxId : start;
    out(
      first === start
        ? `added tag ${tag}: first ID ${start}, step ${step} (store ${where})`
        : `added tag ${tag}: first ID ${first}, not ${start}: frond_high_water holds IDs up to ${first} for the name (it was removed, or a fence after a failover or restore raised every new name), step ${step} (store ${where})`,
    );
    return 0;
  }
  const domain = parseDomain(settings.opaque);
  assertOpaqueStart(start, domain);
  const secret = OpaqueSecret.fromEnvironment();
  if (secret === undefined)
    throw new FrondError(
      'OPAQUE_SECRET_MISSING',
      '--opaque needs the opaque-ID secret the nodes share: set FROND_OPAQUE_SECRET_FILE (or FROND_OPAQUE_SECRET)',
    );
  const setting = { domain: formatDomain(domain), keyCheck: secret.keyCheck(tag, domain) };
  const [row, where] = await withStore(choice, async (store) => {
    await store.addTag({ tag, step, start, description }, setting);
    return [await store.tag(tag), store.description] as const;
  });
  // A fence raised the first ID of every new name (src/stores/new-names.ts): the row says where.
  const first = row !== undefined && row.maxId > start ? row.maxId : start;
  const raised =
    first === start ? '' : `, not ${start}: a fence after a failover or restore raised every new name`;
  out(
    `added opaque tag ${tag}: ${setting.domain}, segment IDs from ${first}${raised}, step ${step}, secret fingerprint ${secret.fingerprint} (store ${where})`,
  );
  return 0;
}

/** `frond tag add TAG --format F [--time-zone Z]`: a formatted tag (docs/formats.md). */
async function addFormatted(
  tag: string,
  step: number,
  settings: {
    format: string | undefined;
    timeZone: string | undefined;
    opaque: string | undefined;
    start: string;
    description: string | undefined;
  },
  choice: ReturnType<typeof commandStore>,
  out: (line: string) => void,
): Promise<number> {
  const format = newFormatSetting(tag, settings.format as string, settings.timeZone, settings.opaque);
  if (settings.start !== '1')
    throw new FrondError(
      'INVALID_ARGUMENT',
      `tag ${tag}: a formatted tag numbers each period from 1; --start does not apply to it`,
    );
  const description = settings.description ?? null;
  const where = await withStore(choice, async (store) => {
    await store.addTag({ tag, step, start: 1n, description, format });
    return store.description;
  });
  out(
    `added formatted tag ${tag}: ${format.format} in ${format.timeZone}, numbered from 1 each period, step ${step} (store ${where})`,
  );
  return 0;
}

async function list(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(TAG_LIST, args, { rejectUnknownEnv: true });
  const [allRows, opaque, formats, where] = await withStore(commandStore(settings, sources), (store) =>
    Promise.all([store.listRows(), store.listOpaque(), store.listFormats(), store.description]),
  );
  // A formatted tag's counters (one row per period) are not tags: counted under their tag.
  const counters = counterCounts(allRows.map((row) => row.tag));
  const rows = allRows.filter((row) => !isCounterName(row.tag));
  const formatOf = (tag: string) => {
    const format = formats.get(tag);
    return format === undefined ? null : { ...format, counters: counters.get(tag) ?? 0 };
  };
  // On stderr: stdout stays the table, or JSON for a program.
  process.stderr.write(`store: ${where}\n`);
  const secret = OpaqueSecret.fromEnvironment();
  // Whether this secret makes the key check stored with the tag: all nodes must share one.
  const keyOf = (tag: string) => {
    const setting = opaque.get(tag);
    if (setting === undefined) return null;
    const matches =
      secret === undefined ? null : secret.keyCheck(tag, parseDomain(setting.domain)) === setting.keyCheck;
    return { ...setting, keyMatches: matches };
  };
  if (settings.json) {
    out(
      JSON.stringify(
        rows.map((r) => ({
          tag: r.tag,
          maxId: r.maxId.toString(),
          step: r.step,
          description: r.description,
          updateTime: r.updateTime?.toISOString() ?? null,
          opaque: keyOf(r.tag),
          format: formatOf(r.tag),
        })),
      ),
    );
    return 0;
  }
  if (opaque.size > 0)
    out(
      secret === undefined
        ? 'opaque-ID secret: none set here (FROND_OPAQUE_SECRET_FILE), key checks not compared'
        : `opaque-ID secret fingerprint ${secret.fingerprint}`,
    );
  const withFormats = formats.size > 0;
  const head = ['TAG', 'MAX_ID', 'STEP', 'UPDATED', 'OPAQUE'];
  if (withFormats) head.push('FORMAT', 'ZONE', 'COUNTERS');
  const table = [[...head, 'DESCRIPTION']].concat(
    rows.map((r) => {
      const key = keyOf(r.tag);
      const shown =
        key === null
          ? ''
          : `${key.domain}${key.keyMatches === null ? '' : key.keyMatches ? ' (key ok)' : ' (OTHER SECRET)'}`;
      const line = [r.tag, r.maxId.toString(), String(r.step), r.updateTime?.toISOString() ?? '', shown];
      const format = formatOf(r.tag);
      if (withFormats)
        line.push(
          format?.format ?? '',
          format?.timeZone ?? '',
          format === null ? '' : String(format.counters),
        );
      return [...line, r.description ?? ''];
    }),
  );
  for (const line of textTable(table)) out(line);
  return 0;
}

/**
 * `frond tag gaps TAG [--after ID] [--limit N] [--json]`: the tag's gaps, a page at a time, as
 * `GET /v1/tags/{tag}/gaps` answers them (every gap of the page's last start in the page). A table
 * by default, then the `--after` of the next page on stderr; `--json` prints the route's object.
 */
async function gaps(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals, sources } = parseCommand(TAG_GAPS, args, { rejectUnknownEnv: true });
  const tag = assertValidTag(positionals[0] as string);
  const after = settings.after === undefined ? undefined : parseDecimal(settings.after);
  if (settings.after !== undefined && after === undefined)
    throw usage(`--after ${JSON.stringify(settings.after)}: give a start ID, a decimal integer`);
  const [page, where] = await withStore(commandStore(settings, sources), (store) =>
    Promise.all([gapsPage(store, tag, after, settings.limit), store.description]),
  );
  if (settings.json) {
    out(JSON.stringify(page));
    return 0;
  }
  process.stderr.write(`store: ${where}\n`);
  if (page.gaps.length === 0) {
    out(after === undefined ? `tag ${tag} has no gaps` : `tag ${tag} has no gaps starting above ${after}`);
    return 0;
  }
  const table = [['START', 'END', 'IDS', 'REASON', 'NODE', 'RECORDED']].concat(
    page.gaps.map((gap) => [gap.start, gap.end, gap.ids, gap.reason, gap.node, gap.at ?? '']),
  );
  for (const line of textTable(table)) out(line);
  if (page.next !== null) process.stderr.write(`more: frond tag gaps ${tag} --after ${page.next}\n`);
  return 0;
}

async function setStep(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals, sources } = parseCommand(TAG_SET_STEP, args, { rejectUnknownEnv: true });
  const tag = assertValidTag(positionals[0] as string);
  const step = assertStep(parseInteger(positionals[1] as string, 'step', 1, MAX_TABLE_STEP));
  const where = await withStore(commandStore(settings, sources), async (store) => {
    await store.setStep(tag, step);
    return store.description;
  });
  // As Leaf, a running node's dynamic step goes on: the row's step is only its floor (segment-step.ts).
  out(
    `tag ${tag}: step set to ${step}: the length of a node's first two segments of the tag, and the floor of its dynamic step from its next segment load (store ${where})`,
  );
  return 0;
}

/**
 * `frond tag remove TAG [--yes]`: the row deleted, its max_id kept in frond_high_water (and an
 * opaque tag's setting in frond_tag_options), so the name never comes back below what it served.
 * Asks first on a terminal; elsewhere only runs with --yes.
 */
async function remove(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals, sources } = parseCommand(TAG_REMOVE, args, { rejectUnknownEnv: true });
  const tag = assertValidTag(positionals[0] as string);
  const asking = mustAsk(settings.yes, "'frond tag remove'", `remove ${tag}`);
  return withStore(commandStore(settings, sources), async (store) => {
    const entry = await store.tag(tag);
    if (entry === undefined) throw tagNotFound(tag);
    if (asking) {
      const kind =
        entry.opaque !== null
          ? `, opaque ${entry.opaque.domain}`
          : entry.format !== null
            ? `, formatted ${entry.format.format} and its counters`
            : '';
      const yes = await ask(
        `remove tag ${tag} (max_id ${entry.maxId}, step ${entry.step}${kind}) from ${store.description}? [y/N] `,
      );
      if (!yes) {
        process.stderr.write(`frond: tag ${tag} not removed\n`);
        return 1;
      }
    }
    const kept = await removeTagAndCounters(store, tag);
    out(
      `removed tag ${tag} from ${store.description}: max_id ${kept} kept in frond_high_water, so a tag added again under the name starts at ${kept} or above`,
    );
    return 0;
  });
}

export async function tagCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') return add(rest, out);
  if (sub === 'list') return list(rest, out);
  if (sub === 'gaps') return gaps(rest, out);
  if (sub === 'set-step') return setStep(rest, out);
  if (sub === 'remove') return remove(rest, out);
  throw usage(
    `'frond tag' needs add, list, gaps, set-step or remove${sub === undefined ? '' : `, not ${JSON.stringify(sub)}${didYouMean(sub, ['add', 'list', 'gaps', 'set-step', 'remove'])}`}`,
  );
}
