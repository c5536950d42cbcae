/** One node's last report: its own clock (`timestamp`) and ZooKeeper's clock when it was written (`mtime`). */
export interface ClockReport {
  timestamp: number;
  mtime: number;
}

export interface ClockSkew {
  /** This node's clock minus the median of the other live nodes' clocks; positive: ahead. */
  skewMs: number;
  /** How many other nodes reported recently enough to count. */
  liveNodes: number;
}

/**
 * Compares this node's clock with the other live nodes' (the check Leaf's design describes and its
 * code never shipped), from what ZooKeeper already holds and without any RPC between the nodes.
 *
 * Each node writes its clock into its node every 3 s (`timestamp`, Leaf's report) and ZooKeeper
 * stamps each write with its own clock (`mtime`), so `timestamp - mtime` is that node's offset from
 * ZooKeeper's clock, measured within one write's latency (a millisecond or two on a LAN). Two
 * nodes' offsets subtract to the difference between their clocks; ZooKeeper's own clock cancels
 * out. `own` is this node's write made just now (its clock taken halfway through the round trip).
 * A node counts as live when ZooKeeper's clock saw its last write within `liveWindowMs`.
 */
export function clockSkew(
  own: ClockReport,
  others: ClockReport[],
  liveWindowMs: number,
): ClockSkew | undefined {
  const live = others.filter((report) => own.mtime - report.mtime <= liveWindowMs);
  if (live.length === 0) return undefined;
  const offsets = live.map((report) => report.timestamp - report.mtime).sort((a, b) => a - b);
  const middle = offsets.length >> 1;
  const median =
    offsets.length % 2 === 1
      ? (offsets[middle] as number)
      : ((offsets[middle - 1] as number) + (offsets[middle] as number)) / 2;
  return { skewMs: Math.round(own.timestamp - own.mtime - median), liveNodes: live.length };
}
