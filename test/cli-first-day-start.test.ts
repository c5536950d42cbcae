// Issue 25, "A first day without traps", continued: a start that cannot work is one line on stderr
// and a non-zero exit within seconds, naming what to fix, for the files of the data dir, the files
// a setting names (TLS, config files, `*_FILE` variables, a store URL's TLS files), a store that
// snowflake mode alone does not use, and a `--workers` node whose worker fails at start. Each runs
// the real executable (cli-first-day.test.ts has the rest).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCK_FILE } from '../src/server/start/data-dir-lock.js';
import { HIGH_WATER_FILE, HIGH_WATER_JOURNAL } from '../src/stores/fencing/high-water-file.js';
import { WORKER_FILE } from '../src/worker-ids/file/file-worker-id-source.js';
import {
  assertOneLineError,
  asUnprivileged,
  escaped,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';

/** Each file frond keeps in the data dir, with a start that reads it first and how it is read. */
const DATA_FILES = [
  { file: LOCK_FILE, args: [], verb: 'read', text: '999999\n' },
  { file: WORKER_FILE, args: ['--no-segment'], verb: 'read', text: '{"workerId":7,"lastTimestamp":1}\n' },
  { file: HIGH_WATER_FILE, args: ['--no-snowflake'], verb: 'read', text: '{"version":1,"stores":{}}\n' },
  // The journal is opened to be appended to, so one that can be read but not written stops the start too.
  { file: HIGH_WATER_JOURNAL, args: ['--no-snowflake'], verb: 'open', text: '' },
] as const;

/** A start that fails is one line and exit `code` within seconds (a hang fails it too). */
async function failedStart(args: string[], code: number, pattern: RegExp, env: NodeJS.ProcessEnv = {}) {
  const started = Date.now();
  const result = await runFrond(['serve', '--port', '0', ...args], { env, timeoutMs: 30_000 });
  assertOneLineError(result, code, pattern);
  assert.ok(Date.now() - started < 20_000, `within seconds: ${Date.now() - started} ms`);
  return result;
}

describe('a file of the data dir that cannot be read names the file and --data-dir (issue 25)', () => {
  it('a directory where frond keeps a file: the lock, the worker-ID record, the high-water and its journal', async () => {
    for (const { file, args, verb } of DATA_FILES) {
      const dataDir = tempDir();
      const path = join(dataDir, file);
      mkdirSync(path);
      await failedStart(
        ['--data-dir', dataDir, ...args],
        2,
        new RegExp(
          `^frond: --data-dir ${escaped(dataDir)}: cannot ${verb} ${escaped(path)} \\(it is a directory, EISDIR\\); move it away`,
        ),
      );
    }
  });

  it('as a user that may not read one (mode 000), or may read the journal but not append to it (0444)', async (t) => {
    const cases = [
      ...DATA_FILES.map((entry) => ({ ...entry, mode: 0o000 })),
      { ...(DATA_FILES[3] as (typeof DATA_FILES)[number]), mode: 0o444 },
    ];
    for (const { file, args, verb, text, mode } of cases) {
      // Reachable and writable for that user: only the one file is not theirs.
      const parent = tempDir();
      chmodSync(parent, 0o755);
      const dataDir = join(parent, 'data');
      mkdirSync(dataDir, { mode: 0o777 });
      chmodSync(dataDir, 0o777);
      const path = join(dataDir, file);
      writeFileSync(path, text, { mode });
      chmodSync(path, mode);
      const run = asUnprivileged(['serve', '--port', '0', '--data-dir', dataDir, ...args]);
      if (run === undefined) return t.skip('root without runuser: cannot run frond as another user');
      assertOneLineError(
        await run,
        2,
        new RegExp(
          `^frond: --data-dir ${escaped(dataDir)}: cannot ${verb} ${escaped(path)} \\(permission denied, EACCES\\); give this user read and write access to it`,
        ),
      );
    }
  });
});

/**
 * Each file a setting of `frond serve` names for it to read, as a flag or a variable: the setting as
 * the line names it, and what the line asks for instead. `at(path)` gives the file at that path.
 */
const GIVEN_FILES: {
  setting: string;
  what: string;
  at(path: string, pem: { cert: string; key: string }): { args: string[]; env?: NodeJS.ProcessEnv };
}[] = [
  {
    setting: '--tls-key',
    what: 'the PEM private key of --tls-cert',
    at: (path, pem) => ({ args: ['--tls-key', path, '--tls-cert', pem.cert] }),
  },
  {
    setting: '--tls-cert',
    what: 'the PEM certificate',
    at: (path, pem) => ({ args: ['--tls-cert', path, '--tls-key', pem.key] }),
  },
  { setting: '--config', what: 'a JSON file of settings', at: (path) => ({ args: ['--config', path] }) },
  {
    setting: '--leaf-config',
    what: "Leaf's leaf.properties",
    at: (path) => ({ args: ['--leaf-config', path] }),
  },
  ...['FROND_STORE', 'FROND_TOKEN', 'FROND_ADMIN_TOKEN'].map((variable) => ({
    setting: `${variable}_FILE=`,
    what: `a file holding the value of ${variable}`,
    at: (path: string) => ({ args: [], env: { [`${variable}_FILE`]: path } }),
  })),
  {
    setting: 'FROND_OPAQUE_SECRET_FILE',
    what: 'a file holding the opaque-ID secret',
    at: (path) => ({ args: [], env: { FROND_OPAQUE_SECRET_FILE: path } }),
  },
];

/** An EC key and a self-signed certificate for it, made with openssl, both readable by anyone. */
function selfSigned(dir: string): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key];
  execFileSync('openssl', ['req', '-x509', ...newKey, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'], {
    stdio: 'ignore',
  });
  chmodSync(dir, 0o755);
  chmodSync(key, 0o644);
  return { cert, key };
}

