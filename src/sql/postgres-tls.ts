import type { ConnectionOptions } from 'node:tls';
import {
  clientPair,
  invalidTls,
  type NetworkSqlTls,
  type NetworkSqlTlsParameters,
  tlsFiles,
} from './network-sql-tls.js';

/**
 * libpq's TLS parameters, as a `postgres://` URL from psql, a managed database's console or
 * `DATABASE_URL` carries them: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`. `prefer` and `allow`
 * are refused: they fall back to plain text, and frond never does.
 */
export const POSTGRES_TLS: NetworkSqlTlsParameters = {
  names: ['sslmode', 'sslrootcert', 'sslcert', 'sslkey'],
  files: { ca: 'sslrootcert', cert: 'sslcert', key: 'sslkey' },
  read(values, { shown }) {
    const mode = values.get('sslmode');
    const rootCert = values.get('sslrootcert');
    const client = clientPair(values.get('sslcert'), values.get('sslkey'), ['sslcert', 'sslkey'], shown);
    const others = [...values.keys()].filter((name) => name !== 'sslmode');
    if (mode === undefined)
      throw invalidTls(
        `--store ${shown}: ${others.join(', ')} needs sslmode=require, verify-ca or verify-full`,
      );
    if (mode === 'disable') {
      if (others.length > 0) throw invalidTls(`--store ${shown}: sslmode=disable with ${others.join(', ')}`);
      return undefined;
    }
    if (mode === 'prefer' || mode === 'allow')
      throw invalidTls(
        `--store ${shown}: sslmode=${mode} may fall back to plain text, which frond never does: use sslmode=require, verify-ca or verify-full (or disable)`,
      );
    // sslrootcert=system (libpq 16): the system's CAs, Node.js's list here; it implies verify-full.
    if (rootCert === 'system' && mode !== 'verify-full')
      throw invalidTls(`--store ${shown}: sslrootcert=system needs sslmode=verify-full`);
    const ca = rootCert === undefined || rootCert === 'system' ? {} : { caFile: rootCert };
    switch (mode) {
      // As libpq: with a root certificate file, require checks the chain as verify-ca does.
      case 'require':
        return { verify: rootCert === undefined ? 'none' : 'ca', ...ca, ...client };
      case 'verify-ca':
        return { verify: 'ca', ...ca, ...client };
      case 'verify-full':
        return { verify: 'full', ...ca, ...client };
      default:
        throw invalidTls(
          `--store ${shown}: sslmode=${JSON.stringify(mode)} is invalid; use disable, require, verify-ca or verify-full`,
        );
    }
  },
};

/** pg's `ssl` option for `tls`: pg checks the host name itself unless told not to. */
export function postgresSsl(tls: NetworkSqlTls, store: string): ConnectionOptions {
  return {
    ...tlsFiles(tls, store, POSTGRES_TLS.files),
    rejectUnauthorized: tls.verify !== 'none',
    ...(tls.verify === 'ca' && { checkServerIdentity: () => undefined }),
    ...(tls.minVersion && { minVersion: tls.minVersion }),
    ...(tls.maxVersion && { maxVersion: tls.maxVersion }),
  };
}
