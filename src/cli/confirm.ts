import { createInterface } from 'node:readline';
import { FrondError } from '../core/errors.js';

/**
 * Whether a command that destroys something must ask first: not with `--yes`. Without it the
 * answer is read from stdin, so stdin must be a terminal; anywhere else (a script, a pipe, CI) the
 * command is refused before it touches anything (exit 2), never run unconfirmed.
 */
export function mustAsk(yes: boolean, command: string, what: string): boolean {
  if (yes) return false;
  if (process.stdin.isTTY !== true)
    throw new FrondError(
      'INVALID_ARGUMENT',
      `${command} asks before it changes anything, and stdin is not a terminal: add --yes to ${what} without asking`,
    );
  return true;
}

/**
 * Asks `question` on stderr (stdout stays the command's output) and reads one line from the
 * terminal: y or yes, in any case, is yes; anything else, or the end of input, is no.
 */
export function ask(question: string): Promise<boolean> {
  // Not as a terminal: the terminal echoes and edits the line itself, and no escape codes are sent.
  const lines = createInterface({ input: process.stdin, output: process.stderr, terminal: false });
  return new Promise((resolve) => {
    let answer: string | undefined;
    lines.once('close', () => {
      // Ctrl-D ends the input without a line: the prompt's line is ended here.
      if (answer === undefined) process.stderr.write('\n');
      resolve(answer !== undefined && /^\s*y(es)?\s*$/i.test(answer));
    });
    lines.question(question, (line) => {
      answer = line;
      lines.close();
    });
  });
}
