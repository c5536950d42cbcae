import { decomposeSnowflake, parseSnowflakeId } from '../core/snowflake-layout.js';
import { DECODE } from './option-table.js';
import { parseCommand } from './options.js';

export async function decodeCommand(args: string[], out: (line: string) => void): Promise<number> {
  const { settings, positionals } = parseCommand(DECODE, args);
  const id = parseSnowflakeId(positionals[0] as string);
  const parts = decomposeSnowflake(id, settings.epoch);
  out(
    JSON.stringify({
      id: id.toString(),
      timestamp: parts.timestamp,
      time: new Date(parts.timestamp).toISOString(),
      workerId: parts.workerId,
      sequence: parts.sequence,
    }),
  );
  return 0;
}
