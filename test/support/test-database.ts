import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { serviceMissing } from './service-gate.js';

export type ServerDialect = 'postgres' | 'mysql';

/** Where the tests find the servers (DEVELOPERS.md): trust auth on loopback, database `test`. */
const ADMIN = {
  postgres: { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' },
  mysql: { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' },
} as const;

export const SERVICE_NAME: Record<ServerDialect, string> = { postgres: 'PostgreSQL', mysql: 'MariaDB' };

/**
 * A database of its own for one test file, `frond_test_<random>`, on the machine's server. `url`
 * is a frond `--store` value; `url` with another port goes through a proxy.
 */
export interface TestDatabase {
  dialect: ServerDialect;
  name: string;
  url: string;
  /** `url` pointing at another port on 127.0.0.1 (a proxy in front of the server). */
  urlVia(port: number, parameters?: string): string;
  /** One statement in this database; rows for a SELECT. `?` placeholders for MySQL, `$1` for PostgreSQL. */
  sql(text: string, values?: unknown[]): Promise<Record<string, unknown>[]>;
  /**
   * `text` in a transaction left open on a connection of its own, holding the locks it took, as
   * an operator's `SELECT … FOR UPDATE` in a console would; the function commits and closes it.
   */
  hold(text: string, values?: unknown[]): Promise<() => Promise<void>>;
  drop(): Promise<void>;
}

/**
 * Creates the database once, on the first test that asks for it; a test calling `open` while the
 * server is down is failed in CI and skipped on a laptop (`serviceMissing`).
 */
export function testDatabase(dialect: ServerDialect): {
  open(t: TestContext): Promise<TestDatabase | undefined>;
  drop(): Promise<void>;
} {
  let created: Promise<TestDatabase> | undefined;
  return {
    async open(t) {
      created ??= createDatabase(dialect);
      try {
        return await created;
      } catch (error) {
        serviceMissing(t, SERVICE_NAME[dialect], (error as Error).message);
        return undefined;
      }
    },
    async drop() {
      const database = await created?.catch(() => undefined);
      await database?.drop();
    },
  };
}

/** Creates `frond_test_<random>` now; the caller drops it. */
export async function createDatabase(dialect: ServerDialect): Promise<TestDatabase> {
  const name = `frond_test_${randomBytes(5).toString('hex')}`;
  const admin = ADMIN[dialect];
  await adminStatement(dialect, admin.database, `CREATE DATABASE ${name}`);
  const urlVia = (port: number, parameters = '') =>
    `${dialect}://${admin.user}@${admin.host}:${port}/${name}${parameters === '' ? '' : `?${parameters}`}`;
  return {
    dialect,
    name,
    url: urlVia(admin.port),
    urlVia,
    sql: (text, values) => statement(dialect, name, text, values),
    hold: (text, values) => held(dialect, name, text, values),
    drop: () => adminStatement(dialect, admin.database, `DROP DATABASE IF EXISTS ${name}`).then(() => {}),
  };
}

/** One statement on the server as its administrator, outside any test's database (`CREATE ROLE`). */
export async function onServer(dialect: ServerDialect, text: string): Promise<void> {
  await statement(dialect, ADMIN[dialect].database, text);
}

async function adminStatement(dialect: ServerDialect, database: string, text: string): Promise<void> {
  if (dialect === 'postgres') {
    // A database still in use by a node that was killed cannot be dropped; WITH (FORCE) ends those.
    await statement(dialect, database, text.startsWith('DROP') ? `${text} WITH (FORCE)` : text);
  } else {
    await statement(dialect, database, text);
  }
}

/** One statement on a connection of its own: tests need no pool, and leave nothing open. */
async function statement(
  dialect: ServerDialect,
  database: string,
  text: string,
  values: unknown[] = [],
): Promise<Record<string, unknown>[]> {
  const admin = ADMIN[dialect];
  if (dialect === 'postgres') {
    const client = new pg.Client({ ...admin, database, connectionTimeoutMillis: 3_000 });
    await client.connect();
    try {
      return (await client.query(text, values)).rows;
    } finally {
      await client.end();
    }
  }
  const connection = await mysql.createConnection({
    ...admin,
    database,
    connectTimeout: 3_000,
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  try {
    const [rows] = await connection.query(text, values);
    return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
  } finally {
    await connection.end();
  }
}

/** `text` inside a transaction kept open until the returned function commits it. */
async function held(
  dialect: ServerDialect,
  database: string,
  text: string,
  values: unknown[] = [],
): Promise<() => Promise<void>> {
  const admin = ADMIN[dialect];
  if (dialect === 'postgres') {
    const client = new pg.Client({ ...admin, database, connectionTimeoutMillis: 3_000 });
    await client.connect();
    await client.query('BEGIN');
    await client.query(text, values);
    return async () => {
      await client.query('COMMIT');
      await client.end();
    };
  }
  const connection = await mysql.createConnection({ ...admin, database, connectTimeout: 3_000 });
  await connection.query('START TRANSACTION');
  await connection.query(text, values);
  return async () => {
    await connection.query('COMMIT');
    await connection.end();
  };
}
