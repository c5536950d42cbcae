import { backendOf, openStore } from '../stores/store-registry.js';
import { DB_INIT } from './option-table.js';
import { didYouMean, parseCommand, usage } from './options.js';
import { storeOf } from './store-options.js';

/**
 * `frond db init [--print]`: prints the DDL of leaf_alloc for the store's dialect (no connection),
 * or creates the table if it is missing. An existing table, Leaf's included, is never altered.
 */
async function init(args: string[], out: (line: string) => void): Promise<number> {
  const { settings } = parseCommand(DB_INIT, args);
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

export async function dbCommand(args: string[], out: (line: string) => void): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'init') return init(rest, out);
  throw usage(
    `'frond db' needs init${sub === undefined ? '' : `, not ${JSON.stringify(sub)}${didYouMean(sub, ['init'])}`}`,
  );
}
