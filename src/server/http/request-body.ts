import type { IncomingMessage } from 'node:http';
import { FrondError } from '../../core/errors.js';

/** Admin bodies are a few fields; 16 KiB is generous and keeps a client from streaming megabytes. */
export const MAX_BODY_BYTES = 16 * 1024;

/**
 * The client went away before its body ended: nobody is left to answer, and nothing is wrong with
 * the node, so it is neither logged as an internal error nor counted in `frond_errors_total`.
 */
export class ClientAbortedError extends FrondError {
  constructor() {
    super('INVALID_ARGUMENT', 'the client closed the connection before the body ended');
  }
}

export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise((resolve, reject) => {
    // An abort shows as 'error' (ECONNRESET, "aborted") or as 'close' before 'end'.
    req.on('close', () => {
      if (!req.complete) reject(new ClientAbortedError());
    });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(tooLarge(limit));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', () => reject(req.complete ? tooLarge(limit) : new ClientAbortedError()));
  });
}

function tooLarge(limit: number): FrondError {
  return new FrondError('PAYLOAD_TOO_LARGE', `the request body is over ${limit} bytes`);
}
