import type { TestContext } from 'node:test';

/**
 * A test whose service (PostgreSQL, ZooKeeper, …) is missing fails in CI (`CI=true`); on a laptop
 * it is skipped with a loud message, so a skip never hides a failure where it counts.
 */
export function serviceMissing(t: TestContext, service: string, reason: string): void {
  const message = `${service} is not reachable (${reason})`;
  if (process.env.CI === 'true') throw new Error(`${message}; CI must run it`);
  process.stderr.write(`\n*** SKIPPED: ${message} ***\n`);
  t.skip(message);
}