/** The setting's value as the line shows it: `--tls-key /x`, `FROND_STORE_FILE="/x"`. */
function shownSetting(setting: string, path: string): string {
  if (setting.endsWith('=')) return `${setting}${JSON.stringify(path)}`;
  return `${setting} ${path}`;
}

describe('a file a setting names that cannot be read names the setting, in words (issue 25)', () => {
  it('none at the path, or a directory: each flag and variable, before anything is written', async () => {
    const pem = selfSigned(tempDir());
    const missing = join(tempDir(), 'nonexistent');
    const folder = tempDir();
    for (const { setting, what, at } of GIVEN_FILES) {
      for (const [path, reason] of [
        [missing, 'no such file'],
        [folder, 'it is a directory \\(EISDIR\\)'],
      ] as const) {
        // The secret is read by segment mode only; --workers 2 has the primary read the files first.
        for (const workers of setting.startsWith('--tls') ? [[], ['--workers', '2']] : [[]]) {
          const dataDir = join(tempDir(), 'data');
          const { args, env = {} } = at(path, pem);
          await failedStart(
            ['--data-dir', dataDir, ...args, ...workers],
            2,
            new RegExp(
              `^frond: ${escaped(shownSetting(setting, path))}: ${reason}; give the path of ${escaped(what)}`,
            ),
            env,
          );
          assert.equal(existsSync(dataDir), false, `no data dir was made (${setting} ${reason})`);
        }
      }
    }
  });

  it('as a user that may not read it (mode 000)', async (t) => {
    const pem = selfSigned(tempDir());
    for (const { setting, at } of GIVEN_FILES.filter((entry) => entry.setting.startsWith('--'))) {
      // Reachable for that user: only the file itself is not theirs.
      const parent = tempDir();
      chmodSync(parent, 0o755);
      const path = join(parent, 'file');
      writeFileSync(path, '', { mode: 0o000 });
      chmodSync(path, 0o000);
      const { args } = at(path, pem);
      const run = asUnprivileged(['serve', '--port', '0', '--data-dir', join(parent, 'data'), ...args]);
      if (run === undefined) return t.skip('root without runuser: cannot run frond as another user');
      assertOneLineError(
        await run,
        2,
        new RegExp(
          `^frond: ${escaped(`${setting} ${path}`)}: permission denied \\(EACCES\\); give this user read access to it`,
        ),
      );
    }
  });
});

