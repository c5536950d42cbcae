import { randomBytes } from 'node:crypto';
import { onServer, type ServerDialect, type TestDatabase } from './test-database.js';

/**
 * A login of its own on the machine's server, `frond_acct_<random>`, holding nothing until the
 * test grants it: what an operator's DBA gives frond (or Leaf). `url` is the `--store` of `db` as
 * that account; `grantee` names it for `frond db init --print --grant-to` (MySQL: `NAME@%`).
 */
export interface RestrictedAccount {
  name: string;
  grantee: string;
  url: string;
  /** Drops the login; call it after the database it was granted on is dropped (PostgreSQL needs that). */
  drop(): Promise<void>;
}

export async function restrictedAccount(db: TestDatabase): Promise<RestrictedAccount> {
  const name = `frond_acct_${randomBytes(5).toString('hex')}`;
  const dialect: ServerDialect = db.dialect;
  // Trust authentication on loopback (DEVELOPERS.md): no password. MariaDB's `'%'` host takes
  // 127.0.0.1, where the tests connect.
  await onServer(dialect, dialect === 'postgres' ? `CREATE ROLE ${name} LOGIN` : `CREATE USER '${name}'@'%'`);
  const port = dialect === 'postgres' ? 5432 : 3306;
  return {
    name,
    grantee: dialect === 'postgres' ? name : `${name}@%`,
    url: `${dialect}://${name}@127.0.0.1:${port}/${db.name}`,
    drop: () =>
      onServer(
        dialect,
        dialect === 'postgres' ? `DROP ROLE IF EXISTS ${name}` : `DROP USER IF EXISTS '${name}'@'%'`,
      ),
  };
}

/**
 * The statements of a SQL text as `frond db init --print` writes it, comments left out, each run
 * on `db` as its administrator (one at a time: the drivers run one statement a call).
 */
export async function runScript(db: TestDatabase, script: string): Promise<void> {
  const statements = script
    .split('\n')
    .filter((line) => !line.startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((statement) => statement.trim())
    .filter((statement) => statement !== '');
  for (const statement of statements) await db.sql(statement);
}
