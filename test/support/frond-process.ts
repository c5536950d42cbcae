import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The real executable users run; tests drive it as a separate process. */
export const FROND_BIN = new URL('../../bin/frond', import.meta.url).pathname;

export function tempDir(prefix = 'frond-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface FrondProcess {
  /** `http://127.0.0.1:PORT`, read from the `listening` log line. */
  url: string;
  child: ChildProcess;
  /** Every stdout line so far (JSON log lines). */
  logs: string[];
  stderr: string[];
  /** Resolves with the exit code (or the signal name) once the process has ended. */
  exited: Promise<number | string>;
  /** Sends `signal` and waits for the exit (SIGKILL after `graceMs` if it does not stop). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<number | string>;
}

/**
 * Starts `frond serve ARGS` (add `--port 0` for a free port) and resolves once it listens; rejects
 * with its output if it exits first or does not listen within `timeoutMs`. `bin`: another
 * installation's executable (an installed package) instead of this repository's.
 */
export function startFrond(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; bin?: string; descriptorLimit?: number } = {},
): Promise<FrondProcess> {
  const node = [process.execPath, options.bin ?? FROND_BIN, 'serve', ...args];
  // `ulimit -n N` in a shell that then becomes the node (exec), so signals reach frond itself.
  const [command, ...commandArgs] =
    options.descriptorLimit === undefined
      ? node
      : ['bash', '-c', `ulimit -n ${options.descriptorLimit} && exec "$0" "$@"`, ...node];
  const child = spawn(command as string, commandArgs, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: childEnv(options.env),
  });
  const logs: string[] = [];
  const stderr: string[] = [];
  const exited = new Promise<number | string>((resolve) => {
    child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => stderr.push(line));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `frond serve ${args.join(' ')} did not listen in time:\n${[...logs, ...stderr].join('\n')}`,
        ),
      );
      // A ceiling for a hang, sized for a machine with both cores busy (a start took 8 s there).
    }, options.timeoutMs ?? 60_000);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      logs.push(line);
      if (!line.includes('"listening"')) return;
      const event = JSON.parse(line) as { event: string; url: string };
      if (event.event !== 'listening') return;
      clearTimeout(timer);
      resolve({ url: event.url, child, logs, stderr, exited, stop });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(`frond serve exited with ${code} before listening:\n${[...logs, ...stderr].join('\n')}`),
      );
    });
  });
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs one `frond` command to its end (bounded by `timeoutMs`). */
export function runFrond(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<CommandResult> {
  // 60 s: one `frond tag add` took over 20 s on a machine with both cores busy and servers running.
  return runNode([FROND_BIN, ...args], { timeoutMs: 60_000, ...options });
}

/** Runs `node ARGS` to its end; rejects, after killing it, if it outlives `timeoutMs`. */
export function runNode(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs: number; cwd?: string },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: childEnv(options.env),
      cwd: options.cwd,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`node ${args.join(' ')} did not finish in ${options.timeoutMs} ms:\n${stderr}`));
    }, options.timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A failed command says what to fix on one line, with the exit code `code` and no stack trace. */
export function assertOneLineError(
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

/**
 * The environment a frond process of a test gets: this one's, without the test runner's own
 * FROND_ settings (FROND_TEST_BACKENDS, FROND_PROPERTY_RUNS), which every frond command refuses as
 * unknown variables, and without Spring's SERVER_PORT and SERVER_ADDRESS, which `--leaf-config`
 * reads; then `extra`.
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^(FROND_(TEST_|PROPERTY_RUNS$)|SERVER_(PORT|ADDRESS)$)/.test(key)) env[key] = value;
  return { ...env, ...extra };
}

/** `text` as a literal in a RegExp: a path or a URL in an expected message. */
export function escaped(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * `frond ARGS` as a user without root (`nobody`, through runuser, when this process is root: root
 * reads a file of mode 000 all the same), or undefined where this process cannot become one. The
 * paths it is given must be reachable for that user (a `tempDir()` is 0700: open it up first).
 */
export function asUnprivileged(args: string[]): Promise<{ code: number | null; stderr: string }> | undefined {
  const argv = [process.execPath, FROND_BIN, ...args];
  const root = process.getuid?.() === 0;
  if (root && spawnSync('runuser', ['--help']).error !== undefined) return undefined;
  const [command, ...rest] = root ? ['runuser', '-u', 'nobody', '--', ...argv] : argv;
  return new Promise((resolve) => {
    const child = spawn(command as string, rest, { stdio: ['ignore', 'ignore', 'pipe'], env: childEnv() });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
