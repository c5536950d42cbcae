// Issue 25, "A first day without traps": the commands name the store they use and never make one
// silently, every command checks the FROND_ variables, `db fence` asks first, a start that cannot
// work says why in one line before it writes anything, and the small comforts (-p, -v, readable
// logs on a terminal). Each runs the real executable, on a real terminal (script(1)) where it matters.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import {
  assertOneLineError,
  asUnprivileged,
  escaped,
  FROND_BIN,
  runFrond,
  startFrond,
  tempDir,
} from './support/frond-process.js';
import { onTerminal, type Running, watch } from './support/terminal.js';

/** `max_id` of every row of an SQLite store, read beside frond. */
function maxIds(file: string): Record<string, bigint> {
  const db = new Database(file, { readonly: true });
  try {
    db.defaultSafeIntegers(true);
    const rows = db.prepare('SELECT biz_tag, max_id FROM leaf_alloc ORDER BY biz_tag').all() as {
      biz_tag: string;
      max_id: bigint;
    }[];
    return Object.fromEntries(rows.map((row) => [row.biz_tag, row.max_id]));
  } finally {
    db.close();
  }
}

/** A store with tags `a` and `b`, made the way an operator makes one. */
async function storeWithTags(): Promise<{ dir: string; file: string }> {
  const dir = tempDir();
  for (const args of [
    ['db', 'init', '--data-dir', dir],
    ['tag', 'add', 'a', '--data-dir', dir],
    ['tag', 'add', 'b', '--data-dir', dir],
  ]) {
    const result = await runFrond(args);
    assert.equal(result.code, 0, result.stderr);
  }
  return { dir, file: join(dir, 'frond.db') };
}

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `frond ARGS` with its output in pipes, as under a supervisor. */
function inPipes(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  return watch(
    spawn(process.execPath, [FROND_BIN, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    }),
  );
}

const SECRET = { FROND_OPAQUE_SECRET: 'ab'.repeat(32) };

describe('frond tag, db and decode name their store and never make one silently (issue 25, item 2)', () => {
  it('refuses every command but db init on an SQLite file that does not exist, and creates nothing', async () => {
    const cwd = tempDir();
    const missing = join(tempDir(), 'nonexistent');
    const commands = [
      ['tag', 'list'],
      ['tag', 'list', '--json'],
      ['tag', 'add', 'fromelsewhere'],
      ['tag', 'set-step', 'fromelsewhere', '5'],
      ['db', 'fence'],
      ['decode', '--tag', 'fromelsewhere', '123'],
    ];
    const fix =
      /: the file does not exist; pass --data-dir or --store to name the existing store, or create this one with 'frond db init'$/;
    for (const args of commands) {
      const here = await runFrond(args, { cwd, env: SECRET });
      assertOneLineError(
        here,
        2,
        new RegExp(
          `^frond: no store at sqlite:${escaped(join(cwd, 'data', 'frond.db'))} \\(the default --data-dir ./data\\)`,
        ),
      );
      assert.match(here.stderr.trim(), fix);
      const there = await runFrond([...args, '--data-dir', missing], { cwd, env: SECRET });
      assertOneLineError(
        there,
        2,
        new RegExp(`^frond: no store at sqlite:${escaped(join(missing, 'frond.db'))} \\(--data-dir\\)`),
      );
      const relative = await runFrond([...args, '--store', 'sqlite:ids.db'], { cwd, env: SECRET });
      assertOneLineError(
        relative,
        2,
        new RegExp(`^frond: no store at sqlite:${escaped(join(cwd, 'ids.db'))} \\(--store\\)`),
      );
    }
    assert.deepEqual(readdirSync(cwd), [], 'nothing was created in the current directory');
    assert.equal(existsSync(missing), false, 'the data dir was not created');
  });

  it('creates a store only with db init, and names it, its path absolute, in every answer', async () => {
    const cwd = tempDir();
    const store = `sqlite:${join(cwd, 'data', 'frond.db')}`;
    const run = (...args: string[]) => runFrond([...args, '--data-dir', 'data'], { cwd });
    const init = await run('db', 'init');
    assert.equal(init.code, 0, init.stderr);
    assert.equal(init.stdout, `created leaf_alloc in ${store}\n`);
    const add = await run('tag', 'add', 'orders');
    assert.equal(add.code, 0, add.stderr);
    assert.equal(add.stdout, `added tag orders: first ID 1, step 1000 (store ${store})\n`);
    const step = await run('tag', 'set-step', 'orders', '500');
    assert.equal(step.code, 0, step.stderr);
    assert.equal(
      step.stdout,
      `tag orders: step set to 500: the length of a node's first two segments of the tag, and the floor of its dynamic step from its next segment load (store ${store})\n`,
    );
    const table = await run('tag', 'list');
    assert.equal(table.code, 0, table.stderr);
    assert.equal(table.stderr, `store: ${store}\n`);
    assert.match(table.stdout, /^TAG +MAX_ID +STEP[^\n]*\norders +1 +500 /);
    const json = await run('tag', 'list', '--json');
    assert.equal(json.stderr, `store: ${store}\n`);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { tag: string }[]).map((row) => row.tag),
      ['orders'],
    );
    assertOneLineError(
      await run('tag', 'add', 'orders'),
      1,
      new RegExp(`^frond: tag orders already exists \\(store ${escaped(store)}\\)$`),
    );
    assertOneLineError(
      await run('tag', 'set-step', 'nope', '5'),
      1,
      new RegExp(`^frond: tag nope has no row.* \\(store ${escaped(store)}\\)$`),
    );
    const again = await run('db', 'init');
    assert.equal(again.stdout, `leaf_alloc is ready in ${store} (left as it was)\n`);
  });
});

