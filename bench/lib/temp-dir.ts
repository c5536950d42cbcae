import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(prefix = 'frond-bench-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
