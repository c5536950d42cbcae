import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options } from '@grpc/proto-loader';
import { FrondError } from '../../core/errors.js';

/**
 * The package's `proto/` directory: three levels up from this module, both as
 * `src/server/grpc/grpc-proto.ts` and as `dist/server/grpc/grpc-proto.js`, so it is found in a
 * checkout, in a build and in an installed package alike (package.json ships `proto/`).
 */
export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

export const FROND_PROTO = 'frond.proto';
export const HEALTH_PROTO = 'grpc/health/v1/health.proto';

/**
 * How the server reads the messages. `longs: String`: an int64 arrives as its decimal string, so a
 * 64-bit ID above 2^53 keeps its last digits (a JavaScript number would round it). `defaults`: an
 * unset field reads as its zero (count 0), as every other language's stubs see it.
 */
export const PROTO_OPTIONS: Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

export interface FrondServices {
  ids: ServiceDefinition;
  health: ServiceDefinition;
}

/** Both services, read from the shipped `.proto` files (a missing one is one line naming it). */
export function loadServices(dir: string = PROTO_DIR): FrondServices {
  for (const file of [FROND_PROTO, HEALTH_PROTO])
    if (!existsSync(`${dir}${file}`))
      throw new FrondError(
        'INVALID_CONFIG',
        `--grpc-port needs ${dir}${file}, which this installation of frond lacks: reinstall the package`,
      );
  const definition = loadSync([FROND_PROTO, HEALTH_PROTO], { ...PROTO_OPTIONS, includeDirs: [dir] });
  return {
    ids: definition['frond.v1.Ids'] as ServiceDefinition,
    health: definition['grpc.health.v1.Health'] as ServiceDefinition,
  };
}
