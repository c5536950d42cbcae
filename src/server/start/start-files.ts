import { readStoreFiles } from '../../stores/store-registry.js';
import { readTls } from '../http/http-server.js';
import { OpaqueSecret } from '../opaque/opaque-keys.js';
import type { ServeConfig } from './serve-config.js';

/** What `readStartFiles` read: the PEM pair, and segment mode's opaque-ID secret (null: none, or no segment mode). */
export interface StartFiles {
  tls: { cert: Buffer; key: Buffer } | undefined;
  opaqueSecret: OpaqueSecret | null;
}

/**
 * The files a start reads that its settings name, read before it takes the port, locks the data
 * dir or writes anything: `--tls-cert` and `--tls-key`, and in segment mode the TLS files of the
 * `--store` URL (`sslrootcert`, `ssl-ca`, …) and `FROND_OPAQUE_SECRET_FILE`. One that cannot be
 * read is one line naming its setting (src/platform/data-file.ts). A `--workers` primary reads
 * them before it locks the node's data dir; each worker reads them again for its own start.
 */
export function readStartFiles(config: ServeConfig): StartFiles {
  const tls = config.tls && readTls(config.tls);
  if (!config.segment) return { tls, opaqueSecret: null };
  readStoreFiles(config.store);
  const opaqueSecret =
    config.opaqueSecret === undefined ? (OpaqueSecret.fromEnvironment() ?? null) : config.opaqueSecret;
  return { tls, opaqueSecret };
}
