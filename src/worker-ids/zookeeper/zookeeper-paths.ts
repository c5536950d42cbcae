/**
 * Leaf's layout, `/snowflake/{name}/forever/{ip:port}-{10-digit sequence}`, and frond's lease mode
 * beside it, `/snowflake/{name}/lease/claims/{workerId}` (ephemeral) and
 * `/snowflake/{name}/lease/workers/{workerId}` (persistent, the last recorded timestamp), and
 * `/snowflake/{name}/clock` to read ZooKeeper's clock. Leaf reads only `forever`, so all can share
 * a name; frond keeps Leaf and lease mode from handing out the same worker ID.
 */
export function zookeeperPaths(name: string) {
  const root = `/snowflake/${name}`;
  return {
    forever: `${root}/forever`,
    /** Written at a node's start to read ZooKeeper's clock (its mtime) for the clock comparison. */
    clock: `${root}/clock`,
    claims: `${root}/lease/claims`,
    workers: `${root}/lease/workers`,
  };
}

export interface ForeverNode {
  /** The child's name, `{identity}-{sequence}`. */
  node: string;
  identity: string;
  workerId: number;
}

/**
 * Splits a `forever` child at its last `-` (Leaf splits at every `-`, which is why frond refuses a
 * `-` in names and addresses). Children that do not parse are left out.
 */
export function parseForeverNode(node: string): ForeverNode | undefined {
  const dash = node.lastIndexOf('-');
  const sequence = node.slice(dash + 1);
  if (dash <= 0 || !/^[0-9]{1,10}$/.test(sequence)) return undefined;
  return { node, identity: node.slice(0, dash), workerId: Number(sequence) };
}

/** Leaf's node data: `{"ip":"10.1.2.3","port":"8080","timestamp":1567733700834}`, port a string. */
export function leafNodeData(host: string, port: number, timestamp: number): Buffer {
  return Buffer.from(JSON.stringify({ ip: host, port: String(port), timestamp }));
}

/** The `timestamp` of Leaf's node data, or undefined when the data is not Leaf's JSON. */
export function leafNodeTimestamp(data: Buffer): number | undefined {
  try {
    const parsed = JSON.parse(data.toString('utf8')) as { timestamp?: unknown };
    return typeof parsed.timestamp === 'number' && Number.isSafeInteger(parsed.timestamp)
      ? parsed.timestamp
      : undefined;
  } catch {
    return undefined;
  }
}
