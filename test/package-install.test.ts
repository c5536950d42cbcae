// Issue 17: both packages as an operator gets them. `npm pack` the server and @frond/client, install
// the tarballs into an empty folder with npm, run the installed `frond serve` and take IDs from it,
// over HTTP and through the installed client.
import assert from 'node:assert/strict';
import { type ExecFileOptions, execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { runNode, startFrond, tempDir } from './support/frond-process.js';
import { httpGet } from './support/http-get.js';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;
const ROOT_PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
const CLIENT_PACKAGE = JSON.parse(readFileSync(join(ROOT, 'packages/client/package.json'), 'utf8')) as Record<
  string,
  unknown
>;

/**
 * npm without what `npm test` passes down (npm_config_*, npm_package_*, INIT_CWD): a nested npm
 * would otherwise take this repository's prefix and workspace for its own.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD') env[key] = value;
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false' };
}

async function npm(args: string[], cwd: string, timeoutMs: number): Promise<string> {
  const options: ExecFileOptions = { cwd, env: npmEnv(), timeout: timeoutMs, maxBuffer: 16 << 20 };
  const { stdout } = await run('npm', args, options);
  return String(stdout);
}

interface PackResult {
  filename: string;
  size: number;
  unpackedSize: number;
  entryCount: number;
  files: { path: string }[];
}

/**
 * `npm pack` with `--ignore-scripts`: `prepack` would rebuild dist/ under the other tests that run
 * it at the same time; `npm test` has just built it (pretest), and the test below checks that every
 * packed file has its source, so nothing stale goes in.
 */
async function pack(destination: string, workspace?: string): Promise<PackResult> {
  const args = ['pack', '--ignore-scripts', '--json', '--pack-destination', destination];
  if (workspace !== undefined) args.push('-w', workspace);
  const [result] = JSON.parse(await npm(args, ROOT, 60_000)) as PackResult[];
  assert.ok(result);
  return result;
}

function sourcesOf(folder: string): Set<string> {
  const out = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
        out.add(relative(folder, path).replace(/\.ts$/, ''));
    }
  };
  walk(folder);
  return out;
}

