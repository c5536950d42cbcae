// Issue 25, "A first day without traps": the commands name the store they use and never make one
// silently, every command checks the FROND_ variables, `db fence` asks first, a start that cannot
// work says why in one line before it writes anything, and the small comforts (-p, -v, readable
// logs on a terminal). Each runs the real executable, on a real terminal (script(1)) where it matters.
import assert from 'node:assert/strict';
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
