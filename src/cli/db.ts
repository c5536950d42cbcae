import { FrondError } from '../core/errors.js';
import { hasFenceOps } from '../stores/fencing/fence.js';
import { backendOf, openStore } from '../stores/store-registry.js';
import { DB_FENCE, DB_INIT } from './option-table.js';
import { didYouMean, parseCommand, usage } from './options.js';
import { storeOf } from './store-options.js';

/**
 * `frond db init [--print]`: prints the DDL of leaf_alloc for the store's dialect (no connection),
 * or creates the table if it is missing. An existing table, Leaf's included, is never altered.
 */
async function init(args: string[], out: (line: string) => void): Promise<number> {
  const { settings } = parseCommand(DB_INIT, args, { rejectUnknownEnv: true });
  const spec = storeOf(settings);
  if (settings.print) {
    out(`${backendOf(spec).ddl};`);
    return 0;
  }
  const store = openStore(spec);
  try {
    // SQLite creates the table when it opens the file.
    const found = store.init === undefined ? 'exists' : await store.init();
    out(
      found === 'created'
        ? `created leaf_alloc in ${store.description}`
        : `leaf_alloc is ready in ${store.description} (left as it was)`,
    );
  } finally {
    await store.close();
  }
  return 0;
}

/**
 * `frond db fence`: a fence by hand, for a database restored from a backup with frond's tables, so
 * that nodes that never served a tag cannot take a range that was handed out before the restore.
 * Every store has a fence, an SQLite file included (a copy of the file put back, `sqlite3 DB
 * ".restore …"`, is that restore).
 */
async function fence(args: string[], out: (line: string) => void): Promise<number> {
  const { settings } = parseCommand(DB_FENCE, args, { rejectUnknownEnv: true });
  const store = openStore(storeOf(settings));
  try {
    if (!hasFenceOps(store)) {
      throw new FrondError('INTERNAL', `${store.description} has no fence`);
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
      `fenced ${store.description}: ${outcome.tags} tags raised by ${settings.fenceSkip}, epoch ${outcome.epoch} on ${outcome.identity}`,
    );
  } finally {
    await store.close();
  }
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
