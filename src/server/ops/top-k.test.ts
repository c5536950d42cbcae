import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TopK } from './top-k.js';

describe('TopK', () => {
  it('keeps the k largest, best first, whatever the order they come in', () => {
    const values = Array.from({ length: 1_000 }, (_, i) => (i * 7_919) % 1_000);
    const top = new TopK<number>(10, (a, b) => a > b);
    for (const value of values) top.offer(value);
    assert.deepEqual(top.sorted(), [999, 998, 997, 996, 995, 994, 993, 992, 991, 990]);
  });

  it('keeps everything when there are fewer than k, and nothing when k is 0', () => {
    const few = new TopK<number>(5, (a, b) => a > b);
    for (const value of [3, 1, 2]) few.offer(value);
    assert.deepEqual(few.sorted(), [3, 2, 1]);
    const none = new TopK<number>(0, (a, b) => a > b);
    none.offer(1);
    assert.deepEqual(none.sorted(), []);
  });
});
