// The README's install steps, as test/readme-install-*.test.ts run them: the commands are read from
// the README's code blocks marked `<!-- install-test: NAME -->`, so the README shows what the tests
// run, and run in bash from fresh folders.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';

export const run = promisify(execFile);
export const ROOT = new URL('../..', import.meta.url).pathname;
export const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string })
  .version;

/**
 * npm without what `npm test` passes down (npm_config_*, npm_package_*, INIT_CWD): a nested npm
 * would otherwise take this repository's prefix and workspace for its own.
 */
export function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD') env[key] = value;
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false' };
}

/** A line of a README block: the command, and what its `# comment` says. */
export interface ReadmeLine {
  command: string;
  comment: string;
}

/** The README's fenced block marked `<!-- install-test: NAME -->`, as its text. */
export function readmeBlockText(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = new RegExp(`<!-- install-test: ${name} -->\\n\\n\`\`\`\\w*\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(
    readme,
  );
  assert.ok(block, `README has a code block marked <!-- install-test: ${name} -->`);
  return block[1] as string;
}

export function readmeBlock(name: string): ReadmeLine[] {
  return readmeBlockText(name)
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'))
    .map((line) => {
      const [command = '', ...comment] = line.split(/\s+#\s+/);
      return { command: command.trim(), comment: comment.join(' # ').trim() };
    });
}

/** The commands that serve: the test runs them in the background until it has used the node. */
export const SERVES = /^(npm start|npx frond serve)$/;

/**
 * better-sqlite3's install script downloads its prebuilt binary from GitHub, which this machine
 * cannot reach (it would then compile SQLite from source: minutes). prebuild-install takes another
 * host from `npm_config_better_sqlite3_binary_host`: this loopback server answers with the binary of
 * this repository's install, the same pinned version for the same Node.js, packed as the release
 * asset is. The README's commands themselves run unchanged, install scripts and all.
 */
export async function binaryMirror(
  work: string,
): Promise<{ url: string; requested: string[]; close(): Promise<void> }> {
  const require = createRequire(import.meta.url);
  const packageDir = dirname(require.resolve('better-sqlite3/package.json'));
  const staging = join(work, 'prebuilt');
  mkdirSync(join(staging, 'build/Release'), { recursive: true });
  copyFileSync(
    join(packageDir, 'build/Release/better_sqlite3.node'),
    join(staging, 'build/Release/better_sqlite3.node'),
  );
  const tarball = join(work, 'prebuilt.tar.gz');
  await run('tar', ['czf', tarball, '-C', staging, 'build']);
  const body = readFileSync(tarball);
  const requested: string[] = [];
  const server = createServer((req, res) => {
    requested.push(req.url ?? '');
    if (!/\/better-sqlite3-v[\w.-]+\.tar\.gz$/.test(req.url ?? '')) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/gzip', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    requested,
    close: () =>
      new Promise<void>((resolve) => {
        // prebuild-install keeps each download in npm's cache under a name made from its URL, which
        // holds this server's port: remove this run's, so runs do not pile them up.
        const cache = process.env.npm_config_cache ?? join(homedir(), '.npm');
        for (const path of requested) {
          const full = url + path;
          const digest = createHash('sha512').update(full).digest('hex').slice(0, 6);
          const name = `${digest}-${(path.split('/').pop() ?? '').replace(/[^a-zA-Z0-9.]+/g, '-')}`;
          rmSync(join(cache, '_prebuilds', name), { force: true });
        }
        server.close(() => resolve());
      }),
  };
}

/** A fresh copy of the repository as a clone has it: the tracked files (and new ones), no build. */
export async function freshCopy(to: string): Promise<void> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    maxBuffer: 16 << 20,
  });
  for (const path of String(stdout).split('\0')) {
    if (path === '' || path === 'node_modules' || path.startsWith('node_modules/')) continue;
    const from = join(ROOT, path);
    if (!existsSync(from)) continue; // deleted in the work tree, not yet committed
    mkdirSync(dirname(join(to, path)), { recursive: true });
    copyFileSync(from, join(to, path));
  }
}

export interface Served {
  url: string;
  output: string[];
  stop(): Promise<void>;
}

/**
 * Runs a serving command in its own process group (npm start runs a shell that runs node) and
 * resolves once the node's `listening` line names its URL. The README's port 8080 becomes a free
 * one (FROND_PORT=0), and the test's URLs follow it.
 */
export function serve(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<Served> {
  const child = spawn('bash', ['-c', command], {
    cwd,
    env: { ...env, FROND_PORT: '0' },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid as number), 'SIGTERM');
    const timer = setTimeout(() => process.kill(-(child.pid as number), 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  };
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => output.push(line));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`${command} did not listen within ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${command} exited before listening:\n${output.join('\n')}`));
    });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      output.push(line);
      if (!line.startsWith('{') || !line.includes('"listening"')) return;
      clearTimeout(timer);
      resolve({ url: (JSON.parse(line) as { url: string }).url, output, stop });
    });
  });
}

/** Runs one README line in bash and checks its output against its comment when that is an answer. */
export async function runLine(
  line: ReadmeLine,
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<string> {
  let stdout: string;
  try {
    ({ stdout } = await run('bash', ['-c', line.command], {
      cwd,
      env,
      timeout: timeoutMs,
      maxBuffer: 64 << 20,
    }));
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    assert.fail(
      `README line failed: ${line.command}\n${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`,
    );
  }
  const output = String(stdout).trim();
  if (/^(\d+(\.\d+)*|\{.*\})$/.test(line.comment)) assert.equal(output, line.comment, line.command);
  else if (/\blike \d+$/.test(line.comment)) assert.match(output, /^[1-9]\d{15,18}$/, line.command);
  return output;
}

/**
 * A temp folder and npm's environment for one test file, with the binary mirror running; removes
 * both when the file's tests are done. Call at the top of a describe.
 */
export function freshFolders(
  prefix: string,
  hooks: { before: (fn: () => Promise<void>) => void; after: (fn: () => Promise<void>) => void },
): { work: string; env: () => NodeJS.ProcessEnv } {
  const work = mkdtempSync(join(tmpdir(), prefix));
  let mirror: Awaited<ReturnType<typeof binaryMirror>> | undefined;
  let env: NodeJS.ProcessEnv = {};
  hooks.before(async () => {
    mirror = await binaryMirror(work);
    // `prefer_offline`: npm takes what its cache holds without asking the registry again.
    env = {
      ...npmEnv(),
      npm_config_better_sqlite3_binary_host: mirror.url,
      npm_config_prefer_offline: 'true',
    };
  });
  hooks.after(async () => {
    await mirror?.close();
    rmSync(work, { recursive: true, force: true });
  });
  return { work, env: () => env };
}
