import type { ServerResponse } from 'node:http';
import { FrondError, isFrondError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { HTTP_STATUS } from './http-status.js';

// Leaf answers `text/plain;charset=UTF-8` with the bare decimal ID and no newline.
const TEXT_HEADERS = { 'content-type': 'text/plain;charset=UTF-8' };
const JSON_TYPE = 'application/json; charset=utf-8';

export function sendText(res: ServerResponse, body: string): void {
  res.writeHead(200, TEXT_HEADERS);
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  sendJsonText(res, status, JSON.stringify(body));
}

export function sendJsonText(res: ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'content-type': JSON_TYPE });
  res.end(json);
}

export function sendHtml(res: ServerResponse, html: string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(html);
}

/**
 * `{"error": {"code", "message"}}` with the status of the code. Anything that is not a FrondError
 * is a bug: the client gets a generic 500 and the stack goes to the log, never to the client.
 */
export function sendError(res: ServerResponse, error: unknown, logger: Logger): void {
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
    return;
  }
  const status = HTTP_STATUS[failure.code];
  const headers: Record<string, string> = { 'content-type': JSON_TYPE };
  if (failure.retryable) headers['retry-after'] = '1';
  if (failure.code === 'METHOD_NOT_ALLOWED') headers.allow = 'GET';
  res.writeHead(status, headers);
  res.end(JSON.stringify({ error: { code: failure.code, message: failure.message } }));
}
