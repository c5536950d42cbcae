import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { FrondError } from '../../core/errors.js';
import type { AccessConfig } from '../start/serve-config.js';

/**
 * `--token` (empty: ID endpoints are open) and `--admin-token` (undefined: the admin API answers
 * only on loopback), as checked at start.
 */
export type AccessOptions = Pick<AccessConfig, 'tokens' | 'adminToken'>;

/**
 * Compares in constant time: both sides are hashed first, so neither the length nor the first
 * differing byte of a token shows in the time an answer takes.
 */
export function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Whether `given` is one of `tokens`; every token is compared, so the time does not tell which one nearly matched. */
export function anyTokenMatches(given: string | undefined, tokens: readonly string[]): boolean {
  let ok = false;
  if (given !== undefined) for (const token of tokens) ok = sameToken(given, token) || ok;
  return ok;
}

function bearerOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** The ID endpoints: a bearer header, or Tinyid's `?token=` parameter. */
export function checkIdAccess(req: IncomingMessage, query: string, options: AccessOptions): void {
  if (options.tokens.length === 0) return;
  const given =
    bearerOf(req) ?? (query.includes('token=') ? new URLSearchParams(query).get('token') : null) ?? undefined;
  if (!anyTokenMatches(given, options.tokens))
    throw new FrondError(
      'UNAUTHORIZED',
      'this node needs a token: send Authorization: Bearer <token> or ?token=<token>',
    );
}

export function checkAdminAccess(req: IncomingMessage, options: AccessOptions): void {
  if (options.adminToken === undefined) {
    if (!isLoopback(req.socket.remoteAddress)) {
      throw new FrondError(
        'FORBIDDEN',
        'the admin API answers only on loopback unless the node runs with --admin-token',
      );
    }
    return;
  }
  const given = bearerOf(req);
  if (given === undefined || !sameToken(given, options.adminToken)) {
    throw new FrondError('UNAUTHORIZED', 'the admin API needs Authorization: Bearer <admin token>');
  }
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
