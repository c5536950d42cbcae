import type { Server } from 'node:net';

/** At most one line about refused connections this often (ms); each says how many were refused since the last. */
export const DROP_LOG_MS = 10_000;

/**
 * Calls `log` for the first connection `server` refuses past its `maxConnections`, then at most
 * once per DROP_LOG_MS with the count since: a line per refused connection let any client write
 * the node's log as fast as it could connect (300 refusals, 300 lines).
 */
export function onDropsThrottled(server: Server, log: (refused: number) => void): void {
  let dropped = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  server.on('drop', () => {
    dropped++;
    const now = performance.now();
    if (now - loggedAt < DROP_LOG_MS) return;
    loggedAt = now;
    log(dropped);
    dropped = 0;
  });
}
