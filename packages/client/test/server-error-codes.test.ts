import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ERROR_CODES, type FrondErrorCode } from '../../../src/core/errors.js';
import { FrondClientError, isFrondClientError, SERVER_ERROR_CODES } from '../src/errors.js';
import { RETRYABLE_STATUS } from '../src/http-source.js';

// The SDK copies the server's codes instead of importing them (it must not depend on src/), so this
// test is what keeps the copy in step.
describe("the SDK's server error codes", () => {
  it('are exactly the codes of the server registry', () => {
    assert.deepEqual(Object.keys(SERVER_ERROR_CODES).sort(), Object.keys(ERROR_CODES).sort());
  });

  it('carry the retryable flag of the registry', () => {
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      assert.equal(SERVER_ERROR_CODES[code as FrondErrorCode].retryable, spec.retryable, code);
    }
  });

  it('are retried by status exactly when the registry says retryable', () => {
    // The SDK decides by status (429, 502, 503, 504) so that a proxy's answer is retried too.
    for (const [code, spec] of Object.entries(ERROR_CODES)) {
      assert.equal(RETRYABLE_STATUS.has(spec.status), spec.retryable, `${code} (${spec.status})`);
    }
  });

  it("are what isFrondClientError accepts, with the client's own: a misspelt code does not compile", () => {
    const error = new FrondClientError('TAG_NOT_FOUND', 'tag order has no row', { status: 404 });
    assert.equal(isFrondClientError(error, 'TAG_NOT_FOUND'), true);
    assert.equal(isFrondClientError(error, 'CLIENT_CLOSED'), false);
    // The check `npx tsc --noEmit -p .` runs: were any string accepted, this line would be an
    // unused @ts-expect-error, which fails the typecheck.
    // @ts-expect-error 'TAG_NOT_FUOND' is no code
    assert.equal(isFrondClientError(error, 'TAG_NOT_FUOND'), false);
  });
});