describe('every command checks the FROND_ variables, as serve does (issue 25, item 3)', () => {
  it("refuses a mistyped variable with a suggestion, and reads on past another command's variable", async () => {
    const { dir, file } = await storeWithTags();
    const env = { FROND_STROE: 'postgres://frond@127.0.0.1:1/ids' };
    for (const args of [
      ['serve', '--port', '0', '--data-dir', dir],
      ['tag', 'list', '--data-dir', dir],
      ['tag', 'add', 'typo', '--data-dir', dir],
      ['tag', 'set-step', 'a', '5', '--data-dir', dir],
      ['db', 'init', '--data-dir', dir],
      ['db', 'fence', '--data-dir', dir],
      ['decode', '1256557484213448722'],
    ]) {
      assertOneLineError(
        await runFrond(args, { env }),
        2,
        new RegExp(
          `^frond: unknown environment variable FROND_STROE for 'frond ${args[0] === 'serve' || args[0] === 'decode' ? args[0] : `${args[0]} ${args[1]}`}' \\(did you mean FROND_STORE\\?\\)`,
        ),
      );
    }
    assert.deepEqual(Object.keys(maxIds(file)), ['a', 'b'], 'no tag was added');
    assert.deepEqual(maxIds(file), { a: 1n, b: 1n }, 'no step changed, nothing fenced');
    // One environment for every command: FROND_PORT is serve's, and tag list goes on.
    const listed = await runFrond(['tag', 'list', '--json', '--data-dir', dir], {
      env: { FROND_PORT: '9000' },
    });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal((JSON.parse(listed.stdout) as unknown[]).length, 2);
  });
});

