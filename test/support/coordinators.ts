import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { systemClock } from '../../src/core/clock.js';
import { ZooKeeperClient } from '../../src/worker-ids/zookeeper/zookeeper-client.js';
import { tempDir } from './frond-process.js';
import { serviceMissing } from './service-gate.js';

/** The shared services `scripts/services.sh` starts (docs/worker-ids.md, "Setting up ZooKeeper and etcd"). */
export const ZOOKEEPER = '127.0.0.1:2181';
export const ETCD = 'http://127.0.0.1:2379';

/** A fresh `--name` per test, so tests share ZooKeeper and etcd without cleaning up (no `-`: Leaf's rule). */
export function randomName(prefix = 'frond_test'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/** Sends a four-letter word and reads the answer, bounded (there is no nc on these machines). */
export function fourLetterWord(port: number, word: string, timeoutMs = 1000): Promise<string> {
  return new Promise((resolve) => {
    let reply = '';
    const socket = connect({ host: '127.0.0.1', port });
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('connect', () => socket.write(word));
    socket.on('data', (chunk) => {
      reply += chunk;
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(reply);
    });
  });
}

async function serving(port: number): Promise<boolean> {
  return /Mode: (standalone|leader|follower)/.test(await fourLetterWord(port, 'srvr'));
}

/** True when the shared ZooKeeper serves; otherwise fails the test in CI and skips it on a laptop. */
export async function zookeeperUp(t: TestContext): Promise<boolean> {
  if (await serving(2181)) return true;
  serviceMissing(t, 'ZooKeeper', `${ZOOKEEPER} does not answer 'srvr'; run scripts/services.sh`);
  return false;
}

/** True when the shared etcd is healthy; otherwise fails the test in CI and skips it on a laptop. */
export async function etcdUp(t: TestContext): Promise<boolean> {
  try {
    const response = await fetch(`${ETCD}/health`, { signal: AbortSignal.timeout(1000) });
    if ((await response.text()).includes('"health":"true"')) return true;
  } catch {}
  serviceMissing(t, 'etcd', `${ETCD}/health does not answer; run scripts/services.sh`);
  return false;
}

/** A client of the shared ZooKeeper for what tests do directly (other nodes, inspection). */
export function zookeeperClient(connect = ZOOKEEPER): Promise<ZooKeeperClient> {
  return ZooKeeperClient.connect({ connect, sessionTimeoutMs: 4000, timeoutMs: 5000, clock: systemClock });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';

/**
 * A ZooKeeper of a test's own on a free port, for tests that stop and start it: the shared one on
 * 2181 serves other test files at the same time. Same settings as scripts/services.sh.
 */
export class ZooKeeperServer {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  get connect(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Undefined (and the test failed in CI or skipped) when Java or ZooKeeper's jar is missing. */
  static async start(t: TestContext): Promise<ZooKeeperServer | undefined> {
    if (!existsSync(ZOOKEEPER_JAR)) {
      serviceMissing(t, 'ZooKeeper', `${ZOOKEEPER_JAR} is missing; run scripts/services.sh`);
      return undefined;
    }
    const dir = tempDir('frond-zk-');
    const port = await freePort();
    mkdirSync(join(dir, 'data'));
    writeFileSync(
      join(dir, 'zoo.cfg'),
      [
        'tickTime=500',
        `dataDir=${join(dir, 'data')}`,
        `clientPort=${port}`,
        'clientPortAddress=127.0.0.1',
        'admin.enableServer=false',
        '4lw.commands.whitelist=ruok,srvr,stat,mntr',
        'minSessionTimeout=1000',
        'maxSessionTimeout=60000',
        'maxClientCnxns=0',
        '',
      ].join('\n'),
    );
    const server = new ZooKeeperServer(port, dir);
    t.after(() => server.stop());
    await server.resume();
    return server;
  }

  /** Starts (again, on the same port and data) and waits until it serves: 0.3-0.6 s measured, 20 s bound. */
  async resume(): Promise<void> {
    this.child = spawn(
      'java',
      [
        '-Xmx128m',
        '-XX:+UseSerialGC',
        '-cp',
        `${ZOOKEEPER_JAR}:/usr/share/java/slf4j-nop.jar`,
        'org.apache.zookeeper.server.ZooKeeperServerMain',
        join(this.dir, 'zoo.cfg'),
      ],
      { stdio: 'ignore' },
    );
    for (let waited = 0; waited < 20_000; waited += 100) {
      if (await serving(this.port)) return;
      if (this.child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`ZooKeeper on ${this.port} did not start`);
  }

  /** SIGKILL, as a crash; resolves once the process is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/** `frond serve` in Leaf mode on ZooKeeper `connect`, snowflake only, identity 127.0.0.1:`port`. */
export function leafModeArgs(
  connect: string,
  name: string,
  port: number,
  dataDir: string,
  extra: string[] = [],
): string[] {
  return [
    '--port',
    '0',
    '--no-segment',
    '--zk',
    connect,
    '--name',
    name,
    '--advertise',
    `127.0.0.1:${port}`,
    '--data-dir',
    dataDir,
    // Leaf's worker cache beside the data dir, not in /tmp.
    '--leaf-tmpdir',
    `${dataDir}/leaf-tmpdir`,
    ...extra,
  ];
}
