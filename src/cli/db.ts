import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fenceRisks } from '../core/fence-risks.js';
import type { TagCatalogue, TagRow } from '../core/tag-catalogue.js';
import { backendOf } from '../stores/store-registry.js';
import { initLeaseTable, LEASE_DDL } from '../worker-ids/sql/sql-lease-backend.js';
import { DB_CHECK, DB_FENCE, DB_INIT } from './option-table.js';
import { didYouMean, parseCommand, usage } from './options.js';
import { commandStore, storeOf, withStore } from './store-options.js';
import { textTable } from './text-table.js';

/**
 * `frond db init [--print [--grant-to USER]]`: prints the DDL of leaf_alloc and frond's tables for
 * the store's dialect, with `--grant-to` the GRANTs an account needs (no connection), or creates the
 * tables that are missing. An existing table, Leaf's included, is never altered. The
 * one command that creates an SQLite store (and its data dir) where none is. A database server
 * also gets `frond_worker_lease`, for `--worker-lease-store store`.
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
    const lease = LEASE_DDL[backend.name];
    out(`${[backend.ddl, ...(lease === undefined ? [] : [lease])].join(';\n\n')};`);
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
    async (store) => {
      const check = store.init === undefined ? (existed ? 'exists' : 'created') : await store.init();
      await initLeaseTable(choice.spec);
      return [check, store.description] as const;
    },
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
      `fenced ${description}: ${outcome.tags} tags raised by ${settings.fenceSkip} (and the records of removed tags and of new names), epoch ${outcome.epoch} on ${outcome.identity}`,
    );
    return true;
  });
  if (done) return 0;
  process.stderr.write('frond: not fenced: nothing changed\n');
  return 1;
}

/**
 * `frond db check [--fence-skip N]`: the tags the next two fences would put at risk (fenceRisks),
 * as a table under a line naming the store; exit 0 when there is none, 1 when there is one (a
 * script can gate a deploy or a failover drill on it). It changes nothing: the store is opened
 * read-only, so a database frond never served from (Leaf's, before the move) is checked as it is.
 */
async function check(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, sources } = parseCommand(DB_CHECK, args, { rejectUnknownEnv: true });
  const skip = BigInt(settings.fenceSkip);
  const [rows, opaque, where] = await withStore(
    commandStore(settings, sources),
    async (store) => [await allRows(store), await store.listOpaque(), store.description] as const,
    { readOnly: true },
  );
  const risks = fenceRisks(rows, opaque, skip);
  const tags = `${rows.length} ${rows.length === 1 ? 'tag' : 'tags'}`;
  const found = new Set(risks.map((risk) => risk.tag)).size;
  out(
    `checked ${tags} in ${where} against a fence skip of ${skip}: ${
      found === 0 ? 'none at risk' : `${found} at risk`
    }`,
  );
  if (risks.length === 0) return 0;
  const table = [['TAG', 'MAX_ID', 'STEP', 'KIND', 'RISK']].concat(
    risks.map((risk) => [risk.tag, risk.maxId.toString(), String(risk.step), risk.kind, risk.finding]),
  );
  for (const line of textTable(table)) out(line);
  return 1;
}

/** Every row, a page at a time where the store answers in pages (SQLite). */
async function allRows(store: TagCatalogue): Promise<TagRow[]> {
  const rows: TagRow[] = [];
  for (;;) {
    const page = await store.listRows(rows.at(-1)?.tag, 2_000);
    if (page.length === 0) return rows;
    rows.push(...page);
  }
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
  if (sub === 'check') return check(rest, out);
  throw usage(
    `'frond db' needs init, fence or check${sub === undefined ? '' : `, not ${JSON.stringify(sub)}${didYouMean(sub, ['init', 'fence', 'check'])}`}`,
  );
}
