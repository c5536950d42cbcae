import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { backendOf } from '../stores/store-registry.js';
import { DB_FENCE, DB_INIT } from './option-table.js';
import { didYouMean, parseCommand, usage } from './options.js';
import { commandStore, storeOf, withStore } from './store-options.js';

/**
 * `frond db init [--print [--grant-to USER]]`: prints the DDL of leaf_alloc and frond's tables for
 * the store's dialect, with `--grant-to` the GRANTs an account needs (no connection), or creates the
 * tables that are missing. An existing table, Leaf's included, is never altered. The
 * one command that creates an SQLite store (and its data dir) where none is.
 */
async function init(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(DB_INIT, args, { rejectUnknownEnv: true });
  if (settings.print) {
    const backend = backendOf(storeOf(settings));
    if (settings.grantTo !== undefined && backend.grants === undefined)
      throw usage(
        `--grant-to: a ${backend.name} store has no accounts; give the --store of a database server`,
      );
    const grants = settings.grantTo === undefined ? undefined : backend.grants?.(settings.grantTo);
    out(`${backend.ddl};`);
    if (grants !== undefined) out(`\n${grants}`);
    return 0;
  }
  // GRANTs are a DBA's to run, as the DDL: frond prints them and runs none.
  if (settings.grantTo !== undefined)
    throw usage('--grant-to prints the GRANTs an administrator runs: give it with --print');
  const choice = commandStore(settings, sources);
  // SQLite creates the table when it opens the file: a file that was not there is a store created.
  const existed = choice.file === undefined || existsSync(choice.file);
  const [found, where] = await withStore(
    choice,
    async (store) =>
      [
        store.init === undefined ? (existed ? 'exists' : 'created') : await store.init(),
        store.description,
      ] as const,
    { create: true },
  );
  out(
    found === 'created'
      ? `created leaf_alloc in ${where}`
      : `leaf_alloc is ready in ${where} (left as it was)`,
  );
  return 0;
}

/**
 * `frond db fence`: a fence by hand, for a database restored from a backup with frond's tables, so
 * that nodes that never served a tag cannot take a range that was handed out before the restore.
 * Every store has a fence, an SQLite file included (a copy of the file put back, `sqlite3 DB
 * ".restore …"`, is that restore). It cannot be undone: it runs with `--yes`, or once a person at
 * a terminal answers y to the line saying how many tags it raises by how much, in which store.
 */
async function fence(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(DB_FENCE, args, { rejectUnknownEnv: true });
  const done = await withStore(commandStore(settings, sources), async (store) => {
    const description = store.description;
    if (!settings.yes) {
      const tags = (await store.listTags()).length;
      const plan = `${tags} ${tags === 1 ? 'tag' : 'tags'} by ${settings.fenceSkip} in ${description}`;
      // Asked only where a person reads the question and types the answer.
      if (!process.stdin.isTTY || !process.stderr.isTTY)
        throw usage(`db fence would raise ${plan}, which cannot be undone: add --yes to do it`);
      process.stderr.write(`db fence raises ${plan} and starts a new fence epoch: this cannot be undone\n`);
      if (!(await confirmed('fence now? [y/N] '))) return false;
    }
    // An epoch no row can be above: the fence always runs.
    const request = {
      observedEpoch: Number.MAX_SAFE_INTEGER,
      aboveEpoch: 0,
      skip: BigInt(settings.fenceSkip),
      atLeast: new Map<string, bigint>(),
    };
    let outcome = await store.fence(request);
    // Not fenced under that epoch: the row was missing (a backup taken before frond's first fence)
    // and was only created, which raises nothing. The restore still needs the raise: once more.
    if (!outcome.fenced) outcome = await store.fence({ ...request, aboveEpoch: outcome.epoch });
    out(
      `fenced ${description}: ${outcome.tags} tags raised by ${settings.fenceSkip}, epoch ${outcome.epoch} on ${outcome.identity}`,
    );
    return true;
  });
  if (done) return 0;
  process.stderr.write('frond: not fenced: nothing changed\n');
  return 1;
}

/** Asks on the terminal; only y or yes is a yes (Enter, Ctrl-D and Ctrl-C are no). */
async function confirmed(question: string): Promise<boolean> {
  const terminal = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      terminal.question(question, resolve);
      terminal.once('close', () => resolve(''));
      terminal.once('SIGINT', () => {
        process.stderr.write('\n');
        resolve('');
      });
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    terminal.close();
  }
}

export async function dbCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'init') return init(rest, out);
  if (sub === 'fence') return fence(rest, out);
  throw usage(
    `'frond db' needs init or fence${sub === undefined ? '' : `, not ${JSON.stringify(sub)}${didYouMean(sub, ['init', 'fence'])}`}`,
  );
}
