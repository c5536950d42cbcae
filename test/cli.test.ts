import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SERVE_OPTIONS } from '../src/cli/option-table.js';
import { parseServeArgs } from '../src/cli/serve.js';
import { assertOneLineError, runFrond, tempDir } from './support/frond-process.js';

describe('frond CLI', () => {
  it('adds, lists and changes tags; a second add of the same tag fails with one line', async () => {
    const dataDir = tempDir();
    assert.equal((await runFrond(['db', 'init', '--data-dir', dataDir])).code, 0);
    const add = await runFrond([
      'tag',
      'add',
      'pay.order:v1',
      '--step',
      '500',
      '--start',
      '7',
      '--description',
      'orders',
      '--data-dir',
      dataDir,
    ]);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /added tag pay\.order:v1: first ID 7, step 500/);
    assertOneLineError(
      await runFrond(['tag', 'add', 'pay.order:v1', '--data-dir', dataDir]),
      1,
      /^frond: tag pay\.order:v1 already exists \(store sqlite:\/\S+\/frond\.db\)$/,
    );
    assert.equal((await runFrond(['tag', 'set-step', 'pay.order:v1', '900', '--data-dir', dataDir])).code, 0);
    const list = await runFrond(['tag', 'list', '--json', '--data-dir', dataDir]);
    assert.deepEqual(
      (JSON.parse(list.stdout) as { tag: string; maxId: string; step: number; description: string }[]).map(
        ({ tag, maxId, step, description }) => ({ tag, maxId, step, description }),
      ),
      [{ tag: 'pay.order:v1', maxId: '7', step: 900, description: 'orders' }],
    );
    const table = await runFrond(['tag', 'list', '--data-dir', dataDir]);
    assert.match(table.stdout, /^TAG\s+MAX_ID\s+STEP/);
    assertOneLineError(
      await runFrond(['tag', 'set-step', 'nope', '5', '--data-dir', dataDir]),
      1,
      /^frond: tag nope has no row/,
    );
  });

  it('decodes a snowflake ID', async () => {
    const result = await runFrond(['decode', '1256557484213448722']);
    assert.equal(result.code, 0);
    const parts = JSON.parse(result.stdout) as { workerId: number; sequence: number; time: string };
    assert.equal(parts.time, '2020-05-02T12:13:44.602Z');
    assert.equal(parts.workerId, 619);
    assert.equal(parts.sequence, 18);
  });

  it('answers every bad input with exit code 2 and one line saying what to fix', async () => {
    const dataDir = tempDir();
    const cases: [string[], RegExp][] = [
      [['serve', '--bogus'], /unknown option --bogus/],
      [['serve', '--port', '99999'], /--port "99999" is invalid/],
      [
        ['serve', '--worker-id', '1024', '--data-dir', dataDir],
        /--worker-id "1024" is invalid: use an integer from 0 to 1023/,
      ],
      [['serve', '--store', 'oracle://x', '--data-dir', dataDir], /unsupported --store/],
      [['serve', '--no-segment', '--no-snowflake'], /leave nothing to serve/],
      [['serve', '--log-level', 'loud'], /--log-level/],
      [['tag', 'add', 'bad\ttag', '--data-dir', dataDir], /invalid tag "bad\\ttag"/],
      [['tag', 'add', 'ok', '--start', '1e3', '--data-dir', dataDir], /--start "1e3" is not an integer/],
      [
        ['tag', 'add', 'ok', '--start', '9223372036854775800', '--data-dir', dataDir],
        /invalid start 9223372036854775800/,
      ],
      [['tag', 'add', 'ok', '--step', '0', '--data-dir', dataDir], /--step "0" is invalid/],
      [['tag', 'add'], /needs <tag>/],
      [['tag', 'frobnicate'], /needs add, list, gaps, set-step or remove/],
      [['tag', 'set-step', 'ok', 'many', '--data-dir', dataDir], /step "many" is invalid/],
      [['decode', 'xyz'], /invalid snowflake ID/],
      [['launch'], /unknown command "launch"/],
      // Typos get a suggestion; a negative number gets the bounds, not the parser's words (item 18).
      [['serv'], /unknown command "serv" \(did you mean serve\?\)/],
      [['serve', '--prot', '8080'], /unknown option --prot for 'frond serve' \(did you mean --port\?\)/],
      [['tag', 'ad', 'x'], /not "ad" \(did you mean add\?\)/],
      [['serve', '--port', '-1'], /--port "-1" is invalid: use an integer from 0 to 65535/],
      [['serve', '--port', '--host', 'x'], /--port needs a value/],
      // An empty or blank token is no token: the ID endpoints would be open (item 7).
      [['serve', '--token', ''], /--token has an empty or blank value/],
      [['serve', '--token', ' '], /--token has an empty or blank value/],
      [['serve', '--token', 'ok', '--token', ''], /--token has an empty or blank value/],
      [['serve', '--token', 'a b'], /--token holds whitespace/],
      [['serve', '--admin-token', ''], /--admin-token is empty or blank/],
      // GRANTs are printed for an administrator, for an account of a database server.
      [
        ['db', 'init', '--grant-to', 'leaf', '--store', 'mysql://x@h/db'],
        /--grant-to .*give it with --print/,
      ],
      [
        ['db', 'init', '--print', '--grant-to', 'leaf', '--data-dir', dataDir],
        /a sqlite store has no accounts/,
      ],
      [['db', 'init', '--print', '--grant-to', "a'b", '--store', 'mysql://x@h/db'], /is not a MySQL account/],
      [
        ['db', 'init', '--print', '--grant-to', 'a\nb', '--store', 'postgres://x@h/db'],
        /is not a PostgreSQL role/,
      ],
    ];
    for (const [args, pattern] of cases) assertOneLineError(await runFrond(args), 2, pattern);
    assertOneLineError(
      await runFrond(['serve'], { env: { FROND_PORT: 'eighty' } }),
      2,
      /FROND_PORT "eighty" is invalid/,
    );
    assertOneLineError(
      await runFrond(['serve'], { env: { FROND_TOKEN: ',' } }),
      2,
      /FROND_TOKEN has an empty or blank value/,
    );
    assertOneLineError(
      await runFrond(['serve'], { env: { FROND_PROT: '1' } }),
      2,
      /unknown environment variable FROND_PROT .*\(did you mean FROND_PORT\?\)/,
    );
    const config = join(dataDir, 'frond.json');
    writeFileSync(config, JSON.stringify({ token: [''] }));
    assertOneLineError(await runFrond(['serve', '--config', config]), 2, /token has an empty or blank value/);
    writeFileSync(config, JSON.stringify({ prot: 1 }));
    assertOneLineError(
      await runFrond(['serve', '--config', config]),
      2,
      /unknown key "prot" \(did you mean port\?\)/,
    );
  });

  it('stops the start in one line when the SQLite file is not a database (the store opens before serving)', async () => {
    const dir = tempDir();
    const file = join(dir, 'not-a-database.db');
    writeFileSync(file, 'this is not SQLite '.repeat(20));
    const result = await runFrond(['serve', '--port', '0', '--data-dir', dir, '--store', `sqlite:${file}`]);
    assert.notEqual(result.code, 0);
    assert.match(
      result.stderr,
      /^frond: --store sqlite:\S+: cannot open \S+ \(file is not a database, SQLITE_NOTADB\)[^\n]*\n$/,
    );
  });

  it("never splits a flag's token at commas; only FROND_TOKEN is a comma list (item 7)", () => {
    assert.deepEqual(parseServeArgs(['--token', 'abc,def'], {}).tokens, ['abc,def']);
    assert.deepEqual(parseServeArgs(['--token', 'a', '--token', 'b,c'], {}).tokens, ['a', 'b,c']);
    assert.deepEqual(parseServeArgs([], { FROND_TOKEN: 'a, b' }).tokens, ['a', 'b']);
  });

  it('prints help and the version', async () => {
    const help = await runFrond(['help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /frond serve/);
    assert.match((await runFrond(['--version'])).stdout, /^\d+\.\d+\.\d+/);
  });

  it('answers --help and -h for every command with its options, exit code 0', async () => {
    const serve = await runFrond(['serve', '--help']);
    assert.equal(serve.code, 0, serve.stderr);
    for (const entry of SERVE_OPTIONS) {
      const flags = entry.short === undefined ? `--${entry.flag}` : `-${entry.short}, --${entry.flag}`;
      assert.match(serve.stdout, new RegExp(`^  ${flags}\\b`, 'm'), flags);
      if (entry.env !== null) assert.ok(serve.stdout.includes(entry.env), entry.env);
    }
    const cases: [string[], RegExp][] = [
      [['tag', 'add', '-h'], /^frond tag add <tag> .*--step N/],
      [['tag', '--help'], /^frond tag add [\s\S]*^frond tag list [\s\S]*^frond tag set-step <tag> <step>/m],
      [['db', 'init', '--help'], /^frond db init .*--print/],
      [['decode', '--help'], /^frond decode <id> \[--epoch MS\]/],
      [['help', 'serve'], /^frond serve \[--host HOST\]/],
    ];
    for (const [args, pattern] of cases) {
      const result = await runFrond(args);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, pattern, args.join(' '));
    }
  });
});
