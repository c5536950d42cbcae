import { type SpawnOptions, spawn } from 'node:child_process';
import { appendFileSync, chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql from 'mysql2/promise';
import pg from 'pg';

/**
 * Database servers of the test's own, in temp dirs on free ports, for failover tests: the shared
 * servers on 5432 and 3306 are never touched. PostgreSQL runs as the `postgres` user (initdb
 * refuses root); MariaDB as root with `--user=root`.
 */
const PG_BIN = '/usr/lib/postgresql/15/bin';

/** `command args` to completion; rejects with its output on a non-zero exit or after `timeoutMs`. */
export function run(
  command: string,
  args: string[],
  timeoutMs = 60_000,
  options: SpawnOptions = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    // pg_ctl start leaves the server holding inherited pipes: callers that start a server pass 'ignore'.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} ${args.join(' ')} did not finish in ${timeoutMs} ms: ${output}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${output}`));
    });
  });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function postgresUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('no postgres user');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** Whether this machine can run the servers of these tests (root, the binaries). */
export function canRunPostgresCluster(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (runuser -u postgres)';
  try {
    readFileSync(join(PG_BIN, 'initdb'));
    postgresUser();
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

const asPostgres = (args: string[], timeoutMs?: number, options?: SpawnOptions) =>
  run('runuser', ['-u', 'postgres', '--', ...args], timeoutMs, options);

/** One PostgreSQL 15 server of the test's own. */
export class PgServer {
  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** `url` with another port (a proxy in front of this server). */
  urlVia(port: number, parameters = 'connect_timeout_ms=1000&query_timeout_ms=2000'): string {
    return `postgres://postgres@127.0.0.1:${port}/postgres?${parameters}`;
  }

  static tempDir(prefix: string): string {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    const { uid, gid } = postgresUser();
    chownSync(dir, uid, gid);
    return dir;
  }

  /** A new primary: initdb, streaming replication allowed from loopback, started. */
  static async primary(): Promise<PgServer> {
    const dir = PgServer.tempDir('frond-pg-primary-');
    const data = join(dir, 'data');
    await asPostgres([join(PG_BIN, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '-N'], 120_000);
    appendFileSync(join(data, 'pg_hba.conf'), '\nhost replication postgres 127.0.0.1/32 trust\n');
    const server = new PgServer(dir, await freePort());
    await server.start();
    return server;
  }

  /**
   * A streaming replica of the server reached at `sourcePort` (a proxy, so the test can cut the
   * link): `pg_basebackup -R -X stream -c fast`, spawned asynchronously since the proxy lives in
   * this event loop.
   */
  static async replica(sourcePort: number): Promise<PgServer> {
    const dir = PgServer.tempDir('frond-pg-replica-');
    const data = join(dir, 'data');
    await asPostgres(
      [
        join(PG_BIN, 'pg_basebackup'),
        '-h',
        '127.0.0.1',
        '-p',
        String(sourcePort),
        '-U',
        'postgres',
        '-D',
        data,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
      ],
      120_000,
    );
    const server = new PgServer(dir, await freePort());
    await server.start();
    return server;
  }

  async start(): Promise<void> {
    const data = join(this.dir, 'data');
    const settings = [
      `port = ${this.port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${this.dir}'`,
      'wal_level = replica',
      'max_wal_senders = 5',
      'fsync = off',
      'shared_buffers = 16MB',
      'max_connections = 60',
      // A replica notices a cut link within a second or two.
      'wal_receiver_timeout = 2s',
      'wal_retrieve_retry_interval = 200ms',
    ];
    writeFileSync(join(data, 'frond-test.conf'), `${settings.join('\n')}\n`);
    const conf = readFileSync(join(data, 'postgresql.conf'), 'utf8');
    if (!conf.includes("include_if_exists = 'frond-test.conf'"))
      appendFileSync(join(data, 'postgresql.conf'), "\ninclude_if_exists = 'frond-test.conf'\n");
    await asPostgres(
      [join(PG_BIN, 'pg_ctl'), '-D', data, '-l', join(this.dir, 'log'), '-w', '-t', '60', 'start'],
      90_000,
      {
        stdio: 'ignore',
      },
    );
  }

  async promote(): Promise<void> {
    await asPostgres(
      [join(PG_BIN, 'pg_ctl'), '-D', join(this.dir, 'data'), '-w', '-t', '60', 'promote'],
      90_000,
      {
        stdio: 'ignore',
      },
    );
  }

  /** The postmaster gets SIGKILL: what it acknowledged and did not ship is lost to the replica. */
  kill(): void {
    try {
      const pid = Number(readFileSync(join(this.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  async sql(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    const client = new pg.Client({
      host: '127.0.0.1',
      port: this.port,
      user: 'postgres',
      database: 'postgres',
      connectionTimeoutMillis: 3_000,
    });
    await client.connect();
    try {
      return (await client.query(text, values)).rows;
    } finally {
      await client.end();
    }
  }

  /** Waits until `predicate` holds on this server, polling for at most `timeoutMs`. */
  async until(
    text: string,
    predicate: (rows: Record<string, unknown>[]) => boolean,
    timeoutMs = 20_000,
  ): Promise<void> {
    const started = performance.now();
    let last: unknown;
    while (performance.now() - started < timeoutMs) {
      try {
        if (predicate(await this.sql(text))) return;
      } catch (error) {
        last = error;
      }
      await sleep(100);
    }
    throw new Error(`${text} did not hold on port ${this.port} within ${timeoutMs} ms (${String(last)})`);
  }

  /** Stops the server (immediate) and removes its files. */
  async destroy(): Promise<void> {
    this.kill();
    await sleep(200);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Whether MariaDB's server binaries are here. */
export function canRunMariadbCluster(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root';
  try {
    readFileSync('/usr/sbin/mariadbd');
  } catch (error) {
    return (error as Error).message;
  }
  return undefined;
}

/** One MariaDB server of the test's own, with a binary log and its own server_id. */
export class MariadbServer {
  private child: ReturnType<typeof spawn> | undefined;
  private constructor(
    readonly dir: string,
    readonly port: number,
    readonly serverId: number,
  ) {}

  urlVia(port: number, parameters = 'connect_timeout_ms=1000&query_timeout_ms=2000'): string {
    return `mysql://root@127.0.0.1:${port}/frond?${parameters}`;
  }

  static async create(serverId: number): Promise<MariadbServer> {
    const dir = mkdtempSync(join(tmpdir(), `frond-mariadb-${serverId}-`));
    await run(
      'mariadb-install-db',
      [
        '--no-defaults',
        `--datadir=${join(dir, 'data')}`,
        '--user=root',
        '--auth-root-authentication-method=normal',
        '--skip-test-db',
      ],
      120_000,
    );
    const server = new MariadbServer(dir, await freePort(), serverId);
    await server.start();
    // root over TCP from loopback, for frond and for replication; not binlogged (each server has its own).
    await server.sql(
      "SET SESSION sql_log_bin = 0; CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
    );
    return server;
  }

  /** The primary's side: a database for frond (binlogged, so a replica gets it). */
  async createDatabase(): Promise<void> {
    await this.sql('CREATE DATABASE IF NOT EXISTS frond');
  }

  /** Replicates from the server at `sourcePort` (a proxy) with GTIDs, from the start of its binlog. */
  async replicate(sourcePort: number): Promise<void> {
    await this.sql(
      `CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = ${sourcePort}, MASTER_USER = 'root', MASTER_PASSWORD = '', MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = 1, MASTER_HEARTBEAT_PERIOD = 1`,
    );
    await this.sql('SET GLOBAL slave_net_timeout = 2');
    await this.sql('START SLAVE');
  }

  /** The replica becomes a primary: replication stops for good, writes are accepted. */
  async promote(): Promise<void> {
    await this.sql('STOP SLAVE');
    await this.sql('RESET SLAVE ALL');
    await this.sql('SET GLOBAL read_only = 0');
  }

  async start(): Promise<void> {
    this.child = spawn(
      '/usr/sbin/mariadbd',
      [
        '--no-defaults',
        `--datadir=${join(this.dir, 'data')}`,
        `--socket=${join(this.dir, 'sock')}`,
        `--port=${this.port}`,
        '--bind-address=127.0.0.1',
        `--pid-file=${join(this.dir, 'pid')}`,
        `--log-error=${join(this.dir, 'error.log')}`,
        `--log-bin=${join(this.dir, 'data', 'binlog')}`,
        `--server-id=${this.serverId}`,
        '--user=root',
        '--innodb-buffer-pool-size=32M',
        '--innodb-log-file-size=16M',
        '--innodb-flush-log-at-trx-commit=2',
        '--sync-binlog=0',
        '--binlog-format=ROW',
        '--log-slave-updates=ON',
        '--gtid-strict-mode=ON',
        '--max-connections=100',
      ],
      { stdio: 'ignore' },
    );
    const started = performance.now();
    for (;;) {
      try {
        await this.sql('SELECT 1');
        return;
      } catch (error) {
        if (performance.now() - started > 60_000 || this.child.exitCode !== null)
          throw new Error(
            `mariadbd on ${this.port} did not start: ${String(error)} ${readFileSync(join(this.dir, 'error.log'), 'utf8').slice(-2000)}`,
          );
        await sleep(200);
      }
    }
  }

  kill(): void {
    this.child?.kill('SIGKILL');
  }

  async sql(text: string, values: unknown[] = [], database?: string): Promise<Record<string, unknown>[]> {
    const connection = await mysql.createConnection({
      socketPath: join(this.dir, 'sock'),
      user: 'root',
      ...(database === undefined ? {} : { database }),
      connectTimeout: 3_000,
      supportBigNumbers: true,
      bigNumberStrings: true,
      multipleStatements: true,
    });
    try {
      const [rows] = await connection.query(text, values);
      return Array.isArray(rows) ? (rows as Record<string, unknown>[]) : [];
    } finally {
      await connection.end();
    }
  }

  async until(
    text: string,
    predicate: (rows: Record<string, unknown>[]) => boolean,
    timeoutMs = 20_000,
  ): Promise<void> {
    const started = performance.now();
    let last: unknown;
    while (performance.now() - started < timeoutMs) {
      try {
        if (predicate(await this.sql(text))) return;
      } catch (error) {
        last = error;
      }
      await sleep(100);
    }
    throw new Error(`${text} did not hold on port ${this.port} within ${timeoutMs} ms (${String(last)})`);
  }

  async destroy(): Promise<void> {
    this.kill();
    await sleep(200);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
