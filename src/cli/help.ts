import type { OptionEntry } from '../core/option-entry.js';
import { COMMANDS, type CommandSpec } from './option-table.js';

/** Usage lines wrap here, well inside an 80-column terminal's second half and a 100-column one. */
const WIDTH = 100;

const PROSE = `Every serve setting is also an environment variable and a key of --config FILE: --port is
FROND_PORT and "port", --no-segment is FROND_NO_SEGMENT=true and "no-segment": true. Flags win over
the environment, the environment over --config, --config over --leaf-config, and that over the
defaults. PORT, as hosting platforms set it, is read when FROND_PORT is not set. 'frond serve --help' lists every setting with its default and bounds.

Secrets: a flag's value shows in ps. Pass the store URL and the tokens in FROND_STORE, FROND_TOKEN,
FROND_ADMIN_TOKEN, a config file, or FROND_STORE_FILE, FROND_TOKEN_FILE, FROND_ADMIN_TOKEN_FILE
naming a file that holds the value. frond never prints a password.

--store is sqlite:PATH (default sqlite:<data-dir>/frond.db), postgres://USER:PASSWORD@HOST:PORT/DB
or mysql://USER:PASSWORD@HOST:PORT/DB (MySQL and MariaDB), with optional ?pool=4
&connect_timeout_ms=5000&query_timeout_ms=5000. TLS: postgres://…?sslmode=verify-full&sslrootcert=
ca.pem (also sslcert, sslkey), mysql://…?ssl-mode=VERIFY_IDENTITY&ssl-ca=ca.pem (also ssl-cert,
ssl-key, tls-version); see docs/databases.md. 'frond db init --print' shows the tables' DDL, and
with --grant-to USER the GRANTs that account needs; 'frond db check' lists the tags a fence would
put at risk.

Snowflake worker IDs come from <data-dir>/snowflake-worker.json (or --worker-id) unless a
coordinator hands them out: --zk keeps Leaf's layout (/snowflake/NAME/forever/IP:PORT-SEQ, one
worker ID per ip:port, never reused); --zk --worker-lease, --etcd or --worker-lease-store (a table
in PostgreSQL or MySQL: 'store' for the database of --store, or a URL) lease them while a node runs
and reuse them once free. See docs/worker-ids.md.

Load balancers check GET /readyz (503 while the node cannot serve); GET /healthz is liveness only.

--grpc-port N also serves gRPC: frond.v1.Ids (Next, Batch, Ranges, Snowflake, Decode) from the same
tags, and grpc.health.v1.Health (SERVING when /readyz is ready). The .proto files ship in the
package's proto/ directory; tokens go in metadata as authorization: Bearer T; with --tls-cert the
port speaks TLS. Not with --workers above 1. See docs/grpc.md.

--workers N runs N processes on one port: IDs stay unique, and each process's IDs increase, but
one URL is served by any of them, so successive answers from one URL need not increase
(1 1001 2 1002). /metrics and /v1/stats add up all the processes.

--resp-port N also serves the Redis protocol on port N (one process, not with --workers): any Redis
client takes IDs with INCR tag, GET tag, IDS tag N, RANGES tag N, SNOWFLAKE [N] and DECODE id, with
the token as the password (AUTH token) and TLS from --tls-cert. See docs/resp.md.
`;

/** Markdown to plain text: no backticks, a link becomes its text. */
function plain(text: string): string {
  return text.replace(/\[([^\]]+)\]\([^)]+\)/g, '$1').replace(/`/g, '');
}

/** The default in words, Markdown. */
export function defaultOf(entry: OptionEntry): string {
  if (entry.describedDefault !== undefined) return entry.describedDefault;
  if (entry.type === 'boolean') return entry.default === true ? 'on' : 'off';
  if (entry.default === undefined || entry.type === 'list') return 'none';
  return `\`${String(entry.default)}\``;
}

/** The values an entry takes, `0–65535 ms`; empty when any text goes. */
export function rangeOf(entry: OptionEntry): string {
  const unit = entry.unit === undefined ? '' : ` ${entry.unit}`;
  if (entry.type === 'integer') return `${entry.min}–${entry.max === 'now' ? 'now' : entry.max}${unit}`;
  if (entry.type === 'enum') return (entry.values ?? []).join(', ');
  if (entry.type === 'list') return 'list';
  if (entry.maxLength !== undefined) return `up to ${entry.maxLength} characters`;
  return '';
}

function flagWithValue(entry: OptionEntry): string {
  return entry.type === 'boolean' ? `--${entry.flag}` : `--${entry.flag} ${entry.placeholder}`;
}

/** `-p, --port N` where the setting has a one-letter flag too. */
function flagsWithValue(entry: OptionEntry): string {
  return entry.short === undefined ? flagWithValue(entry) : `-${entry.short}, ${flagWithValue(entry)}`;
}

