import { describeError, ERROR_CODES, isFrondError } from '../core/errors.js';
import { FROND_VERSION } from '../server/ops/version.js';
import { dbCommand } from './db.js';
import { decodeCommand } from './decode.js';
import { commandHelp, commandsNamed, overviewHelp } from './help.js';
import { didYouMean } from './options.js';
import { serveCommand } from './serve.js';
import { tagCommand } from './tag.js';

export async function main(args: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const [command, ...rest] = args;
  // `frond serve --help`, `frond tag add -h`: the options of that command, whatever else is given.
  const help = command === 'help' ? rest.length > 0 : wantsHelp(rest);
  const about = help ? commandsNamed(command === 'help' ? rest : args) : [];
  if (help && about.length > 0) {
    out(about.map(commandHelp).join('\n'));
    return 0;
  }
  try {
    switch (command) {
      case 'serve':
        return await serveCommand(rest);
      case 'tag':
        return await tagCommand(rest, out);
      case 'db':
        return await dbCommand(rest, out);
      case 'decode':
        return await decodeCommand(rest, out);
      case 'version':
      case '--version':
      case '-v':
        out(FROND_VERSION);
        return 0;
      case 'help':
      case '--help':
      case '-h':
        out(overviewHelp());
        return 0;
      case undefined:
        process.stderr.write(overviewHelp());
        return 2;
      default:
        process.stderr.write(
          `frond: unknown command ${JSON.stringify(command)}${didYouMean(command, COMMAND_WORDS)} (see 'frond help')\n`,
        );
        return 2;
    }
  } catch (error) {
    process.stderr.write(`frond: ${describeError(error)}\n`);
    // Exit codes: 0 done, 1 failed while running, 2 bad usage or configuration (per code in the registry).
    return isFrondError(error) ? ERROR_CODES[error.code].exitCode : 1;
  }
}

/** The words `frond` takes first, for a typo's suggestion (`-h`, `-v`, `--help`, `--version` too). */
const COMMAND_WORDS = ['serve', 'tag', 'db', 'decode', 'version', 'help'];

/** `--help` or `-h` before a `--` that ends the options. */
function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}
