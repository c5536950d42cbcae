import { describeError, FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { IdRun } from '../../core/segment-buffer.js';
import { parseSnowflakeId, type SnowflakeLayout } from '../../core/snowflake-layout.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { sameToken } from '../http/access.js';
import { disabled } from '../http/mode-disabled.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { MAX_COUNT, MAX_RANGE_COUNT } from '../ids/v1-handlers.js';
import type { IssuedId, TagIssuer } from '../opaque/tag-issuer.js';
import { FROND_VERSION } from '../ops/version.js';
import {
  array,
  asciiBulk,
  bulk,
  EMPTY_ARRAY,
  error,
  integer,
  integers,
  map,
  nullBulk,
  OK,
  PONG,
  type RespProto,
} from './resp-encode.js';

/** What the commands issue from and check against: the same issuer and generator as HTTP. */
export interface RespDeps {
  /** Segment mode's issuer (plain and opaque tags); undefined with `--no-segment`. */
  issuer: TagIssuer | undefined;
  /** Undefined with `--no-snowflake`. */
  snowflake: SnowflakeService | undefined;
  /** The layout `DECODE` reads IDs with (also when snowflake mode is off, as HTTP's decode). */
  layout: SnowflakeLayout;
  /** `--token`: empty, every command is open; else ID commands need `AUTH` first. */
  tokens: readonly string[];
  /** Where a failure that is not frond's own (a bug) is logged; the client sees INTERNAL. */
  logger: Logger;
  /** `--rate-limit`: the node's one limiter, shared with HTTP and gRPC, by client address. */
  rateLimiter?: RateLimiter | undefined;
}

/** One connection's state, as the commands change it. */
export interface RespSession {
  readonly id: number;
  /** The client's address: `--rate-limit` counts ID commands by it, as HTTP requests. */
  readonly client: string;
  proto: RespProto;
  authed: boolean;
  name: string | undefined;
  /** Set by QUIT: the reply is written, then the connection ends. */
  quit: boolean;
}

/** A reply now (encoded), or later: a command whose ID is not buffered waits for a segment. */
export type RespReply = string | Promise<string>;

type Handler = (args: string[], session: RespSession) => RespReply;

interface CommandSpec {
  /** Arguments with the name: `n` exactly, or at least `-n` (Redis' arity convention). */
  arity: number;
  /** Needs `AUTH` first when the node has tokens. */
  ids: boolean;
  run: Handler;
}

/** The node's answer to `INFO`: enough of Redis' `# Server` that clients' ready checks pass. */
function info(session: RespSession, deps: RespDeps): string {
  const lines = [
    '# Server',
    'redis_version:7.2.0',
    `frond_version:${FROND_VERSION}`,
    'redis_mode:standalone',
    `segment_mode:${deps.issuer ? 'on' : 'off'}`,
    `snowflake_mode:${deps.snowflake ? 'on' : 'off'}`,
    '',
    '# Clients',
    `client_id:${session.id}`,
    '',
    '# Persistence',
    'loading:0',
    '',
    '# Replication',
    'role:master',
    '',
  ];
  return lines.join('\r\n');
}

/** `N` of `IDS tag N`, `RANGES tag N`, `SNOWFLAKE N`: an integer from 1 to `max`. */
export function parseRespCount(text: string, max: number): number {
  const count = /^[0-9]{1,12}$/.test(text) ? Number(text) : Number.NaN;
  if (!(count >= 1 && count <= max))
    throw new FrondError(
      'INVALID_COUNT',
      `invalid count ${JSON.stringify(text.slice(0, 40))}: use an integer from 1 to ${max}`,
    );
  return count;
}

/** An error of frond's as RESP: its code first, as HTTP answers it in `error.code`. */
export function errorReply(caught: unknown, logger?: Logger): string {
  if (caught instanceof FrondError) return error(caught.code, caught.message);
  logger?.log('error', 'resp.internal', { error: describeError(caught) });
  return error('INTERNAL', 'the node failed to answer; see its log');
}

function rangesReply(runs: readonly IdRun[]): string {
  let out = `*${runs.length}\r\n`;
  for (const run of runs) out += `*2\r\n:${run.start}\r\n:${run.end}\r\n`;
  return out;
}

// A formatted tag's number is text: a bulk string on GET and INCR alike (UTF-8 length), and IDS
// answers an array of them.
const idBulk = (id: IssuedId) => (typeof id === 'string' ? bulk(id) : asciiBulk(String(id)));
const idInteger = (id: IssuedId) => (typeof id === 'string' ? bulk(id) : `:${id}\r\n`);

function issuedReply(ids: readonly IssuedId[]): string {
  if (typeof ids[0] !== 'string') return integers(ids as readonly (number | bigint)[]);
  return array((ids as readonly string[]).map(bulk));
}

/**
 * The command table: every command by its upper-case name. ID commands go through the same
 * `TagIssuer` and `SnowflakeService` as HTTP; an ID already buffered is answered with no promise
 * (`tryOne`, `tryNext`), so a pipeline of `INCR`s is answered in the turn it was read.
 */
export function createRespCommands(deps: RespDeps): Map<string, CommandSpec> {
  const failed = (caught: unknown) => errorReply(caught, deps.logger);
  const needSegment = (): TagIssuer => {
    if (deps.issuer === undefined) throw disabled('segment', '--no-segment');
    return deps.issuer;
  };
  const needSnowflake = (): SnowflakeService => {
    if (deps.snowflake === undefined) throw disabled('snowflake', '--no-snowflake');
    return deps.snowflake;
  };
  const oneId = (tag: string, reply: (id: IssuedId) => string): RespReply => {
    const issuer = needSegment();
    const id = issuer.tryOne(tag);
    if (id !== undefined) return reply(id);
    return issuer.one(tag).then(reply, failed);
  };
  const authenticate = (token: string): boolean => {
    let ok = false;
    // Every token is compared, so the time does not tell which one nearly matched (as HTTP).
    for (const expected of deps.tokens) ok = sameToken(token, expected) || ok;
    return ok;
  };
  const wrongToken = () =>
    error('WRONGPASS', "the token is not one of this node's --token values (UNAUTHORIZED)");

  const table: [string, CommandSpec][] = [
    ['INCR', { arity: 2, ids: true, run: (args) => oneId(args[1] as string, idInteger) }],
    ['GET', { arity: 2, ids: true, run: (args) => oneId(args[1] as string, idBulk) }],
    [
      'IDS',
      {
        arity: 3,
        ids: true,
        run: (args) => {
          const issuer = needSegment();
          const count = parseRespCount(args[2] as string, MAX_COUNT);
          return issuer.many(args[1] as string, count).then(issuedReply, failed);
        },
      },
    ],
    [
      'RANGES',
      {
        arity: 3,
        ids: true,
        run: (args) => {
          const issuer = needSegment();
          const count = parseRespCount(args[2] as string, MAX_RANGE_COUNT);
          return issuer.ranges(args[1] as string, count).then(rangesReply, failed);
        },
      },
    ],
    [
      'SNOWFLAKE',
      {
        arity: -1,
        ids: true,
        run: (args) => {
          const service = needSnowflake();
          if (args.length > 2) throw wrongArity(args[0] as string);
          if (args.length === 1) {
            const id = service.tryNext();
            if (id !== undefined) return `:${id}\r\n`;
            return service.next().then(integer, failed);
          }
          const count = parseRespCount(args[1] as string, MAX_COUNT);
          return service.nextMany(count).then(integers, failed);
        },
      },
    ],
    [
      'DECODE',
      {
        arity: 2,
        ids: false,
        run: (args, session) => {
          const id = parseSnowflakeId(args[1] as string);
          const parts = deps.layout.decompose(id);
          return map(
            [
              ['id', bulk(id.toString())],
              ['timestamp', integer(parts.timestamp)],
              ['time', bulk(new Date(parts.timestamp).toISOString())],
              ['workerId', integer(parts.workerId)],
              ['sequence', integer(parts.sequence)],
            ],
            session.proto,
          );
        },
      },
    ],
    [
      'PING',
      {
        arity: -1,
        ids: false,
        run: (args) =>
          args.length > 2 ? wrongArityReply(args) : args.length === 2 ? bulk(args[1] as string) : PONG,
      },
    ],
    ['ECHO', { arity: 2, ids: false, run: (args) => bulk(args[1] as string) }],
    [
      'AUTH',
      {
        arity: -2,
        ids: false,
        run: (args, session) => {
          if (args.length > 3) return wrongArityReply(args);
          // `AUTH token` or `AUTH user token`: frond has no users, so the user name is not read.
          if (deps.tokens.length === 0) return OK;
          if (!authenticate(args[args.length - 1] as string)) return wrongToken();
          session.authed = true;
          return OK;
        },
      },
    ],
    [
      'HELLO',
      {
        arity: -1,
        ids: false,
        run: (args, session) => {
          let proto = session.proto;
          let i = 1;
          if (args.length > 1) {
            const asked = args[1] as string;
            if (asked !== '2' && asked !== '3')
              return error('NOPROTO', `unsupported protocol version ${asked.slice(0, 20)}: use 2 or 3`);
            proto = asked === '3' ? 3 : 2;
            i = 2;
          }
          let name: string | undefined;
          for (; i < args.length; i++) {
            const option = (args[i] as string).toUpperCase();
            if (option === 'AUTH' && i + 2 < args.length) {
              const token = args[i + 2] as string;
              if (deps.tokens.length > 0 && !authenticate(token)) return wrongToken();
              session.authed = true;
              i += 2;
            } else if (option === 'SETNAME' && i + 1 < args.length) {
              name = args[i + 1];
              i += 1;
            } else {
              return error('ERR', `syntax error in HELLO option '${(args[i] as string).slice(0, 40)}'`);
            }
          }
          session.proto = proto;
          if (name !== undefined) session.name = name;
          return map(
            [
              ['server', bulk('redis')],
              ['version', bulk('7.2.0')],
              ['proto', integer(proto)],
              ['id', integer(session.id)],
              ['mode', bulk('standalone')],
              ['role', bulk('master')],
              ['modules', EMPTY_ARRAY],
            ],
            proto,
          );
        },
      },
    ],
    [
      'CLIENT',
      {
        arity: -2,
        ids: false,
        run: (args, session) => {
          const sub = (args[1] as string).toUpperCase();
          if (sub === 'SETNAME' && args.length === 3) {
            session.name = args[2];
            return OK;
          }
          if (sub === 'GETNAME' && args.length === 2)
            return session.name === undefined ? nullBulk(session.proto) : bulk(session.name);
          if (sub === 'SETINFO' && args.length === 4) return OK;
          if (sub === 'ID' && args.length === 2) return integer(session.id);
          return error(
            'ERR',
            `unknown subcommand or wrong number of arguments for 'CLIENT ${sub.slice(0, 40)}': frond answers CLIENT SETNAME, GETNAME, SETINFO and ID`,
          );
        },
      },
    ],
    [
      'SELECT',
      {
        arity: 2,
        ids: false,
        run: (args) =>
          args[1] === '0' ? OK : error('ERR', 'DB index is out of range: frond has database 0 only'),
      },
    ],
    ['INFO', { arity: -1, ids: false, run: (_args, session) => bulk(info(session, deps)) }],
    [
      'COMMAND',
      {
        arity: -1,
        ids: false,
        run: (args) => ((args[1] ?? '').toUpperCase() === 'COUNT' ? integer(0) : EMPTY_ARRAY),
      },
    ],
    [
      'CONFIG',
      {
        arity: -2,
        ids: false,
        // redis-benchmark and some clients read `CONFIG GET save` and the like: frond has no such settings.
        run: (args) =>
          (args[1] as string).toUpperCase() === 'GET'
            ? EMPTY_ARRAY
            : error(
                'ERR',
                'frond answers CONFIG GET only (with nothing): its settings are flags, not CONFIG',
              ),
      },
    ],
    [
      'QUIT',
      {
        arity: -1,
        ids: false,
        run: (_args, session) => {
          session.quit = true;
          return OK;
        },
      },
    ],
  ];
  return new Map(table);
}

function wrongArity(name: string): FrondError {
  return new FrondError('INVALID_ARGUMENT', `wrong number of arguments for '${name.toLowerCase()}' command`);
}

function wrongArityReply(args: readonly string[]): string {
  return error(
    'ERR',
    `wrong number of arguments for '${(args[0] as string).toLowerCase().slice(0, 40)}' command`,
  );
}

/**
 * Runs one command: unknown names and wrong arity as Redis words them (`-ERR …`), `-NOAUTH` before
 * `AUTH` when the node has tokens, a FrondError thrown at once as its code.
 */
export function runCommand(
  commands: Map<string, CommandSpec>,
  args: string[],
  session: RespSession,
  needsAuth: boolean,
  logger?: Logger,
  rateLimiter?: RateLimiter,
): RespReply {
  const name = args[0] as string;
  const spec = commands.get(name) ?? commands.get(name.toUpperCase());
  if (spec === undefined) return unknownCommand(args);
  if (spec.arity >= 0 ? args.length !== spec.arity : args.length < -spec.arity) return wrongArityReply(args);
  if (spec.ids && needsAuth && !session.authed)
    return error('NOAUTH', 'Authentication required: this node needs a token, send AUTH <token>');
  try {
    if (spec.ids) rateLimiter?.take(session.client);
    return spec.run(args, session);
  } catch (caught) {
    if (
      caught instanceof FrondError &&
      caught.code === 'INVALID_ARGUMENT' &&
      caught.message.startsWith('wrong number')
    )
      return error('ERR', caught.message);
    return errorReply(caught, logger);
  }
}

function unknownCommand(args: readonly string[]): string {
  const shown = args
    .slice(1, 4)
    .map((arg) => `'${arg.slice(0, 40)}'`)
    .join(' ');
  return error(
    'ERR',
    `unknown command '${(args[0] as string).slice(0, 40)}', with args beginning with: ${shown}`,
  );
}