describe('frond db fence says what it will do and asks first (issue 25, item 5)', () => {
  it('refuses without --yes where no one can answer, and changes nothing; --yes fences', async () => {
    const { dir, file } = await storeWithTags();
    const store = `sqlite:${file}`;
    assertOneLineError(
      await runFrond(['db', 'fence', '--data-dir', dir]),
      2,
      new RegExp(
        `^frond: db fence would raise 2 tags by 1000000000 in ${escaped(store)}, which cannot be undone: add --yes to do it$`,
      ),
    );
    assert.deepEqual(maxIds(file), { a: 1n, b: 1n });
    const fenced = await runFrond(['db', 'fence', '--yes', '--fence-skip', '1000', '--data-dir', dir]);
    assert.equal(fenced.code, 0, fenced.stderr);
    assert.match(
      fenced.stdout,
      new RegExp(
        `^fenced ${escaped(store)}: 2 tags raised by 1000 \\(and the records of removed tags and of new names\\), epoch \\d+`,
      ),
    );
    assert.deepEqual(maxIds(file), { a: 1001n, b: 1001n });
  });

  it('on a terminal, says how many tags by how much on which store, and fences only on y', async () => {
    const { dir, file } = await storeWithTags();
    const store = `sqlite:${file}`;
    const declined = onTerminal(['db', 'fence', '--fence-skip', '1000', '--data-dir', dir]);
    const asked = await declined.waitFor(/\[y\/N\] $/);
    assert.match(
      asked,
      new RegExp(
        `db fence raises 2 tags by 1000 in ${escaped(store)} and starts a new fence epoch: this cannot be undone\\n`,
      ),
    );
    declined.write('n\n');
    assert.equal(await declined.exit(), 1, declined.output());
    assert.match(declined.output(), /frond: not fenced: nothing changed\n$/);
    assert.deepEqual(maxIds(file), { a: 1n, b: 1n });

    const confirmed = onTerminal(['db', 'fence', '--fence-skip', '1000', '--data-dir', dir]);
    await confirmed.waitFor(/\[y\/N\] $/);
    confirmed.write('y\n');
    assert.equal(await confirmed.exit(), 0, confirmed.output());
    assert.match(confirmed.output(), new RegExp(`fenced ${escaped(store)}: 2 tags raised by 1000`));
    assert.deepEqual(maxIds(file), { a: 1001n, b: 1001n });
  });
});

