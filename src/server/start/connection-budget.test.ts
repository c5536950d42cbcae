import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { connectionCaps } from './connection-budget.js';

const off = {
  maxConnections: undefined,
  grpcPort: 0,
  grpcMaxConnections: undefined,
  respPort: 0,
  respMaxConnections: undefined,
};

describe('connection caps out of one descriptor budget', () => {
  it('HTTP alone takes the budget (ulimit -n less 128), as before', () => {
    assert.deepEqual(connectionCaps(off, 20_000), { http: 19_872, grpc: undefined, resp: undefined });
  });

  it('gRPC and RESP on without caps take a quarter each, HTTP the rest: the three never pass the limit', () => {
    for (const limit of [256, 1_024, 20_000, 1_048_576]) {
      const caps = connectionCaps({ ...off, grpcPort: 1, respPort: 2 }, limit);
      const total = caps.http + (caps.grpc ?? 0) + (caps.resp ?? 0);
      assert.ok(total <= limit - 128, `${limit}: ${JSON.stringify(caps)}`);
      assert.ok((caps.grpc ?? 0) <= 10_000 && (caps.grpc ?? 0) >= 16);
      assert.equal(caps.grpc, caps.resp);
    }
    assert.deepEqual(connectionCaps({ ...off, grpcPort: 1 }, 256), { http: 96, grpc: 32, resp: undefined });
  });

  it('caps given are kept as given', () => {
    const caps = connectionCaps(
      { ...off, maxConnections: 50, grpcPort: 1, grpcMaxConnections: 7, respPort: 1, respMaxConnections: 9 },
      256,
    );
    assert.deepEqual(caps, { http: 50, grpc: 7, resp: 9 });
  });

  it('no limit known: 10,000 for HTTP less the ports on', () => {
    assert.deepEqual(connectionCaps({ ...off, respPort: 1 }, undefined), {
      http: 7_500,
      grpc: undefined,
      resp: 2_500,
    });
  });
});