describe('a --tls-cert or --tls-key that HTTPS cannot use is one line naming the flag (issue 25)', () => {
  it('no PEM key or certificate in it, an encrypted key, or a key and a certificate not of each other', async () => {
    const dir = tempDir();
    const pem = selfSigned(join(dir, 'ours'));
    const other = selfSigned(join(dir, 'other'));
    const junk = join(dir, 'junk.txt');
    writeFileSync(junk, 'not a PEM file\n');
    const encrypted = join(dir, 'encrypted-key.pem');
    execFileSync('openssl', ['pkey', '-in', pem.key, '-aes256', '-passout', 'pass:x', '-out', encrypted]);
    const cases: [{ cert: string; key: string }, RegExp][] = [
      [
        { cert: pem.cert, key: junk },
        new RegExp(
          `^frond: --tls-key ${escaped(junk)} holds no private key frond can read: give the path of the PEM private key`,
        ),
      ],
      // A certificate where the key should be.
      [
        { cert: pem.cert, key: pem.cert },
        new RegExp(`^frond: --tls-key ${escaped(pem.cert)} holds no private key frond can read`),
      ],
      [
        { cert: junk, key: pem.key },
        new RegExp(
          `^frond: --tls-cert ${escaped(junk)} holds no certificate frond can read: give the path of the PEM certificate`,
        ),
      ],
      [
        { cert: other.cert, key: pem.key },
        new RegExp(
          `^frond: --tls-key ${escaped(pem.key)} is not the key of --tls-cert ${escaped(other.cert)}: give the key the certificate was made for$`,
        ),
      ],
      [
        { cert: pem.cert, key: encrypted },
        new RegExp(
          `^frond: --tls-key ${escaped(encrypted)} is encrypted, and frond takes no passphrase: give it decrypted`,
        ),
      ],
    ];
    for (const [{ cert, key }, pattern] of cases) {
      for (const workers of [[], ['--workers', '2']]) {
        const dataDir = join(tempDir(), 'data');
        await failedStart(
          ['--data-dir', dataDir, '--tls-cert', cert, '--tls-key', key, ...workers],
          2,
          pattern,
        );
        assert.equal(existsSync(dataDir), false, `no data dir was made (${cert} ${key})`);
      }
    }
  });
});

describe('a TLS file a --store URL names is read before anything is written (issue 25)', () => {
  it('names --store and the parameter, for PostgreSQL and MySQL, from --store or FROND_STORE', async () => {
    const missing = join(tempDir(), 'nonexistent.pem');
    const folder = tempDir();
    const cases: {
      store: string;
      described: string;
      parameter: string;
      path: string;
      reason: string;
      what: string;
    }[] = [
      {
        store: `postgres://u:secret@db.example:5432/ids?sslmode=verify-full&sslrootcert=${missing}`,
        described: 'postgres://u@db.example:5432/ids',
        parameter: 'sslrootcert',
        path: missing,
        reason: 'no such file',
        what: 'the PEM file of the CAs',
      },
      {
        store: `postgres://u@db.example/ids?sslmode=require&sslcert=${folder}&sslkey=${missing}`,
        described: 'postgres://u@db.example:5432/ids',
        parameter: 'sslcert',
        path: folder,
        reason: 'it is a directory \\(EISDIR\\)',
        what: 'the PEM client certificate',
      },
      {
        store: `mysql://u:secret@db.example:3306/ids?ssl-mode=VERIFY_CA&ssl-ca=${missing}`,
        described: 'mysql://u@db.example:3306/ids',
        parameter: 'ssl-ca',
        path: missing,
        reason: 'no such file',
        what: 'the PEM file of the CAs',
      },
    ];
    for (const { store, described, parameter, path, reason, what } of cases) {
      for (const [args, env] of [
        [['--store', store], {}],
        [[], { FROND_STORE: store }],
      ] as const) {
        const dataDir = join(tempDir(), 'data');
        const result = await failedStart(
          ['--data-dir', dataDir, ...args],
          2,
          new RegExp(
            `^frond: --store ${escaped(described)}: ${parameter}=${escaped(path)}: ${reason}; give the path of ${escaped(what)}`,
          ),
          env,
        );
        assert.doesNotMatch(result.stderr, /secret/);
        assert.equal(existsSync(dataDir), false, `no data dir was made (${store})`);
      }
    }
  });
});

