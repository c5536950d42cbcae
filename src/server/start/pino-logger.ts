import pino from 'pino';
import type { Logger, LogLevel } from '../../core/logger.js';

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
