import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchesFixed, segmentAfter, springLookupPath } from './spring-path.js';

describe('Spring MVC path matching', () => {
  it('takes one non-empty segment after the prefix, a trailing slash ignored', () => {
    const prefix = '/api/segment/get/';
    assert.equal(segmentAfter(prefix, '/api/segment/get/a'), 'a');
    assert.equal(segmentAfter(prefix, '/api/segment/get/order-2'), 'order-2');
    assert.equal(segmentAfter(prefix, '/api/segment/get/a/'), 'a');
    assert.equal(segmentAfter(prefix, '/api/segment/get/a%2Fb'), 'a%2Fb');
    for (const path of [
      '/api/segment/get/',
      '/api/segment/get//',
      '/api/segment/get/a/b',
      '/api/segment/get/a//',
      '/api/segment/get/a/b/',
      '/api/segment/get',
      '/api/snowflake/get/a',
    ])
      assert.equal(segmentAfter(prefix, path), undefined, path);
  });

  it('matches a fixed pattern with one trailing slash, and cleans a path only when it must', () => {
    assert.ok(matchesFixed('/cache', '/cache'));
    assert.ok(matchesFixed('/cache', '/cache/'));
    assert.ok(!matchesFixed('/cache', '/cache//'));
    assert.ok(!matchesFixed('/cache', '/cachex'));
    const plain = '/api/segment/get/a';
    assert.equal(springLookupPath(plain), plain);
    assert.equal(springLookupPath('/api;x/segment//get/a;b'), '/api/segment/get/a');
  });
});