describe('frond serve --no-segment with a --store (issue 25)', () => {
  it('serves snowflake IDs without opening the store, wherever it points, and says it is unused', async () => {
    const nowhere = join(tempDir(), 'nonexistent');
    const stores = [
      'postgres://postgres@127.0.0.1:1/test', // nothing listens there
      'mysql://root@127.0.0.1:3306/test',
      `sqlite:${join(nowhere, 'ids.db')}`,
    ];
    const starts: { args: string[]; env: NodeJS.ProcessEnv; from: string; off: string }[] = [
      ...stores.map((store) => ({
        args: ['--no-segment', '--store', store],
        env: {},
        from: '--store',
        off: '--no-segment',
      })),
      {
        args: [],
        env: { FROND_STORE: stores[0], FROND_NO_SEGMENT: 'true' },
        from: 'FROND_STORE',
        off: 'FROND_NO_SEGMENT',
      },
    ];
    for (const { args, env, from, off } of starts) {
      const node = await startFrond(['--port', '0', '--data-dir', tempDir(), ...args], {
        env,
        timeoutMs: 20_000,
      });
      try {
        const events = node.logs.map(
          (line) => JSON.parse(line) as { event: string; message?: string; segment?: string },
        );
        assert.deepEqual(
          events.filter((event) => event.event === 'config.warning').map((event) => event.message),
          [`${from} is not used: segment mode is off (${off}), and snowflake mode needs no store`],
        );
        assert.equal(events.find((event) => event.event === 'listening')?.segment, 'off');
        const response = await fetch(`${node.url}/api/snowflake/get/k`);
        assert.match(await response.text(), /^\d+$/);
      } finally {
        assert.equal(await node.stop(), 0, node.stderr.join('\n'));
      }
    }
    assert.equal(existsSync(nowhere), false, 'the SQLite store was never opened');
  });

  it('still refuses a --store value that cannot work, before it takes the port or makes the data dir', async () => {
    const refused: [string, RegExp][] = [
      [
        'postgres://frond:secret@[bad/ids',
        /^frond: --store "postgres:\/\/\*\*\*@\[bad\/ids" is not a valid URL: use postgres:\/\/USER@HOST:PORT\/DB$/,
      ],
      [
        'mysql://root@127.0.0.1:3306/test?pool=0',
        /^frond: --store mysql:\/\/\*\*\*@127\.0\.0\.1:3306\/test\?pool=0: pool="0" is invalid/,
      ],
      ['bogus://x', /^frond: unsupported --store "bogus:\/\/x": use sqlite:PATH/],
      ['sqlite:', /^frond: --store sqlite: needs a path/],
    ];
    for (const mode of [['--no-segment'], []]) {
      for (const [store, pattern] of refused) {
        const dataDir = join(tempDir(), 'data');
        const result = await failedStart(['--data-dir', dataDir, '--store', store, ...mode], 2, pattern);
        assert.doesNotMatch(result.stderr, /secret/);
        assert.equal(existsSync(dataDir), false, `no data dir was made (${store} ${mode.join(' ')})`);
      }
    }
  });
});

/** The events of a node's stdout, in order. */
function eventsOf(stdout: string[]): { event: string; worker?: number; pid: number }[] {
  return stdout.map((line) => JSON.parse(line) as { event: string; worker?: number; pid: number });
}

