import { decomposeSnowflake, LEAF_EPOCH, parseSnowflakeId } from '../core/snowflake-layout.js';
import { integerOption, parseCommand } from './options.js';

export async function decodeCommand(args: string[], out: (line: string) => void): Promise<number> {
  const parsed = parseCommand('decode', args, { epoch: { type: 'string' } }, ['id']);
  const id = parseSnowflakeId(parsed.positionals[0] as string);
  const parts = decomposeSnowflake(id, integerOption(parsed, 'epoch', LEAF_EPOCH, 0, Date.now()));
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
