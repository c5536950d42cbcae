import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FrondError } from '../core/errors.js';

/**
 * Two processes on one data dir would share a worker ID and hand out the same snowflake IDs, so a
 * node takes the dir with a pid file. A file left by a killed process (its pid is gone) is taken over.
 */
export function lockDataDir(dir: string): () => void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'frond.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx' });
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new FrondError(
        'INVALID_CONFIG',
        `data dir ${dir} is in use by process ${pid}; give each node its own --data-dir (or delete ${path} if that process is not frond)`,
      );
    }
    rmSync(path, { force: true });
  }
  throw new FrondError('INVALID_CONFIG', `cannot lock data dir ${dir}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