/** `frond tag add <tag> [--store URL] …`, wrapped at WIDTH with the options aligned. */
export function usageOf(command: CommandSpec): string {
  const head = `frond ${command.name}${command.positionals.map((name) => ` <${name.replace(/\?$/, '')}>`).join('')}`;
  const words = command.options.map((entry) => {
    const word = `[${flagWithValue(entry)}]`;
    return entry.type === 'list' ? `${word}…` : word;
  });
  const indent = ' '.repeat(head.length + 1);
  const lines: string[] = [];
  let line = head;
  for (const word of words) {
    if (line.length + 1 + word.length > WIDTH && line !== head) {
      lines.push(line);
      line = indent + word;
    } else line = `${line} ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}

/** `frond serve --help`: the usage line, then each option with its default, bounds and other names. */
export function commandHelp(command: CommandSpec): string {
  const left = command.options.map((entry) => `  ${flagsWithValue(entry)}`);
  const column = Math.max(...left.map((text) => text.length)) + 2;
  const rows = command.options.map((entry, i) => {
    const facts = [
      `default ${plain(defaultOf(entry))}`,
      rangeOf(entry),
      entry.env === null
        ? ''
        : [
            entry.env,
            entry.springEnv && `then ${entry.springEnv} (with --leaf-config)`,
            entry.platformEnv && `then ${entry.platformEnv}`,
          ]
            .filter((name) => name)
            .join(', '),
      entry.fileEnv === undefined ? '' : `${entry.fileEnv} (a file holding the value)`,
      entry.leafKey === undefined ? '' : `leaf.properties ${entry.leafKey}`,
    ].filter((fact) => fact !== '');
    return `${(left[i] as string).padEnd(column)}${plain(entry.help)}\n${' '.repeat(column)}${facts.join('; ')}`;
  });
  return `${usageOf(command)}\n\n${command.summary}.\n\n${rows.join('\n')}\n`;
}

/** `frond help`: every command's usage, then how settings are given. */
export function overviewHelp(): string {
  const usages = COMMANDS.map((command) => `  ${usageOf(command).replace(/\n/g, '\n  ')}`);
  return `frond: a distributed 64-bit ID service, compatible with Meituan Leaf

usage:
${usages.join('\n')}
  frond help [COMMAND] | frond COMMAND --help (-h) | frond version (-v)

${PROSE}`;
}

/** The commands `frond WORDS --help` is about: `tag` is every tag subcommand, `tag add` only that one. */
export function commandsNamed(words: string[]): CommandSpec[] {
  const [first, second] = words;
  const exact = COMMANDS.filter((command) => command.name === `${first} ${second}`);
  return exact.length > 0 ? exact : COMMANDS.filter((command) => command.name.split(' ')[0] === first);
}

/** The lines around the settings table in docs/configuration.md (the names are older than the move). */
export const README_TABLE_BEGIN = '<!-- options table: generated from src/cli/option-table.ts -->';
export const README_TABLE_END = '<!-- end of options table -->';

/**
 * The settings table of docs/configuration.md: one row per entry, every cell from the table.
 * Columns are padded so the Markdown source reads as a table too. The help texts link docs pages
 * from the repository's root (`docs/databases.md`), as the terminal shows them; in the table, which
 * sits in docs/, the same links are made relative to it.
 */
export function readmeTable(options: readonly OptionEntry[]): string {
  const code = (text: string | null | undefined) => (text ? `\`${text}\`` : '');
  const rows = [
    ['flag', 'environment', 'config key', 'leaf.properties', 'default', 'values', 'meaning'],
    ...options.map((entry) => [
      [`--${entry.flag}`, entry.short && `-${entry.short}`]
        .map(code)
        .filter((cell) => cell !== '')
        .join(', '),
      [entry.env, entry.springEnv, entry.platformEnv, entry.fileEnv]
        .map(code)
        .filter((cell) => cell !== '')
        .join(', '),
      code(entry.configKey),
      code(entry.leafKey),
      defaultOf(entry),
      rangeOf(entry),
      entry.help.replace(/\[docs\/([^\]]*)\]\(docs\//g, '[$1](').replace(/\]\(docs\//g, ']('),
    ]),
  ];
  const widths = (rows[0] as string[]).map((_, column) =>
    Math.max(...rows.map((row) => (row[column] as string).length)),
  );
  const line = (row: string[]) =>
    `| ${row.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`;
  const rule = `| ${widths.map((width) => '-'.repeat(width)).join(' | ')} |`;
  const [header, ...body] = rows as [string[], ...string[][]];
  return [line(header), rule, ...body.map(line)].join('\n');
}
