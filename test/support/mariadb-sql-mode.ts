import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import { freePort, run } from './replication.js';

/**
 * A MariaDB server of the test's own with a global sql_mode of its choosing (NO_BACKSLASH_ESCAPES),
 * in a temp dir, on a free port of 127.0.0.1: the shared server on 3306, which other test files use
 * at the same time, is never reconfigured.
 */

/** The server's binaries, or why they are not here. */
export function mariadbBinaries(): { server: string; installDb: string } | string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin'];
  const find = (name: string) =>
    dirs
      .filter((dir) => dir !== '')
      .map((dir) => join(dir, name))
      .find((path) => {
        try {
          accessSync(path, constants.X_OK);
          return true;
        } catch {
          return false;
        }
      });
  const server = find('mariadbd');
  const installDb = find('mariadb-install-db');
  if (server === undefined) return `no mariadbd binary in ${dirs.join(delimiter)}`;
  if (installDb === undefined) return `no mariadb-install-db binary in ${dirs.join(delimiter)}`;
  return { server, installDb };
}

/** Bounds: mariadb-install-db took 5-6 s here; the server answers within 2-3 s of its start. */
const INSTALL_TIMEOUT_MS = 90_000;
const START_TIMEOUT_MS = 45_000;

export class SqlModeServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
    private readonly child: ChildProcess,
  ) {}

  /** `mysql://` for frond, on database `database` (create it with `createDatabase`). */
  url(database: string): string {
    return `mysql://root@127.0.0.1:${this.port}/${database}?connect_timeout_ms=3000&query_timeout_ms=5000`;
  }

  static async start(
    binaries: { server: string; installDb: string },
    sqlMode: string,
  ): Promise<SqlModeServer> {
    const dir = mkdtempSync(join(tmpdir(), 'frond-mariadb-sql-mode-'));
    const asRoot = process.getuid?.() === 0 ? ['--user=root'] : [];
    try {
      await run(
        binaries.installDb,
        [
          '--no-defaults',
          `--datadir=${join(dir, 'data')}`,
          '--auth-root-authentication-method=normal',
          '--skip-test-db',
          ...asRoot,
        ],
        INSTALL_TIMEOUT_MS,
      );
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
    const port = await freePort();
    const child = spawn(
      binaries.server,
      [
        '--no-defaults',
        `--datadir=${join(dir, 'data')}`,
        `--socket=${join(dir, 'sock')}`,
        `--port=${port}`,
        '--bind-address=127.0.0.1',
        '--skip-name-resolve',
        `--pid-file=${join(dir, 'pid')}`,
        `--log-error=${join(dir, 'error.log')}`,
        `--sql-mode=${sqlMode}`,
        // What the shared server has (Debian's config), which --no-defaults leaves out (latin1).
        '--character-set-server=utf8mb4',
        '--collation-server=utf8mb4_general_ci',
        '--skip-log-bin',
        '--innodb-buffer-pool-size=32M',
        '--innodb-log-file-size=16M',
        '--innodb-flush-log-at-trx-commit=2',
        '--max-connections=60',
        ...asRoot,
      ],
      { stdio: 'ignore' },
    );
    const server = new SqlModeServer(dir, port, child);
    // A test process that ends without `stop` (a crash, a timeout) leaves no server behind.
    process.once('exit', () => child.kill('SIGKILL'));
    const started = performance.now();
    for (;;) {
      try {
        // root over TCP from loopback, as frond connects; the socket is root@localhost's.
        await server.sql(
          "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
          undefined,
          undefined,
          join(dir, 'sock'),
        );
        await server.sql(
          "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
          undefined,
          undefined,
          join(dir, 'sock'),
        );
        await server.sql('SELECT 1');
        return server;
      } catch (error) {
        if (performance.now() - started > START_TIMEOUT_MS || child.exitCode !== null) {
          await server.stop();
          throw new Error(
            `mariadbd on 127.0.0.1:${port} did not start within ${START_TIMEOUT_MS} ms: ${String(error)} ${errorLog(dir)}`,
          );
        }
        await sleep(200);
      }
    }
  }

  async createDatabase(name: string): Promise<void> {
    await this.sql(`CREATE DATABASE IF NOT EXISTS ${name}`);
  }

  /**
   * One statement on a connection of its own (over 127.0.0.1, or the socket); values as
   * parameters of a prepared statement, since on this server the driver's client-side escaping
   * (a quote as backslash-quote) reads differently.
   */
  async sql(
    text: string,
    values?: (string | number | null)[],
    database?: string,
    socketPath?: string,
  ): Promise<Record<string, unknown>[]> {
    const connection = await mysql.createConnection({
      ...(socketPath === undefined ? { host: '127.0.0.1', port: this.port } : { socketPath }),
      user: 'root',
      ...(database === undefined ? {} : { database }),
      connectTimeout: 3_000,
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    try {
      const [rows] =
        values === undefined ? await connection.query(text) : await connection.execute(text, values);
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
    } finally {
      await connection.end();
    }
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      this.child.kill('SIGKILL');
      await Promise.race([exited, sleep(10_000)]);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function errorLog(dir: string): string {
  try {
    return readFileSync(join(dir, 'error.log'), 'utf8').slice(-2000);
  } catch {
    return '(no error log)';
  }
}
