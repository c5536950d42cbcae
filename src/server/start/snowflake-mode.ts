import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/logger.js';
import { DEFAULT_SNOWFLAKE_OPTIONS, SnowflakeService } from '../../core/snowflake-service.js';
import { openWorkerIdSource } from '../../worker-ids/worker-id-registry.js';
import type { Cleanups } from './cleanups.js';
import type { ListenConfig, SnowflakeConfig, StartConfig } from './serve-config.js';

/**
 * Starts snowflake mode: a worker ID from the coordinator (`--zk`, `--etcd`) or the data dir's
 * file, and the generator on it; its close goes into `cleanups`.
 */
export async function openSnowflakeMode(
  config: SnowflakeConfig & Pick<StartConfig, 'dataDir'> & Pick<ListenConfig, 'port'>,
  clock: Clock,
  logger: Logger,
  cleanups: Cleanups,
): Promise<SnowflakeService> {
  const snowflake = await SnowflakeService.start(
    openWorkerIdSource(config.coordinator, {
      dataDir: config.dataDir,
      workerId: config.workerId,
      maxWorkerId: config.layout.maxWorkerId,
      httpPort: config.port,
      recordAheadMs: DEFAULT_SNOWFLAKE_OPTIONS.recordAheadMs,
      clock,
      logger,
    }),
    clock,
    logger,
    {
      ...DEFAULT_SNOWFLAKE_OPTIONS,
      layout: config.layout,
      randomSequence: config.randomSequence,
      clockToleranceMs: config.clockToleranceMs,
      clockStartupWaitMs: config.clockStartupWaitMs,
    },
  );
  cleanups.push(() => snowflake.close());
  return snowflake;
}
