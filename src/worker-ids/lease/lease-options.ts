import type { WorkerIdSource } from '../../core/worker-id-source.js';
import type { CoordinatorConfig, WorkerSourceContext } from '../worker-id-backend.js';
import { type LeaseBackend, LeaseWorkerIdSource } from './lease-worker-id-source.js';

/** Pause between two attempts to claim a worker ID. */
const CLAIM_RETRY_MS = 500;

/** A lease-mode source over `backend`, with the timings every coordinator shares. */
export function leaseSource(
  backend: LeaseBackend,
  config: CoordinatorConfig,
  context: WorkerSourceContext,
  monotonic: () => number,
): WorkerIdSource {
  return new LeaseWorkerIdSource(backend, {
    clock: context.clock,
    monotonic,
    logger: context.logger,
    timeoutMs: config.coordinatorTimeoutMs,
    // A crashed node's claim lasts one TTL after its last heartbeat; twice that and more is enough.
    acquireWaitMs: 2 * config.workerLeaseTtlMs + config.coordinatorTimeoutMs,
    retryMs: CLAIM_RETRY_MS,
  });
}