describe('a start that cannot work says why in one line, fast, before it writes anything (issue 25, item 6)', () => {
  it('listens first: a port in use stops the start and leaves the data dir untouched, --workers too', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = blocker.address() as { port: number };
      for (const extra of [[], ['--workers', '2']]) {
        const dataDir = join(tempDir(), 'data');
        const started = Date.now();
        const result = await runFrond(['serve', '--port', String(port), '--data-dir', dataDir, ...extra]);
        assertOneLineError(
          result,
          2,
          new RegExp(`^frond: port ${port} on 127\\.0\\.0\\.1 is in use \\(--port\\)$`),
        );
        assert.equal(existsSync(dataDir), false, `no data dir was made (${extra.join(' ')})`);
        assert.ok(Date.now() - started < 20_000, 'within seconds');
      }
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('names the setting and the path when the SQLite store cannot be opened', async () => {
    const dataDir = tempDir();
    mkdirSync(join(dataDir, 'frond.db'));
    const elsewhere = tempDir();
    assertOneLineError(
      await runFrond(['serve', '--port', '0', '--data-dir', dataDir]),
      2,
      new RegExp(
        `^frond: --data-dir ${escaped(dataDir)}: cannot open ${escaped(join(dataDir, 'frond.db'))} \\(unable to open database file, SQLITE_CANTOPEN\\)`,
      ),
    );
    assertOneLineError(
      await runFrond(['serve', '--port', '0', '--data-dir', tempDir(), '--store', `sqlite:${elsewhere}`]),
      2,
      new RegExp(
        `^frond: --store sqlite:${escaped(elsewhere)}: cannot open ${escaped(elsewhere)} \\(unable to open database file, SQLITE_CANTOPEN\\)`,
      ),
    );
    assertOneLineError(
      await runFrond(['tag', 'list', '--data-dir', dataDir]),
      2,
      new RegExp(
        `^frond: --data-dir ${escaped(dataDir)}: cannot open ${escaped(join(dataDir, 'frond.db'))} `,
      ),
    );
  });

  it('names --data-dir when it cannot be written, and the file when the store is read-only', async (t) => {
    const locked = tempDir();
    const { dir, file } = await storeWithTags();
    // Readable by all, writable by none but root: what a user meets in a directory not theirs.
    for (const path of [locked, dir]) chmodSync(path, 0o755);
    chmodSync(file, 0o444);
    if (process.getuid?.() !== 0) chmodSync(locked, 0o555);
    const serve = asUnprivileged(['serve', '--port', '0', '--data-dir', locked]);
    if (serve === undefined) return t.skip('root without runuser: cannot run frond as another user');
    assertOneLineError(
      await serve,
      2,
      new RegExp(
        `^frond: --data-dir ${escaped(locked)}: cannot write in it \\(permission denied, EACCES\\); give a directory this user can write$`,
      ),
    );
    assert.deepEqual(readdirSync(locked), []);
    assertOneLineError(
      (await asUnprivileged(['tag', 'add', 'c', '--data-dir', dir])) as { code: number; stderr: string },
      2,
      new RegExp(
        `^frond: --data-dir ${escaped(dir)}: cannot write ${escaped(file)} \\(attempt to write a readonly database, SQLITE_READONLY`,
      ),
    );
  });
});

describe('short flags and readable logs (issue 25, item 9)', () => {
  it('takes -p for --port, -h for help and -v for the version', async () => {
    const version = await runFrond(['-v']);
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^\d+\.\d+\.\d+/);
    const help = await runFrond(['serve', '-h']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^ {2}-p, --port N /m);
    assertOneLineError(await runFrond(['serve', '-p', '99999']), 2, /--port "99999" is invalid/);
    assertOneLineError(await runFrond(['serve', '-p', '-1']), 2, /--port "-1" is invalid/);
    const port = await freePort();
    const node = await startFrond(['-p', String(port), '--data-dir', tempDir(), '--no-segment']);
    try {
      assert.equal(node.url, `http://127.0.0.1:${port}`);
    } finally {
      await node.stop();
    }
  });

  it('logs one plain line per event on a terminal and JSON lines in a pipe; --log-format forces either', async () => {
    const pretty = onTerminal(['serve', '--port', '0', '--data-dir', tempDir()]);
    const shown = await pretty.waitFor(/listening/);
    assert.match(
      shown,
      /^\d\d:\d\d:\d\d info {2}listening url=http:\/\/127\.0\.0\.1:\d+ segment=sqlite:\/\S+frond\.db snowflakeWorkerId=\d+ /m,
    );
    assert.doesNotMatch(shown, /"event"/);
    pretty.write('\x03'); // Ctrl-C: SIGINT from the terminal
    assert.equal(await pretty.exit(), 0, pretty.output());
    assert.match(pretty.output(), /^\d\d:\d\d:\d\d info {2}stopped$/m);

    const json = onTerminal(['serve', '--port', '0', '--data-dir', tempDir(), '--log-format', 'json']);
    const lines = await json.waitFor(/"listening"/);
    assert.equal(
      (JSON.parse(lines.split('\n').find((line) => line.includes('"listening"')) ?? '') as { event: string })
        .event,
      'listening',
    );
    json.write('\x03');
    assert.equal(await json.exit(), 0, json.output());

    const piped = inPipes(['serve', '--port', '0', '--data-dir', tempDir()], { FROND_LOG_FORMAT: 'pretty' });
    assert.match(await piped.waitFor(/listening/), /^\d\d:\d\d:\d\d info {2}listening url=/m);
    // In pipes no terminal sends Ctrl-C: SIGTERM, as a supervisor would.
    piped.signal('SIGTERM');
    assert.equal(await piped.exit(), 0, piped.output());
    assertOneLineError(
      await runFrond(['serve', '--log-format', 'fancy']),
      2,
      /--log-format "fancy" is invalid: use auto, json or pretty/,
    );
  });
});
