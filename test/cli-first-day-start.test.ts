// Issue 25, "A first day without traps", continued: a start that cannot work is one line on stderr
// and a non-zero exit within seconds, naming what to fix, for the files of the data dir. Each runs
// the real executable (cli-first-day.test.ts has the rest).
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { LOCK_FILE } from '../src/server/start/data-dir-lock.js';
import { HIGH_WATER_FILE, HIGH_WATER_JOURNAL } from '../src/stores/fencing/high-water-file.js';
import { WORKER_FILE } from '../src/worker-ids/file/file-worker-id-source.js';
import { assertOneLineError, asUnprivileged, escaped, runFrond, tempDir } from './support/frond-process.js';

/** Each file frond keeps in the data dir, with a start that reads it first and how it is read. */
const DATA_FILES = [
  { file: LOCK_FILE, args: [], verb: 'read', text: '999999\n' },
  { file: WORKER_FILE, args: ['--no-segment'], verb: 'read', text: '{"workerId":7,"lastTimestamp":1}\n' },
  { file: HIGH_WATER_FILE, args: ['--no-snowflake'], verb: 'read', text: '{"version":1,"stores":{}}\n' },
  // The journal is opened to be appended to, so one that can be read but not written stops the start too.
  { file: HIGH_WATER_JOURNAL, args: ['--no-snowflake'], verb: 'open', text: '' },
] as const;

/** A start that fails is one line and exit `code` within seconds (a hang fails it too). */
async function failedStart(args: string[], code: number, pattern: RegExp, env: NodeJS.ProcessEnv = {}) {
  const started = Date.now();
  const result = await runFrond(['serve', '--port', '0', ...args], { env, timeoutMs: 30_000 });
  assertOneLineError(result, code, pattern);
  assert.ok(Date.now() - started < 20_000, `within seconds: ${Date.now() - started} ms`);
  return result;
}

describe('a file of the data dir that cannot be read names the file and --data-dir (issue 25)', () => {
  it('a directory where frond keeps a file: the lock, the worker-ID record, the high-water and its journal', async () => {
    for (const { file, args, verb } of DATA_FILES) {
      const dataDir = tempDir();
      const path = join(dataDir, file);
      mkdirSync(path);
      await failedStart(
        ['--data-dir', dataDir, ...args],
        2,
        new RegExp(
          `^frond: --data-dir ${escaped(dataDir)}: cannot ${verb} ${escaped(path)} \\(it is a directory, EISDIR\\); move it away`,
        ),
      );
    }
  });

  it('as a user that may not read one (mode 000), or may read the journal but not append to it (0444)', async (t) => {
    const cases = [
      ...DATA_FILES.map((entry) => ({ ...entry, mode: 0o000 })),
      { ...(DATA_FILES[3] as (typeof DATA_FILES)[number]), mode: 0o444 },
    ];
    for (const { file, args, verb, text, mode } of cases) {
      // Reachable and writable for that user: only the one file is not theirs.
      const parent = tempDir();
      chmodSync(parent, 0o755);
      const dataDir = join(parent, 'data');
      mkdirSync(dataDir, { mode: 0o777 });
      chmodSync(dataDir, 0o777);
      const path = join(dataDir, file);
      writeFileSync(path, text, { mode });
      chmodSync(path, mode);
      const run = asUnprivileged(['serve', '--port', '0', '--data-dir', dataDir, ...args]);
      if (run === undefined) return t.skip('root without runuser: cannot run frond as another user');
      assertOneLineError(
        await run,
        2,
        new RegExp(
          `^frond: --data-dir ${escaped(dataDir)}: cannot ${verb} ${escaped(path)} \\(permission denied, EACCES\\); give this user read and write access to it`,
        ),
      );
    }
  });
});
