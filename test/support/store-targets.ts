// The stores an attack runs against, each on a fresh database or file: PostgreSQL and MariaDB
// through testDatabase (a missing server skips on a laptop, fails with CI=true), SQLite in a
// temporary directory, initialised by `frond db init` as an operator would.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, type TestContext } from 'node:test';
import type { LogEvent, Logger } from '../../src/core/logger.js';
import { runFrond, tempDir } from './frond-process.js';
import { testDatabase } from './test-database.js';

export interface StoreTarget {
  name: string;
  /** The store URL, or undefined when the test was skipped (no server, not in CI). */
  url(t: TestContext): Promise<string | undefined>;
}

export type TargetBackend = 'postgres' | 'mysql' | 'sqlite';

/** One target per backend, in the order given; the databases are dropped after the file's tests. */
export function storeTargets(backends: readonly TargetBackend[], prefix: string): StoreTarget[] {
  return backends.map((backend): StoreTarget => {
    if (backend === 'sqlite')
      return {
        name: 'SQLite',
        async url() {
          const store = `sqlite:${join(tempDir(prefix), 'frond.db')}`;
          const init = await runFrond(['db', 'init', '--store', store]);
          assert.equal(init.code, 0, init.stderr);
          return store;
        },
      };
    const db = testDatabase(backend);
    after(() => db.drop());
    return {
      name: backend === 'postgres' ? 'PostgreSQL' : 'MariaDB',
      url: async (t) => (await db.open(t))?.url,
    };
  });
}

/** A logger that keeps the events it is given, in order. */
export function recordingLogger(): Logger & { events: LogEvent[] } {
  const events: LogEvent[] = [];
  return { events, log: (_level, event) => events.push(event) };
}
