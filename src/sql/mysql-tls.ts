import type { SslOptions } from 'mysql2';
import {
  clientPair,
  invalidTls,
  isIpAddress,
  type NetworkSqlTls,
  type NetworkSqlTlsParameters,
  tlsFiles,
  tlsVersionRange,
} from './network-sql-tls.js';

/** The values of `ssl-mode`, as MySQL's client and Connector/J's `sslMode` spell them. */
export const MYSQL_SSL_MODES = ['DISABLED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'] as const;
export type MysqlSslMode = (typeof MYSQL_SSL_MODES)[number];

/**
 * MySQL's own client options as URL parameters (the names of MySQL Shell's connection URIs):
 * `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key`, `tls-version`. `ssl-ca` alone means VERIFY_CA (a CA
 * given is a CA checked). PREFERRED is refused: it falls back to plain text, and frond never does.
 */
export const MYSQL_TLS: NetworkSqlTlsParameters = {
  names: ['ssl-mode', 'ssl-ca', 'ssl-cert', 'ssl-key', 'tls-version'],
  files: { ca: 'ssl-ca', cert: 'ssl-cert', key: 'ssl-key' },
  read(values, { shown, host }) {
    const text = values.get('ssl-mode');
    const caFile = values.get('ssl-ca');
    const others = [...values.keys()].filter((name) => name !== 'ssl-mode');
    const mode = text === undefined ? (caFile === undefined ? undefined : 'VERIFY_CA') : text.toUpperCase();
    if (mode === undefined)
      throw invalidTls(
        `--store ${shown}: ${others.join(', ')} needs ssl-mode=REQUIRED, VERIFY_CA or VERIFY_IDENTITY`,
      );
    if (mode === 'DISABLED') {
      if (others.length > 0)
        throw invalidTls(`--store ${shown}: ssl-mode=DISABLED with ${others.join(', ')}`);
      return undefined;
    }
    if (mode === 'PREFERRED')
      throw invalidTls(
        `--store ${shown}: ssl-mode=PREFERRED may fall back to plain text, which frond never does: use REQUIRED, VERIFY_CA or VERIFY_IDENTITY (or DISABLED)`,
      );
    if (!(MYSQL_SSL_MODES as readonly string[]).includes(mode))
      throw invalidTls(
        `--store ${shown}: ssl-mode=${JSON.stringify(text)} is invalid; use ${MYSQL_SSL_MODES.join(', ')}`,
      );
    // mysql2 checks the name only for a host name: with an IP address it would check "localhost".
    if (mode === 'VERIFY_IDENTITY' && isIpAddress(host))
      throw invalidTls(
        `--store ${shown}: ssl-mode=VERIFY_IDENTITY needs the server's host name in the URL, not an IP address (or use VERIFY_CA)`,
      );
    const versions = values.get('tls-version');
    return {
      verify: mode === 'REQUIRED' ? 'none' : mode === 'VERIFY_CA' ? 'ca' : 'full',
      ...(caFile === undefined ? {} : { caFile }),
      ...clientPair(values.get('ssl-cert'), values.get('ssl-key'), ['ssl-cert', 'ssl-key'], shown),
      ...(versions === undefined ? {} : tlsVersionRange(versions, `--store ${shown}: tls-version`)),
    };
  },
};

/** mysql2's `ssl` option for `tls`: mysql2 checks the host name only with `verifyIdentity`. */
export function mysqlSsl(tls: NetworkSqlTls, store: string): SslOptions {
  return {
    ...tlsFiles(tls, store, MYSQL_TLS.files),
    rejectUnauthorized: tls.verify !== 'none',
    verifyIdentity: tls.verify === 'full',
    ...(tls.minVersion && { minVersion: tls.minVersion }),
    ...(tls.maxVersion && { maxVersion: tls.maxVersion }),
  };
}
