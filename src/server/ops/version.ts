import { readFileSync } from 'node:fs';

/**
 * frond's version, from its package.json: the compiled file (dist/server/ops/) and the source
 * (src/server/ops/) both sit three folders below the package's root, in the repository and once
 * installed.
 */
export const FROND_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
