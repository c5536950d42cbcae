import Database from 'better-sqlite3';
import { ERROR_CODES, FrondError, type FrondErrorCode } from '../../core/errors.js';
import { TAG_CATALOGUE_CALLS, type TagCatalogue } from '../../core/tag-catalogue.js';
import type { SegmentPrimitive } from '../segment-primitive.js';

/**
 * Every call the SQLite worker thread answers, once: the segment primitive's, the tag catalogue's
 * and `close`. The store's methods (sqlite-segment-store.ts) and the worker's dispatch
 * (sqlite-worker.ts) are made from this list, so a new call is a line here (or in
 * TAG_CATALOGUE_CALLS) and its method in sqlite-database.ts.
 */
export const SQLITE_CALLS = [
  'advance',
  'fence',
  'handBack',
  'recordGaps',
  ...TAG_CATALOGUE_CALLS,
  'close',
] as const;

export type SqliteMethod = (typeof SQLITE_CALLS)[number];

/**
 * What the SQLite worker thread answers: the store's calls, synchronous there (sqlite-database.ts).
 * Arguments and results cross by structured clone, which carries bigints (max_id up to 2^63 - 1),
 * Dates and Maps as they are, never through a JavaScript number.
 */
export type SqliteCalls = {
  [M in SqliteMethod]: (SegmentPrimitive & TagCatalogue)[M] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => R
    : never;
};

export function isSqliteMethod(method: unknown): method is SqliteMethod {
  return (SQLITE_CALLS as readonly unknown[]).includes(method);
}

export interface SqliteWorkerData {
  path: string;
}

export interface SqliteRequest {
  id: number;
  method: SqliteMethod;
  args: unknown[];
}

export type SqliteReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: WireError };

/**
 * An error as it crosses from the worker. Structured clone keeps only an Error's message, so the
 * kind and code travel beside it and `fromWire` makes the same class again: a FrondError with its
 * code (TAG_EXISTS, ID_RANGE_EXHAUSTED…), better-sqlite3's SqliteError with SQLite's code
 * (SQLITE_BUSY for a lock held past busy_timeout, SQLITE_ERROR for a missing table…), a TypeError
 * (better-sqlite3's answer to a closed database).
 */
export type WireError =
  | { kind: 'frond'; code: FrondErrorCode; message: string }
  | { kind: 'sqlite'; code: string; message: string }
  | { kind: 'type'; message: string }
  | { kind: 'error'; name: string; message: string };

export function toWire(error: unknown): WireError {
  if (error instanceof FrondError) return { kind: 'frond', code: error.code, message: error.message };
  if (error instanceof Database.SqliteError)
    return { kind: 'sqlite', code: error.code, message: error.message };
  if (error instanceof TypeError) return { kind: 'type', message: error.message };
  if (error instanceof Error) return { kind: 'error', name: error.name, message: error.message };
  return { kind: 'error', name: 'Error', message: String(error) };
}

export function fromWire(wire: WireError): Error {
  switch (wire.kind) {
    case 'frond':
      return new FrondError(wire.code in ERROR_CODES ? wire.code : 'INTERNAL', wire.message);
    case 'sqlite':
      return new Database.SqliteError(wire.message, wire.code);
    case 'type':
      return new TypeError(wire.message);
    case 'error': {
      const error = new Error(wire.message);
      error.name = wire.name;
      return error;
    }
  }
}
