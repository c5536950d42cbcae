import Database from 'better-sqlite3';
import { ERROR_CODES, FrondError, type FrondErrorCode } from '../../core/errors.js';
import type { Allocation } from '../../core/segment-store.js';
import type { NewTag, OpaqueSetting, TagRow } from '../../core/tag-admin.js';
import type { FencedAdvance, FenceOutcome, FenceRequest } from '../fencing/fence.js';

/**
 * What the SQLite worker thread answers: the store's calls, synchronous there (sqlite-database.ts).
 * Arguments and results cross by structured clone, which carries bigints (max_id up to 2^63 - 1),
 * Dates and Maps as they are, never through a JavaScript number.
 */
export interface SqliteCalls {
  advance(tag: string, step?: number): Allocation | undefined;
  advanceFenced(tag: string, step?: number): FencedAdvance | undefined;
  fence(request: FenceRequest): FenceOutcome;
  listTags(): string[];
  getTag(tag: string): TagRow | undefined;
  listRows(): TagRow[];
  listRowsAfter(after: string | undefined, limit: number): TagRow[];
  addTag(tag: NewTag): void;
  setStep(tag: string, step: number): void;
  tagOptions(tag: string): { opaque: OpaqueSetting | null } | undefined;
  listOpaque(): Map<string, OpaqueSetting>;
  addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): void;
  close(): void;
}

export type SqliteMethod = keyof SqliteCalls;

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
