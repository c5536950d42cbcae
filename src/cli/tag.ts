import { assertStep, assertValidTag } from '../core/tag.js';
import type { TagAdmin } from '../core/tag-admin.js';
import { openStore } from '../stores/store-registry.js';
import { integerOption, parseCommand, parseInteger, stringOption, usage } from './options.js';
import { STORE_OPTIONS, storeOf } from './store-options.js';

async function withStore<T>(spec: string, use: (store: TagAdmin) => Promise<T>): Promise<T> {
  const store = openStore(spec);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

async function add(args: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseCommand(
    'tag add',
    args,
    {
      ...STORE_OPTIONS,
      step: { type: 'string', env: false },
      start: { type: 'string', env: false },
      description: { type: 'string', env: false },
    },
    ['tag'],
  );
  const tag = assertValidTag(parsed.positionals[0] as string);
  const step = assertStep(integerOption(parsed, 'step', 1000, 1, 2_147_483_647));
  const start = integerOption(parsed, 'start', 1, 0, Number.MAX_SAFE_INTEGER);
  const description = stringOption(parsed, 'description') ?? null;
  if (description !== null && description.length > 256)
    throw usage('--description is longer than 256 characters');
  await withStore(storeOf(parsed), (store) => store.addTag({ tag, step, start: BigInt(start), description }));
  out(`added tag ${tag}: first ID ${start}, step ${step}`);
  return 0;
}

async function list(args: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseCommand(
    'tag list',
    args,
    { ...STORE_OPTIONS, json: { type: 'boolean', env: false } },
    [],
  );
  const rows = await withStore(storeOf(parsed), (store) => store.listRows());
  if (parsed.values.json === true) {
    out(
      JSON.stringify(
        rows.map((r) => ({
          tag: r.tag,
          maxId: r.maxId.toString(),
          step: r.step,
          description: r.description,
          updateTime: r.updateTime?.toISOString() ?? null,
        })),
      ),
    );
    return 0;
  }
  const table = [['TAG', 'MAX_ID', 'STEP', 'UPDATED', 'DESCRIPTION']].concat(
    rows.map((r) => [
      r.tag,
      r.maxId.toString(),
      String(r.step),
      r.updateTime?.toISOString() ?? '',
      r.description ?? '',
    ]),
  );
  const widths =
    table[0]?.map((_, column) => Math.max(...table.map((row) => (row[column] ?? '').length))) ?? [];
  for (const row of table)
    out(
      row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd(),
    );
  return 0;
}

async function setStep(args: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseCommand('tag set-step', args, STORE_OPTIONS, ['tag', 'step']);
  const tag = assertValidTag(parsed.positionals[0] as string);
  const step = assertStep(parseInteger(parsed.positionals[1] as string, 'step', 1, 2_147_483_647));
  await withStore(storeOf(parsed), (store) => store.setStep(tag, step));
  out(`tag ${tag}: step set to ${step} (running nodes use it from their next segment load)`);
  return 0;
}

export async function tagCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'add') return add(rest, out);
  if (sub === 'list') return list(rest, out);
  if (sub === 'set-step') return setStep(rest, out);
  throw usage(
    `'frond tag' needs add, list or set-step${sub === undefined ? '' : `, not ${JSON.stringify(sub)}`}`,
  );
}
