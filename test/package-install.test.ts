// Both packages are publishable, and pack what runs and nothing else. Installing them as the README
// says is test/readme-install-*.test.ts.
import assert from 'node:assert/strict';
import { type ExecFileOptions, execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './support/frond-process.js';
import { npmEnv } from './support/readme-install.js';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;
const ROOT_PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
const CLIENT_PACKAGE = JSON.parse(readFileSync(join(ROOT, 'packages/client/package.json'), 'utf8')) as Record<
  string,
  unknown
>;

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

  it('packs what runs and nothing else', async (t) => {
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
    for (const proto of ['proto/frond.proto', 'proto/grpc/health/v1/health.proto'])
      assert.ok(serverFiles.includes(proto), `server package holds ${proto} (--grpc-port reads it)`);
    const stray = serverFiles.filter(
      (path) =>
        !/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|bin\/frond|docs\/.+|proto\/.+\.proto|dist\/.+\.(js|d\.ts))$/.test(
          path,
        ),
    );
    assert.deepEqual(stray, [], 'nothing but the build, bin, docs, the protos and the package files');
    // Every compiled file comes from a source of today: no stale output of a renamed file.
    const sources = sourcesOf(join(ROOT, 'src'));
    const orphans = serverFiles
      .filter((path) => path.startsWith('dist/'))
      .map((path) => path.replace(/^dist\//, '').replace(/\.(js|d\.ts)$/, ''))
      .filter((path) => !sources.has(path));
    assert.deepEqual(orphans, [], 'dist/ files without a source in src/');
    // The gRPC server finds its protos from where its module sits in the unpacked package, not in
    // this checkout (its dependencies from this checkout's node_modules).
    await run('tar', ['-xzf', join(work, server.filename), '-C', work]);
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'package/node_modules'));
    const unpacked = join(work, 'package/dist/server/grpc/grpc-proto.js');
    const { PROTO_DIR, loadServices } = (await import(
      unpacked
    )) as typeof import('../src/server/grpc/grpc-proto.js');
    assert.equal(PROTO_DIR, join(work, 'package/proto/'));
    const services = loadServices();
    assert.deepEqual(Object.keys(services.ids).sort(), ['Batch', 'Decode', 'Next', 'Ranges', 'Snowflake']);
    assert.deepEqual(Object.keys(services.health).sort(), ['Check', 'Watch']);
    for (const needed of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
      assert.ok(clientFiles.includes(needed), `client package holds ${needed}`);
    assert.deepEqual(
      clientFiles.filter((path) => /(^|\/)test\/|\.test\.|node_modules/.test(path)),
      [],
      'the client package holds no tests',
    );
  });
});
