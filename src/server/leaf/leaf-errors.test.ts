import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClockMovedBackwardsError, FrondError } from '../../core/errors.js';
import { leafFailure, springError } from './leaf-errors.js';

const result = (id: number) => `Result{id=${id}, status=EXCEPTION}`;

describe("Leaf's errors", () => {
  it('answers segment failures as SegmentIDGenImpl: -2 for a tag it does not know, -3 for no IDs now', () => {
    const message = (error: unknown) => leafFailure(error, 'segment').message;
    assert.equal(message(new FrondError('TAG_NOT_FOUND', 'x')), result(-2));
    assert.equal(message(new FrondError('INVALID_TAG', 'x')), result(-2));
    for (const code of [
      'SEGMENT_UNAVAILABLE',
      'STORE_UNAVAILABLE',
      'ID_RANGE_EXHAUSTED',
      'SEGMENT_REGRESSED',
    ] as const)
      assert.equal(message(new FrondError(code, 'x')), result(-3), code);
    assert.equal(message(new Error('a bug')), result(-3));
    assert.equal(leafFailure(new FrondError('TAG_NOT_FOUND', 'x'), 'segment').status, 500);
  });

  it('answers snowflake failures as SnowflakeIDGenImpl: -1 still behind after the wait, -3 too far behind', () => {
    const message = (error: unknown, tolerance = 5) => leafFailure(error, 'snowflake', tolerance).message;
    assert.equal(message(new ClockMovedBackwardsError(3)), result(-1));
    assert.equal(message(new ClockMovedBackwardsError(5)), result(-1));
    assert.equal(message(new ClockMovedBackwardsError(6)), result(-3));
    assert.equal(message(new ClockMovedBackwardsError(8), 10), result(-1));
    // What Leaf does not have is "not initialized", -1.
    for (const code of ['WORKER_ID_UNAVAILABLE', 'TIMESTAMP_NOT_RECORDED', 'SHUTTING_DOWN'] as const)
      assert.equal(message(new FrondError(code, 'x')), result(-1), code);
  });

  it("keeps frond's own refusals at their status, in Spring Boot's shape without an exception", () => {
    const unauthorized = leafFailure(new FrondError('UNAUTHORIZED', 'a token is required'), 'segment');
    assert.deepEqual(unauthorized, { status: 401, exception: undefined, message: 'a token is required' });
    assert.equal(leafFailure(new FrondError('RATE_LIMITED', 'slow down'), 'snowflake').status, 429);
    const body = springError(unauthorized, '/api/segment/get/a', 1000);
    assert.deepEqual(Object.keys(body), ['timestamp', 'status', 'error', 'message', 'path']);
    assert.equal(body.error, 'Unauthorized');
  });

  it('answers the pages with segment mode off as LeafMonitorController: IllegalArgumentException', () => {
    assert.deepEqual(leafFailure(new FrondError('MODE_DISABLED', 'off'), 'page'), {
      status: 500,
      exception: 'java.lang.IllegalArgumentException',
      message: 'You should config leaf.segment.enable=true first',
    });
  });
});
