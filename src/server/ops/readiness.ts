import type { SegmentAllocator } from '../../core/segment-allocator.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import type { OpaqueDeclaration } from '../opaque/opaque-config.js';
import type { OpaqueTags } from '../opaque/opaque-tags.js';
import type { StatsSampler } from './stats-sampler.js';

/** What `/readyz` answers (and `/v1/stats` carries for the dashboard). */
export interface Readiness {
  ready: boolean;
  /** Each condition with whether it holds and why, for the operator reading `/readyz`. */
  checks: Record<string, { ok: boolean; detail: string }>;
  /**
   * What needs an operator soon but does not stop the node serving (so `ready` stays true): the
   * snowflake time bits with under three years left. Empty when all is well.
   */
  warnings: string[];
}

/**
 * Ready when the node can serve: snowflake mode holds its worker ID, and segment mode has reached
 * its store (the last tag-list read or load worked) or has IDs buffered to ride out the outage.
 */
export function readiness(
  segment: SegmentAllocator | undefined,
  snowflake: SnowflakeService | undefined,
  stats: StatsSampler,
  opaque?: OpaqueTags,
  declaration?: OpaqueDeclaration,
): Readiness {
  const checks: Readiness['checks'] = {};
  const warnings: string[] = [];
  if (opaque) {
    // Never the secret: its fingerprint, to compare across nodes (all must show the same).
    const fingerprint = opaque.fingerprint;
    const problem = declaration?.problem;
    checks.opaque = {
      ok: problem === undefined,
      detail:
        fingerprint === null
          ? 'no opaque-ID secret: opaque tags are refused on this node'
          : `opaque-ID secret fingerprint ${fingerprint}${problem === undefined ? '' : `; ${problem}`}`,
    };
  }
  if (snowflake) {
    // A lease-mode node that lost its lease answers 503 until it holds a worker ID again.
    const ok = snowflake.available;
    checks.snowflake = {
      ok,
      detail: ok ? `worker ID ${snowflake.workerId}` : 'worker ID lease lost; claiming a new one',
    };
    const timeLeft = snowflake.timeLeftWarning();
    if (timeLeft !== undefined) warnings.push(timeLeft);
  }
  if (segment) {
    const reachable = segment.storeReachable;
    const buffered = stats.anyBuffered();
    // A store that answered with a refusal (an account without a privilege, frond's tables missing)
    // is reached: the fix is a GRANT or a table, not the network.
    const failure = segment.storeFailure;
    checks.segment = {
      ok: reachable || buffered,
      detail: reachable
        ? `store ${segment.store.description} reachable`
        : failure?.code === 'INVALID_CONFIG'
          ? `store answers but refuses (${buffered ? 'serving buffered IDs' : 'nothing buffered'}): ${failure.message}`
          : buffered
            ? 'store unreachable; serving buffered IDs'
            : 'store unreachable and nothing buffered',
    };
  }
  return { ready: Object.values(checks).every((check) => check.ok), checks, warnings };
}
