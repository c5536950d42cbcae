import { readFileSync } from 'node:fs';

/**
 * frond's version, from its package.json: the compiled file (dist/server/) and the source
 * (src/server/) both sit two folders below the package's root, in the repository and once installed.
 */
export const FROND_VERSION: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
