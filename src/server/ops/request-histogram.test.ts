import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestHistogram } from './request-histogram.js';

describe('RequestHistogram', () => {
  it('reports cumulative buckets, sum and count per route and status, as Prometheus expects', async () => {
    const histogram = new RequestHistogram();
    histogram.observe('leaf_segment', 200, 0.00004);
    histogram.observe('leaf_segment', 200, 0.0003);
    histogram.observe('leaf_segment', 200, 9);
    histogram.observe('v1_segment', 503, 0.001);
    const { values } = await histogram.get();
    const bucket = (route: string, le: number | string) =>
      values.find((v) => v.metricName.endsWith('_bucket') && v.labels.route === route && v.labels.le === le)
        ?.value;
    assert.equal(bucket('leaf_segment', 0.00005), 1);
    assert.equal(bucket('leaf_segment', 0.00025), 1);
    assert.equal(bucket('leaf_segment', 0.0005), 2);
    assert.equal(bucket('leaf_segment', 5), 2);
    assert.equal(bucket('leaf_segment', '+Inf'), 3);
    assert.equal(bucket('v1_segment', 0.001), 1, 'a value on a bound falls in that bucket (le)');
    const count = values.find((v) => v.metricName.endsWith('_count') && v.labels.route === 'leaf_segment');
    assert.equal(count?.value, 3);
    const sum = values.find((v) => v.metricName.endsWith('_sum') && v.labels.route === 'leaf_segment');
    assert.ok(Math.abs((sum?.value ?? 0) - 9.00034) < 1e-9);
  });
});
