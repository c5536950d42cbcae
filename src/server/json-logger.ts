import type { Logger, LogLevel } from '../core/logger.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function isLogLevel(text: string): text is LogLevel {
  return Object.hasOwn(RANK, text);
}

/** One JSON object per line: `{"time","level","event",...fields}`. */
export function createJsonLogger(
  level: LogLevel = 'info',
  write: (line: string) => void = (line) => process.stdout.write(line),
): Logger {
  const threshold = RANK[level];
  return {
    log(at, event, fields) {
      if (RANK[at] < threshold) return;
      write(`${JSON.stringify({ time: new Date().toISOString(), level: at, event, ...fields })}\n`);
    },
  };
}
