import { parseServeArgs } from '../../src/cli/serve.js';
import { serveConfig } from '../../src/cli/serve-config.js';
import type { ServeConfig } from '../../src/server/start/serve-config.js';

/**
 * A complete ServeConfig as `frond serve` would build it from these flags (no environment), for
 * tests that start the server in-process: new settings get their defaults here without edits.
 */
export function testServeConfig(dataDir: string, overrides: Partial<ServeConfig> = {}): ServeConfig {
  const flags = [
    '--port',
    '0',
    '--data-dir',
    dataDir,
    '--log-level',
    'error',
    '--shutdown-timeout-ms',
    '1000',
  ];
  return { ...serveConfig(parseServeArgs(flags, {})), ...overrides };
}