describe('npm packages', () => {
  it('declares both packages publishable', () => {
    for (const pkg of [ROOT_PACKAGE, CLIENT_PACKAGE]) {
      assert.equal(pkg.private, undefined, `${pkg.name} is private`);
      // `repository` waits for the project's public home: an address made up here would mislead.
      for (const field of ['name', 'version', 'license', 'engines', 'files', 'exports'])
        assert.ok(pkg[field] !== undefined, `${pkg.name} has no ${field}`);
      assert.equal(pkg.version, ROOT_PACKAGE.version, 'the two packages share one version');
      assert.match(
        (pkg.scripts as Record<string, string>).prepack ?? '',
        /tsc|npm run build/,
        `${pkg.name} builds on prepack`,
      );
    }
    assert.deepEqual(ROOT_PACKAGE.bin, { frond: 'bin/frond' });
    const changelog = readFileSync(join(ROOT, 'CHANGELOG.md'), 'utf8');
    assert.match(changelog, new RegExp(`^## ${String(ROOT_PACKAGE.version).replace(/\./g, '\\.')} `, 'm'));
    for (const license of ['LICENSE', 'packages/client/LICENSE'])
      assert.match(readFileSync(join(ROOT, license), 'utf8'), /^MIT License/);
  });

  it('packs what runs and nothing else, installs with npm, and serves IDs to the installed client', async (t) => {
    assert.ok(existsSync(join(ROOT, 'dist/cli/main.js')), 'dist/ is built (npm test builds it first)');
    const work = tempDir('frond-pack-');
    const server = await pack(work);
    const client = await pack(work, '@frond/client');
    const serverFiles = server.files.map((file) => file.path);
    const clientFiles = client.files.map((file) => file.path);
    t.diagnostic(
      `server ${server.filename}: ${server.entryCount} files, ${server.size} B packed, ${server.unpackedSize} B unpacked`,
    );
    t.diagnostic(
      `client ${client.filename}: ${client.entryCount} files, ${client.size} B packed, ${client.unpackedSize} B unpacked`,
    );

    for (const needed of [
      'package.json',
      'README.md',
      'LICENSE',
      'CHANGELOG.md',
      'bin/frond',
      'dist/cli/main.js',
    ])
      assert.ok(serverFiles.includes(needed), `server package holds ${needed}`);
    assert.ok(serverFiles.includes('dist/cli/main.d.ts'), 'the exported entry has its types');
    assert.ok(serverFiles.includes('docs/databases.md'));
    const stray = serverFiles.filter(
      (path) =>
        !/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/frond|docs\/.+|dist\/.+\.(js|d\.ts))$/.test(
          path,
        ),
    );
    assert.deepEqual(stray, [], 'nothing but the build, bin, docs and the package files');
    // Every compiled file comes from a source of today: no stale output of a renamed file.
    const sources = sourcesOf(join(ROOT, 'src'));
    const orphans = serverFiles
      .filter((path) => path.startsWith('dist/'))
      .map((path) => path.replace(/^dist\//, '').replace(/\.(js|d\.ts)$/, ''))
      .filter((path) => !sources.has(path));
    assert.deepEqual(orphans, [], 'dist/ files without a source in src/');
    for (const needed of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
      assert.ok(clientFiles.includes(needed), `client package holds ${needed}`);
    assert.deepEqual(
      clientFiles.filter((path) => /(^|\/)test\/|\.test\.|node_modules/.test(path)),
      [],
      'the client package holds no tests',
    );

    // An empty project installs both tarballs. Install scripts are skipped (better-sqlite3's would
    // compile SQLite from source here, minutes on this machine, as no prebuilt binary can be
    // downloaded); its binary is copied from this repository's install instead, the same version
    // (pinned) for the same Node.js. Everything else is what npm installs from the tarballs.
    const app = join(work, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    const started = Date.now();
    await npm(
      [
        'install',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        '--ignore-scripts',
        '--loglevel=error',
        join(work, server.filename),
        join(work, client.filename),
      ],
      app,
      120_000,
    );
    t.diagnostic(`npm install of both tarballs: ${Date.now() - started} ms`);
    const native = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    mkdirSync(join(app, 'node_modules/better-sqlite3/build/Release'), { recursive: true });
    copyFileSync(join(ROOT, native), join(app, native));

    const installedBin = join(app, 'node_modules/.bin/frond');
    assert.ok(existsSync(installedBin), 'npm linked the frond executable');
    assert.ok(!existsSync(join(app, 'node_modules/typescript')), 'no development dependency came along');
    const version = await runNode([installedBin, 'version'], { timeoutMs: 20_000 });
    assert.equal(version.stdout.trim(), ROOT_PACKAGE.version);

    const dataDir = join(work, 'data');
    const added = await runNode([installedBin, 'tag', 'add', 'order', '--data-dir', dataDir], {
      timeoutMs: 20_000,
    });
    assert.equal(added.code, 0, added.stderr);
    const node = await startFrond(['--port', '0', '--data-dir', dataDir], { bin: installedBin });
    try {
      assert.equal((await httpGet(`${node.url}/api/segment/get/order`)).body, '1');
      assert.match((await httpGet(`${node.url}/api/snowflake/get/any`)).body, /^[1-9][0-9]{15,18}$/);
      const health = JSON.parse((await httpGet(`${node.url}/healthz`)).body) as { version: string };
      assert.equal(health.version, ROOT_PACKAGE.version);
      // The installed client, imported by name from the project, as a user's code would.
      writeFileSync(
        join(app, 'take.js'),
        `import { createClient } from '@frond/client';
const ids = createClient({ urls: [process.argv[2]] });
const segment = await ids.nextIds('order', 3);
const snowflake = await ids.snowflake();
ids.close();
console.log(JSON.stringify({ segment: segment.map(String), snowflake: String(snowflake) }));
`,
      );
      const taken = await runNode([join(app, 'take.js'), node.url], { timeoutMs: 20_000 });
      assert.equal(taken.code, 0, taken.stderr);
      const ids = JSON.parse(taken.stdout) as { segment: string[]; snowflake: string };
      assert.equal(ids.segment.length, 3);
      assert.ok(
        ids.segment.every((id) => BigInt(id) > 1n),
        ids.segment.join(),
      );
      assert.ok(BigInt(ids.snowflake) > 0n);
    } finally {
      assert.equal(await node.stop(), 0, 'SIGTERM stops the installed node cleanly');
    }
  });
});
