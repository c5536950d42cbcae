import type { ServerResponse } from 'node:http';
import { FrondError, type FrondErrorCode, isFrondError, retryAfterOf } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { httpStatusOf } from './http-status.js';

// Leaf answers `text/plain;charset=UTF-8` with the bare decimal ID and no newline.
const TEXT_TYPE = 'text/plain;charset=UTF-8';
const JSON_TYPE = 'application/json; charset=utf-8';

// Every answer carries content-length: `writeHead` without it makes node:http send the body chunked,
// a header and framing more per answer and a multi-buffer writev instead of one write.
/**
 * The headers of a one-ID answer as the flat array `writeHead` takes (no object whose keys node:http
 * walks with for…in and hasOwnProperty); slot 3 is the content-length, set just before each
 * `writeHead`, which copies the array into the header text before it returns.
 */
const TEXT_HEADERS: [string, string, string, number] = ['content-type', TEXT_TYPE, 'content-length', 0];
const JSON_HEADERS: [string, string, string, number] = ['content-type', JSON_TYPE, 'content-length', 0];

/** One ID in decimal (`String(id)`: ASCII, so its length is its byte count), as Leaf answers it. */
export function sendId(res: ServerResponse, decimal: string): void {
  TEXT_HEADERS[3] = decimal.length;
  res.writeHead(200, TEXT_HEADERS);
  res.end(decimal);
}

/** A formatted tag's number on Leaf's route: text, whose byte count may differ from its length (UTF-8). */
export function sendText(res: ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': TEXT_TYPE, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** `{"ids":["…"]}` for one ID in decimal: the bytes `idsJson([id])` makes, without a Buffer. */
export function sendOneIdJson(res: ServerResponse, decimal: string): void {
  const json = `{"ids":["${decimal}"]}`;
  JSON_HEADERS[3] = json.length;
  res.writeHead(200, JSON_HEADERS);
  res.end(json);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/** JSON already encoded, as `idsJson` makes it. */
export function sendJsonBytes(res: ServerResponse, status: number, json: Buffer): void {
  JSON_HEADERS[3] = json.length;
  res.writeHead(status, JSON_HEADERS);
  res.end(json);
}

export function sendHtml(
  res: ServerResponse,
  html: string | Buffer,
  headers: Record<string, string> = {},
): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': typeof html === 'string' ? Buffer.byteLength(html) : html.length,
    ...headers,
  });
  res.end(html);
}

/**
 * `{"error": {"code", "message"}}` with the status of the code. Anything that is not a FrondError
 * is a bug: the client gets a generic 500 and the stack goes to the log, never to the client.
 */
export function sendError(res: ServerResponse, error: unknown, logger: Logger): FrondErrorCode {
  let failure: FrondError;
  if (isFrondError(error)) {
    failure = error;
  } else {
    logger.log('error', 'http.internal_error', {
      error: error instanceof Error ? error.stack : String(error),
    });
    failure = new FrondError('INTERNAL', 'internal error; the server log has the details');
  }
  if (res.headersSent) {
    res.destroy();
    return failure.code;
  }
  const status = httpStatusOf(failure);
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  if (failure.retryable) headers['retry-after'] = String(retryAfterOf(failure) ?? 1);
  if (failure.code === 'METHOD_NOT_ALLOWED') headers.allow = (failure as { allow?: string }).allow ?? 'GET';
  res.writeHead(status, headers);
  res.end(JSON.stringify({ error: { code: failure.code, message: failure.message } }));
  return failure.code;
}

/** METHOD_NOT_ALLOWED with the methods the route answers, for the `Allow` header. */
export function methodNotAllowed(message: string, allow: string): FrondError {
  return Object.assign(new FrondError('METHOD_NOT_ALLOWED', message), { allow });
}
