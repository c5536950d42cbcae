import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { ManualClock } from '../../../test/support/manual-clock.js';
import { isFrondError } from '../../core/errors.js';
import { checkAdminAccess, checkIdAccess, isLoopback, sameToken } from './access.js';
import { RateLimiter } from './rate-limit.js';

function req(authorization: string | undefined, remoteAddress = '127.0.0.1'): IncomingMessage {
  return {
    headers: authorization === undefined ? {} : { authorization },
    socket: { remoteAddress },
  } as unknown as IncomingMessage;
}

describe('access control', () => {
  it('compares tokens exactly, whatever their lengths', () => {
    assert.equal(sameToken('abc', 'abc'), true);
    assert.equal(sameToken('abc', 'abd'), false);
    assert.equal(sameToken('abc', 'abcd'), false);
    assert.equal(sameToken('', 'a'), false);
  });

  it('lets ID requests through with a bearer header or ?token=, and refuses others with UNAUTHORIZED', () => {
    const options = { tokens: ['t1', 't2'], adminToken: undefined };
    checkIdAccess(req('Bearer t2'), '', options);
    checkIdAccess(req(undefined), 'count=3&token=t1', options);
    for (const [auth, query] of [
      [undefined, ''],
      ['Bearer nope', ''],
      ['Basic dDE=', ''],
      [undefined, 'token=t3'],
    ] as const) {
      assert.throws(
        () => checkIdAccess(req(auth), query, options),
        (error) => isFrondError(error, 'UNAUTHORIZED'),
      );
    }
    checkIdAccess(req(undefined), '', { tokens: [], adminToken: undefined });
  });

  it('keeps the admin API on loopback without --admin-token, and behind the token with one', () => {
    checkAdminAccess(req(undefined, '::1'), { tokens: [], adminToken: undefined });
    checkAdminAccess(req(undefined, '::ffff:127.0.0.1'), { tokens: [], adminToken: undefined });
    assert.throws(
      () => checkAdminAccess(req(undefined, '10.0.0.5'), { tokens: [], adminToken: undefined }),
      (error) => isFrondError(error, 'FORBIDDEN'),
    );
    const withToken = { tokens: [], adminToken: 'root-secret' };
    checkAdminAccess(req('Bearer root-secret', '10.0.0.5'), withToken);
    assert.throws(
      () => checkAdminAccess(req(undefined, '127.0.0.1'), withToken),
      (error) => isFrondError(error, 'UNAUTHORIZED'),
    );
    assert.equal(isLoopback(undefined), false);
  });

  it('limits each client to its rate, with a one-second burst, without touching the others', () => {
    const clock = new ManualClock();
    const limiter = new RateLimiter(5, clock);
    for (let i = 0; i < 5; i++) limiter.take('a');
    assert.throws(
      () => limiter.take('a'),
      (error) => isFrondError(error, 'RATE_LIMITED') && error.retryable,
    );
    limiter.take('b');
    clock.set(clock.now() + 200);
    limiter.take('a');
    assert.throws(() => limiter.take('a'));
  });
});
