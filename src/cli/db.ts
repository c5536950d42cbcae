import { existsSync } from 'node:fs';
import { FrondError } from '../core/errors.js';
import { hasFenceOps } from '../stores/fencing/fence.js';
import { backendOf } from '../stores/store-registry.js';
import { DB_FENCE, DB_INIT } from './option-table.js';
import { didYouMean, parseCommand, usage } from './options.js';
import { commandStore, storeOf, withStore } from './store-options.js';

/**
 * `frond db init [--print]`: prints the DDL of leaf_alloc for the store's dialect (no connection),
 * or creates the table if it is missing. An existing table, Leaf's included, is never altered. The
 * one command that creates an SQLite store (and its data dir) where none is.
 */
async function init(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(DB_INIT, args, { rejectUnknownEnv: true });
  if (settings.print) {
    out(`${backendOf(storeOf(settings)).ddl};`);
    return 0;
  }
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
 * ".restore …"`, is that restore).
 */
async function fence(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(DB_FENCE, args, { rejectUnknownEnv: true });
  await withStore(commandStore(settings, sources), async (store) => {
    const description = store.description;
    if (!hasFenceOps(store)) {
      throw new FrondError('INTERNAL', `${description} has no fence`);
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
  });
  return 0;
}

export async function dbCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'init') return init(rest, out);
  if (sub === 'fence') return fence(rest, out);
  throw usage(
    `'frond db' needs init or fence${sub === undefined ? '' : `, not ${JSON.stringify(sub)}${didYouMean(sub, ['init', 'fence'])}`}`,
  );
}
