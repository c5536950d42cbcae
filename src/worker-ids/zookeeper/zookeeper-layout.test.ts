import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clockSkew } from './clock-skew.js';
import { leafNodeData, leafNodeTimestamp, parseForeverNode } from './zookeeper-paths.js';

describe("Leaf's ZooKeeper layout", () => {
  it('parses a child at its last dash, and leaves out what is not Leaf', () => {
    assert.deepEqual(parseForeverNode('10.1.2.3:8080-0000000004'), {
      node: '10.1.2.3:8080-0000000004',
      identity: '10.1.2.3:8080',
      workerId: 4,
    });
    assert.equal(parseForeverNode('10.1.2.3:8080-0000001024')?.workerId, 1024);
    assert.equal(parseForeverNode('10.1.2.3:8080'), undefined);
    assert.equal(parseForeverNode('-0000000001'), undefined);
    assert.equal(parseForeverNode('10.1.2.3:8080-00x'), undefined);
  });

  it("writes Leaf's node data, port as a string, and reads its timestamp back", () => {
    const data = leafNodeData('10.1.2.3', 8080, 1567733700834);
    assert.equal(data.toString(), '{"ip":"10.1.2.3","port":"8080","timestamp":1567733700834}');
    assert.equal(leafNodeTimestamp(data), 1567733700834);
    assert.equal(leafNodeTimestamp(Buffer.from('10.1.2.3')), undefined, "Curator's default parent data");
  });
});

describe('clockSkew', () => {
  const T = 1_800_000_000_000;
  it("compares offsets from ZooKeeper's clock, so ZooKeeper's own clock cancels out", () => {
    // ZooKeeper's clock is 7 s off; the others agree with each other, this node is 1.5 s behind them.
    const others = [
      { timestamp: T + 10, mtime: T + 7010 },
      { timestamp: T + 1000, mtime: T + 8005 },
      { timestamp: T + 2000, mtime: T + 9000 },
    ];
    assert.deepEqual(clockSkew({ timestamp: T + 2500, mtime: T + 11_000 }, others, 9000), {
      skewMs: -1500,
      liveNodes: 3,
    });
  });

  it('counts only nodes that wrote within the live window, by ZooKeeper clock', () => {
    const own = { timestamp: T, mtime: T };
    assert.equal(clockSkew(own, [{ timestamp: T - 60_000, mtime: T - 10_000 }], 9000), undefined);
    assert.deepEqual(clockSkew(own, [{ timestamp: T - 8000, mtime: T - 9000 }], 9000), {
      skewMs: -1000,
      liveNodes: 1,
    });
  });
});
