import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** A server in its own process: the load generator never shares an event loop with it. */
export interface ChildServer {
  name: string;
  url: string;
  pid: number;
  child: ChildProcess;
  /** Lines the process wrote (stdout and stderr), for error messages. */
  output: string[];
  /** How many log lines of each event (`"event":"segment.loaded"`) the process has written. */
  events: Map<string, number>;
  stop(): Promise<void>;
}

const BENCH_DIR = new URL('..', import.meta.url).pathname;
export const FROND_BIN = new URL('../../bin/frond', import.meta.url).pathname;

/** Runs a TypeScript file of bench/ with tsx: `node --import tsx bench/<file> ARGS`. */
export function startTsServer(name: string, file: string, args: string[] = []): Promise<ChildServer> {
  return startChildServer(name, ['--import', 'tsx', `${BENCH_DIR}${file}`, ...args]);
}

/** Runs the real `frond serve` (the compiled dist/, as users run it). */
export function startFrondServer(
  name: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<ChildServer> {
  return startChildServer(name, [FROND_BIN, 'serve', ...args], 30_000, env);
}

/**
 * Spawns `node ARGS` and resolves once it prints a JSON line with `"event":"listening"` and a `url`,
 * as frond does (and the bench servers imitate).
 */
export function startChildServer(
  name: string,
  nodeArgs: string[],
  timeoutMs = 30_000,
  env?: NodeJS.ProcessEnv,
): Promise<ChildServer> {
  const child = spawn(process.execPath, nodeArgs, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(env === undefined ? {} : { env: { ...process.env, ...env } }),
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  const output: string[] = [];
  const events = new Map<string, number>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on('line', (line) => keep(output, line));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not listen within ${timeoutMs} ms:\n${output.join('\n')}`));
    }, timeoutMs);
    let listening = false;
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      keep(output, line);
      const logged = /"event":"([^"]+)"/.exec(line)?.[1];
      if (logged !== undefined) events.set(logged, (events.get(logged) ?? 0) + 1);
      if (listening || !line.includes('"listening"')) return;
      const event = JSON.parse(line) as { event?: string; url?: string };
      if (event.event !== 'listening' || event.url === undefined) return;
      listening = true;
      clearTimeout(timer);
      resolve({ name, url: event.url, pid: child.pid as number, child, output, events, stop });
    });
    void exited.then(() => {
      clearTimeout(timer);
      if (!listening) reject(new Error(`${name} exited before listening:\n${output.join('\n')}`));
    });
  });
}

/** Servers still running: a benchmark that fails half-way must not leave them behind. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Keeps the last 200 lines: a long run must not grow the bench's memory with logs. */
function keep(lines: string[], line: string): void {
  lines.push(line);
  if (lines.length > 200) lines.shift();
}
