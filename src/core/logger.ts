export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** One method, so the core forces no logging library on anyone. */
export interface Logger {
  log(level: LogLevel, event: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { log() {} };
