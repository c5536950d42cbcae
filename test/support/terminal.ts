// Real commands on a real terminal: script(1) gives the command a pseudo-terminal, so it sees a TTY
// on stdin and stdout (the prompts of `db fence` and `tag remove`, readable logs) as a person's shell.
import { type ChildProcess, spawn } from 'node:child_process';
import { childEnv, FROND_BIN } from './frond-process.js';

export interface Running {
  /** Everything printed so far, as a person reads it: no carriage returns, no cursor moves. */
  output(): string;
  write(text: string): void;
  signal(signal: NodeJS.Signals): void;
  /** Resolves with the output once it matches; rejects if the process ends first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** The exit code, SIGKILL after `timeoutMs` (then null). */
  exit(timeoutMs?: number): Promise<number | null>;
}

export function watch(child: ChildProcess): Running {
  let text = '';
  const listeners = new Set<() => void>();
  const take = (chunk: Buffer) => {
    // Without carriage returns and the terminal's escapes (readline moves the cursor).
    text += chunk
      .toString()
      .replace(/\r/g, '')
      .replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*[A-Za-z]`, 'g'), '');
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', take);
  child.stderr?.on('data', take);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    output: () => text,
    write: (input) => child.stdin?.write(input),
    signal: (signal) => child.kill(signal),
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text)) return;
          done();
          resolve(text);
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`no ${pattern} in ${timeoutMs} ms:\n${text}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        void exited.then(() => {
          if (!listeners.has(check)) return;
          done();
          reject(new Error(`ended before ${pattern}:\n${text}`));
        });
        check();
      }),
    exit: async (timeoutMs = 30_000) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const quoted = (words: string[]) => words.map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');

/** `frond ARGS` on a terminal of its own (script(1) gives it a pty); what is written is typed at it. */
export function onTerminal(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  const command = `exec ${quoted([process.execPath, FROND_BIN, ...args])}`;
  return watch(
    spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: childEnv(env),
    }),
  );
}
