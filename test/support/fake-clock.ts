import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { tempDir } from './frond-process.js';
import { serviceMissing } from './service-gate.js';

export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

export interface FakeClock {
  /** The environment that puts a frond process on this clock. */
  env: NodeJS.ProcessEnv;
  /** Moves the wall clock of every process on it, at once: "-30s", "+0". */
  set(offset: string): void;
}

/**
 * A wall clock off by `offset` ("-2s", "-1h", "+0") for the processes given `env` only
 * (libfaketime, installed by scripts/services.sh). The offset is read from a file on every call
 * (FAKETIME_NO_CACHE), so `set` moves a running process's clock; monotonic time is left alone,
 * so timers keep firing as they would on a real machine whose clock NTP steps.
 */
export function fakeClock(t: TestContext, offset: string): FakeClock | undefined {
  if (!existsSync(LIBFAKETIME)) {
    serviceMissing(t, 'libfaketime', `${LIBFAKETIME} is missing; run scripts/services.sh`);
    return undefined;
  }
  return offsetClock(offset);
}

/** `fakeClock` where the caller has checked that libfaketime is installed (a suite's `before`). */
export function offsetClock(offset: string): FakeClock {
  const file = join(tempDir('frond-faketime-'), 'faketime.rc');
  const set = (value: string) => writeFileSync(file, `${value}\n`);
  set(offset);
  return {
    env: {
      LD_PRELOAD: LIBFAKETIME,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
    set,
  };
}
