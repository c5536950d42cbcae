// Database servers with TLS turned on, made by the test in a temp dir and stopped after it (issue 17):
// never the machine's shared servers. A CA, a server certificate (for the name `localhost` only)
// and a client certificate, all made with openssl; PostgreSQL 15 (initdb, ssl=on, run as the
// postgres user) and MariaDB (mariadb-install-db, mariadbd --ssl-*) on free loopback ports.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface TestCertificates {
  dir: string;
  ca: string;
  /** A CA that signed nothing here: trusting only it must fail. */
  otherCa: string;
  serverCert: string;
  serverKey: string;
  /** Client certificates for the users `frond_cert` (PostgreSQL) and `frond_x509` (MariaDB). */
  clientCert: string;
  clientKey: string;
}

/** What is missing to run these servers here, or undefined when everything is. */
export function missingTool(kind: 'postgres' | 'mariadb'): string | undefined {
  const needed =
    kind === 'postgres'
      ? ['/usr/bin/openssl', '/usr/sbin/runuser', `${PG_BIN}/initdb`, `${PG_BIN}/pg_ctl`, `${PG_BIN}/psql`]
      : ['/usr/bin/openssl', '/usr/bin/mariadb-install-db', '/usr/sbin/mariadbd', '/usr/bin/mariadb'];
  const missing = needed.filter(
    (path) => !existsSync(path) && !existsSync(path.replace('/usr/sbin/', '/sbin/')),
  );
  if (missing.length > 0) return `missing ${missing.join(', ')}`;
  if (kind === 'postgres' && process.getuid?.() !== 0)
    return 'not root: cannot run initdb as the postgres user';
  return undefined;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: 'ignore', timeout: 30_000 });
}

/** A CA, a server certificate for `localhost` (no IP address in it) and a client certificate. */
export function makeCertificates(dir: string, clientName: string): TestCertificates {
  mkdirSync(dir, { recursive: true });
  const days = ['-days', '2'];
  for (const name of ['ca', 'other-ca'])
    openssl(
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.pem`,
        ...days,
        '-subj',
        `/CN=frond test ${name}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ],
      dir,
    );
  const sign = (name: string, subject: string, extensions: string) => {
    openssl(
      [
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        `${name}.key`,
        '-out',
        `${name}.csr`,
        '-subj',
        subject,
      ],
      dir,
    );
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.pem`,
        ...days,
        '-extfile',
        `${name}.ext`,
      ],
      dir,
    );
  };
  sign('server', '/CN=localhost', 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n');
  sign('client', `/CN=${clientName}`, 'extendedKeyUsage=clientAuth\n');
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    otherCa: join(dir, 'other-ca.pem'),
    serverCert: join(dir, 'server.pem'),
    serverKey: join(dir, 'server.key'),
    clientCert: join(dir, 'client.pem'),
    clientKey: join(dir, 'client.key'),
  };
}

/** A free TCP port on loopback (closed again; the server started next takes it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface TestServer {
  port: number;
  stop(): Promise<void>;
}

/** Polls `ready` every 200 ms for at most `ms`. */
async function waitFor(what: string, ms: number, ready: () => boolean): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (ready()) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`${what} did not start within ${ms} ms`);
}

function chownTree(path: string, uid: number, gid: number): void {
  execFileSync('chown', ['-R', `${uid}:${gid}`, path], { timeout: 10_000 });
}

/**
 * PostgreSQL 15 with ssl=on. TCP takes TLS only (`hostnossl … reject`); the user `frond_cert` may
 * log in only with a client certificate whose CN is its name, every other user with any TLS.
 */
export async function startTlsPostgres(dir: string, certs: TestCertificates): Promise<TestServer> {
  const port = await freePort();
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  const data = join(dir, 'pgdata');
  chmodSync(dir, 0o755);
  chownTree(certs.dir, uid, gid);
  chmodSync(certs.serverKey, 0o600);
  for (const folder of [data, join(dir, 'pgrun')]) {
    mkdirSync(folder, { mode: 0o700 });
    chownSync(folder, uid, gid);
  }
  const asPostgres = (bin: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', `${PG_BIN}/${bin}`, ...args], {
      stdio: 'ignore',
      timeout: 60_000,
      cwd: '/',
    });
  asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
  writeFileSync(
    join(data, 'postgresql.auto.conf'),
    [
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${join(dir, 'pgrun')}'`,
      'ssl = on',
      `ssl_cert_file = '${certs.serverCert}'`,
      `ssl_key_file = '${certs.serverKey}'`,
      `ssl_ca_file = '${certs.ca}'`,
      'fsync = off',
      'max_connections = 20',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(data, 'pg_hba.conf'),
    [
      'local all all trust',
      'hostssl all frond_cert 127.0.0.1/32 cert',
      'hostssl all all 127.0.0.1/32 trust',
      'hostnossl all all 127.0.0.1/32 reject',
      '',
    ].join('\n'),
  );
  chownTree(data, uid, gid);
  // pg_ctl's server keeps inherited pipes open: no pipes at all, and -w waits until it accepts.
  const start = spawn(
    'runuser',
    [
      '-u',
      'postgres',
      '--',
      `${PG_BIN}/pg_ctl`,
      '-D',
      data,
      '-l',
      join(data, 'server.log'),
      '-w',
      '-t',
      '60',
      'start',
    ],
    { stdio: 'ignore', cwd: '/' },
  );
  const code = await new Promise<number | null>((resolve) => start.once('exit', resolve));
  if (code !== 0) throw new Error(`pg_ctl start exited with ${code}; see ${join(data, 'server.log')}`);
  asPostgres('psql', [
    '-h',
    join(dir, 'pgrun'),
    '-p',
    String(port),
    '-U',
    'postgres',
    '-c',
    'CREATE ROLE frond_cert LOGIN SUPERUSER',
  ]);
  return {
    port,
    async stop() {
      const stop = spawn(
        'runuser',
        ['-u', 'postgres', '--', `${PG_BIN}/pg_ctl`, '-D', data, '-m', 'immediate', '-w', 'stop'],
        {
          stdio: 'ignore',
          cwd: '/',
        },
      );
      await new Promise((resolve) => stop.once('exit', resolve));
    },
  };
}

