import pino from 'pino';
import { LOG_LEVELS, type LogFormat, type Logger, type LogLevel } from '../../core/logger.js';

/**
 * The node's logger, as `--log-format` says: JSON lines (`createPinoLogger`) or plain lines for a
 * person (`createPrettyLogger`); `auto` is plain when standard output is a terminal, else JSON
 * (what log collectors read).
 */
export function createLogger(
  level: LogLevel,
  format: LogFormat,
  terminal: boolean = process.stdout.isTTY === true,
  destination: pino.DestinationStream = pino.destination({ sync: true }),
): Logger {
  const pretty = format === 'pretty' || (format === 'auto' && terminal);
  return pretty ? createPrettyLogger(level, destination) : createPinoLogger(level, destination);
}

/**
 * Structured JSON logs through pino: one line per event that matters, `{"level","time","event",…}`,
 * written synchronously to standard output so the last lines before a crash are not lost.
 */
export function createPinoLogger(
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination({ sync: true }),
): Logger {
  const base = pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return {
    log(at, event, fields) {
      base[at]({ event, ...fields });
    },
  };
}

/**
 * One plain line per event, for a person at a terminal: `22:14:15 info  listening
 * url=http://127.0.0.1:8080 segment=sqlite:/srv/data/frond.db`, the local time, the level, the
 * event, a `message` as it reads, then each field as key=value (quoted when it holds a blank or a
 * quote). Written synchronously, as the JSON lines are.
 */
export function createPrettyLogger(
  level: LogLevel,
  destination: pino.DestinationStream = pino.destination({ sync: true }),
  now: () => Date = () => new Date(),
): Logger {
  const least = LOG_LEVELS.indexOf(level);
  return {
    log(at, event, fields = {}) {
      if (LOG_LEVELS.indexOf(at) < least) return;
      destination.write(`${prettyLine(now(), at, event, fields)}\n`);
    },
  };
}

/** One event as `createPrettyLogger` writes it, without the line break. */
export function prettyLine(
  time: Date,
  level: LogLevel,
  event: string,
  fields: Record<string, unknown>,
): string {
  const clock = [time.getHours(), time.getMinutes(), time.getSeconds()]
    .map((part) => String(part).padStart(2, '0'))
    .join(':');
  const { message, ...rest } = fields;
  const words = [clock, level.padEnd(5), event];
  if (typeof message === 'string') words.push(message);
  else if (message !== undefined) rest.message = message;
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) words.push(`${key}=${prettyValue(value)}`);
  }
  // Padded only where a field follows: `info  stopped` ends with the event.
  return words.join(' ').replace(/ +$/, '');
}

function prettyValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"'=]+$/.test(value) ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Error) return JSON.stringify(value.message);
  return (
    JSON.stringify(value, (_key, inner: unknown) => (typeof inner === 'bigint' ? inner.toString() : inner)) ??
    'null'
  );
}
