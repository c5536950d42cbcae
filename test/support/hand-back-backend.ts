import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { runFrond, tempDir } from './frond-process.js';
import { byHand } from './sqlite-by-hand.js';
import { SERVICE_NAME, type ServerDialect, testDatabase } from './test-database.js';

export type HandBackDialect = 'sqlite' | ServerDialect;

export type Row = Record<string, unknown>;

/** One store the hand-back proofs run on: a `--store` value and SQL by hand on it. */
export interface Backend {
  dialect: HandBackDialect;
  name: string;
  store: string;
  /** One statement with `?` placeholders (turned into `$1…` for PostgreSQL); rows for a SELECT. */
  sql(text: string, values?: unknown[]): Promise<Row[]>;
}

export const BACKEND_NAME: Record<HandBackDialect, string> = { sqlite: 'SQLite', ...SERVICE_NAME };

/**
 * Stores for one test file: on SQLite a fresh file per `open` (three nodes share it, each with a
 * data dir of its own, as docs/databases.md allows), on a server a fresh database per `open` (a
 * fence raises every tag of the database it runs on, so a test that fences has one to itself).
 * `undefined`: the server is missing (skipped on a laptop, failed in CI by testDatabase).
 */
export function backends(dialect: HandBackDialect): {
  open(t: TestContext): Promise<Backend | undefined>;
  dropAll(): Promise<void>;
} {
  const made: ReturnType<typeof testDatabase>[] = [];
  return {
    async open(t) {
      if (dialect === 'sqlite') {
        const file = join(tempDir('frond-hb-db-'), 'frond.db');
        const store = `sqlite:${file}`;
        await init(store);
        return {
          dialect,
          name: 'SQLite',
          store,
          sql: async (text, values = []) =>
            byHand(file, (db) => {
              const statement = db.prepare(text);
              if (statement.reader) return statement.all(...values) as Row[];
              statement.run(...values);
              return [];
            }),
        };
      }
      const holder = testDatabase(dialect);
      made.push(holder);
      const db = await holder.open(t);
      if (db === undefined) return undefined;
      await init(db.url);
      return {
        dialect,
        name: SERVICE_NAME[dialect],
        store: db.url,
        sql: (text, values) => {
          let n = 0;
          return db.sql(dialect === 'postgres' ? text.replace(/\?/g, () => `$${++n}`) : text, values);
        },
      };
    },
    async dropAll() {
      await Promise.all(made.map((holder) => holder.drop()));
    },
  };
}

async function init(store: string): Promise<void> {
  const init = await runFrond(['db', 'init', '--store', store]);
  if (init.code !== 0) throw new Error(`frond db init --store ${store}: ${init.stderr}`);
}