describe('frond serve --workers starts only once every worker serves (issue 25)', () => {
  it('says listening after the workers serve, not when they bind the port', async () => {
    // Each worker's record lies 2 s ahead of the clock, so each waits that long after it bound the port.
    const dataDir = tempDir();
    for (const worker of [0, 1]) {
      const dir = join(dataDir, `worker-${worker}`);
      mkdirSync(dir);
      writeFileSync(
        join(dir, WORKER_FILE),
        JSON.stringify({ workerId: 40 + worker, lastTimestamp: Date.now() + 2_000 }),
      );
    }
    const started = Date.now();
    const node = await startFrond(['--port', '0', '--data-dir', dataDir, '--no-segment', '--workers', '2']);
    try {
      assert.ok(Date.now() - started >= 1_500, 'the start waited for the workers');
      const events = eventsOf(node.logs);
      const listening = events.findIndex((event) => event.event === 'listening');
      const served = events.filter((event, i) => event.event === 'worker.listening' && i < listening);
      assert.deepEqual(served.map((event) => event.worker).sort(), [0, 1], node.logs.join('\n'));
      assert.match(await (await fetch(`${node.url}/api/snowflake/get/k`)).text(), /^\d+$/);
    } finally {
      assert.equal(await node.stop(), 0, node.stderr.join('\n'));
    }
  });

  it('fails the whole start in one line when a worker fails after the others serve, or every worker does', async () => {
    // Worker i's record is a FIFO, fed garbage 1 s after the worker opened it: that worker fails
    // then ("is damaged"), after every worker bound the port and the others began to serve.
    for (const late of [[1], [0, 1]]) {
      const dataDir = tempDir();
      const records = late.map((worker) => {
        mkdirSync(join(dataDir, `worker-${worker}`));
        const record = join(dataDir, `worker-${worker}`, WORKER_FILE);
        execFileSync('mkfifo', [record]);
        return record;
      });
      const [result] = await Promise.all([
        failedStart(
          ['--data-dir', dataDir, '--no-segment', '--worker-id', '40', '--workers', '2'],
          2,
          new RegExp(`^frond: (${records.map(escaped).join('|')}) is damaged; restore it`),
        ),
        ...records.map((record) => feedWhenRead(record, 'garbage', 1_000)),
      ]);
      assert.equal(listeningLines(result.stdout), 0, result.stdout);
      assert.equal(existsSync(join(dataDir, LOCK_FILE)), false, "the node's lock is released");
    }
  });

  it('fails the whole start in one line when a worker fails right away, one of them or all alike', async () => {
    const cases: { prepare(dataDir: string): string[]; pattern(dataDir: string): RegExp }[] = [
      {
        prepare: (dataDir) => {
          writeFileSync(join(dataDir, 'worker-1'), '');
          return [];
        },
        pattern: (dataDir) =>
          new RegExp(
            `^frond: --data-dir ${escaped(join(dataDir, 'worker-1'))}: cannot create ${escaped(join(dataDir, 'worker-1'))} \\(is a file, not a directory, ENOTDIR\\)`,
          ),
      },
      {
        prepare: (dataDir) => {
          mkdirSync(join(dataDir, 'ids.db'));
          return ['--store', `sqlite:${join(dataDir, 'ids.db')}`];
        },
        pattern: (dataDir) =>
          new RegExp(
            `^frond: --store sqlite:${escaped(join(dataDir, 'ids.db'))}: cannot open .*SQLITE_CANTOPEN`,
          ),
      },
    ];
    for (const { prepare, pattern } of cases) {
      const dataDir = tempDir();
      const extra = prepare(dataDir);
      const result = await failedStart(
        ['--data-dir', dataDir, '--workers', '3', ...extra],
        2,
        pattern(dataDir),
      );
      assert.equal(listeningLines(result.stdout), 0, result.stdout);
      assert.equal(existsSync(join(dataDir, LOCK_FILE)), false, "the node's lock is released");
    }
  });
});

/** How many times a node's stdout says `listening` (the node's line, not a worker's). */
function listeningLines(stdout: string): number {
  return eventsOf(stdout.trim().split('\n')).filter((event) => event.event === 'listening').length;
}

/**
 * Writes `text` into the FIFO `path` `afterMs` after a reader opened it, then closes it. A worker
 * opens its record only once it bound the port, and the others bind within moments of it.
 */
async function feedWhenRead(path: string, text: string, afterMs: number): Promise<void> {
  let fd: number | undefined;
  for (const until = Date.now() + 20_000; fd === undefined; ) {
    try {
      // Without a reader, a FIFO opened to write without blocking fails with ENXIO.
      fd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENXIO' || Date.now() > until) throw error;
      await sleep(20);
    }
  }
  try {
    await sleep(afterMs);
    writeSync(fd, text);
  } finally {
    closeSync(fd);
  }
}
