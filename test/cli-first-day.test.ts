// Issue 25, "A first day without traps": the commands name the store they use and never make one
// silently, every command checks the FROND_ variables, `db fence` asks first, a start that cannot
// work says why in one line before it writes anything, and the small comforts (-p, -v, readable
// logs on a terminal). Each runs the real executable, on a real terminal (script(1)) where it matters.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { runFrond, tempDir } from './support/frond-process.js';

function assertOneLineError(
  result: { code: number | null; stderr: string },
  code: number,
  pattern: RegExp,
): void {
  assert.equal(result.code, code, result.stderr);
  const lines = result.stderr.trim().split('\n');
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(result.stderr, /\n\s+at /);
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

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
      `tag orders: step set to 500, used by running nodes from their next segment load (store ${store})\n`,
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