/**
 * MariaDB with --ssl-ca/--ssl-cert/--ssl-key and require_secure_transport (TCP without TLS is
 * refused). Users on 127.0.0.1: `frond` (password `pw`, any TLS) and `frond_x509` (a client
 * certificate signed by the CA required), both with all rights; a database `frond`.
 */
export async function startTlsMariadb(dir: string, certs: TestCertificates): Promise<TestServer> {
  const port = await freePort();
  const data = join(dir, 'mariadb');
  const socket = join(dir, 'mariadb.sock');
  execFileSync(
    'mariadb-install-db',
    [
      '--no-defaults',
      `--datadir=${data}`,
      '--user=root',
      '--auth-root-authentication-method=socket',
      '--skip-test-db',
    ],
    { stdio: 'ignore', timeout: 120_000 },
  );
  const child: ChildProcess = spawn(
    'mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--socket=${socket}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      '--user=root',
      `--pid-file=${join(dir, 'mariadb.pid')}`,
      `--log-error=${join(dir, 'mariadb.err')}`,
      `--ssl-ca=${certs.ca}`,
      `--ssl-cert=${certs.serverCert}`,
      `--ssl-key=${certs.serverKey}`,
      '--require-secure-transport=ON',
      '--innodb-buffer-pool-size=16M',
      '--skip-log-bin',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const sql = (text: string) =>
    execFileSync('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-e', text], {
      stdio: 'ignore',
      timeout: 20_000,
    });
  await waitFor('mariadbd', 60_000, () => {
    if (child.exitCode !== null)
      throw new Error(`mariadbd exited with ${child.exitCode}; see ${dir}/mariadb.err`);
    try {
      sql('SELECT 1');
      return true;
    } catch {
      return false;
    }
  });
  sql(
    [
      'CREATE DATABASE frond',
      "CREATE USER 'frond'@'127.0.0.1' IDENTIFIED BY 'pw'",
      "GRANT ALL ON *.* TO 'frond'@'127.0.0.1'",
      "CREATE USER 'frond_x509'@'127.0.0.1' REQUIRE X509",
      "GRANT ALL ON *.* TO 'frond_x509'@'127.0.0.1'",
    ].join('; '),
  );
  return {
    port,
    async stop() {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
