// TLS to a database server (issue 17). Each dialect reads its own URL parameters (libpq's for
// PostgreSQL, MySQL's client options for MySQL/MariaDB) into one NetworkSqlTls; each store hands it
// to its driver (pg, mysql2) with the PEM files read.
import { isIP } from 'node:net';
import { FrondError } from '../core/errors.js';
import { readGivenFile } from '../platform/data-file.js';

export const TLS_VERSIONS = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];

/** TLS to the database, as a store URL asks for it. frond never falls back to plain text. */
export interface NetworkSqlTls {
  /**
   * What is checked of the server's certificate: nothing (`none`: encrypted, not authenticated),
   * its chain up to a trusted CA (`ca`), or the chain and the host name (`full`).
   */
  verify: 'none' | 'ca' | 'full';
  /** PEM file of the CAs to trust; without it, Node.js's own list (plus `NODE_EXTRA_CA_CERTS`). */
  caFile?: string;
  /** PEM files of a client certificate and its key, for servers that authenticate clients. */
  certFile?: string;
  keyFile?: string;
  minVersion?: TlsVersion;
  maxVersion?: TlsVersion;
}

/** The TLS parameters a dialect's store URL takes: their names, and how they read together. */
export interface NetworkSqlTlsParameters {
  readonly names: readonly string[];
  /** The parameters that name the CA file, the client certificate and its key, for messages. */
  readonly files: { readonly ca: string; readonly cert: string; readonly key: string };
  /** `values` holds only the parameters of `names` that the URL gives; undefined: plain TCP. */
  read(values: ReadonlyMap<string, string>, context: TlsReadContext): NetworkSqlTls | undefined;
}

export interface TlsReadContext {
  /** The URL without its password, for messages. */
  shown: string;
  host: string;
}

/**
 * The files of `tls` read, as Node's `tls` options take them. One that cannot be read is one line
 * of INVALID_CONFIG naming `--store` and the URL parameter (`files`, the dialect's names):
 * `--store postgres://frond@db:5432/ids: sslrootcert=/etc/ca.pem: no such file; give the path of …`.
 * `store` is the database without its password (`describeNetworkSql`).
 */
export function tlsFiles(
  tls: NetworkSqlTls,
  store: string,
  files: NetworkSqlTlsParameters['files'],
): { ca?: Buffer; cert?: Buffer; key?: Buffer } {
  const read = (parameter: string, path: string, what: string) =>
    readGivenFile(`--store ${store}: ${parameter}=${path}`, path, what);
  return {
    ...(tls.caFile === undefined
      ? {}
      : {
          ca: read(
            files.ca,
            tls.caFile,
            "the PEM file of the CAs that signed the database server's certificate",
          ),
        }),
    ...(tls.certFile === undefined
      ? {}
      : { cert: read(files.cert, tls.certFile, 'the PEM client certificate') }),
    ...(tls.keyFile === undefined
      ? {}
      : { key: read(files.key, tls.keyFile, `the PEM private key of ${files.cert}`) }),
  };
}

/** `TLSv1.2,TLSv1.3` (MySQL's `--tls-version`, Connector/J's `tlsVersions`): the lowest and highest. */
export function tlsVersionRange(
  text: string,
  where: string,
): { minVersion: TlsVersion; maxVersion: TlsVersion } {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const indexes = items.map((item) => TLS_VERSIONS.findIndex((v) => v.toLowerCase() === item.toLowerCase()));
  if (items.length === 0 || indexes.some((index) => index < 0))
    throw invalidTls(`${where}=${JSON.stringify(text)}: use a comma list of ${TLS_VERSIONS.join(', ')}`);
  return {
    minVersion: TLS_VERSIONS[Math.min(...indexes)] as TlsVersion,
    maxVersion: TLS_VERSIONS[Math.max(...indexes)] as TlsVersion,
  };
}

/** A client certificate needs its key, and a key its certificate. */
export function clientPair(
  cert: string | undefined,
  key: string | undefined,
  names: [string, string],
  shown: string,
): { certFile?: string; keyFile?: string } {
  if ((cert === undefined) !== (key === undefined))
    throw invalidTls(`--store ${shown}: ${names[0]} and ${names[1]} go together`);
  return cert === undefined || key === undefined ? {} : { certFile: cert, keyFile: key };
}

/** Whether `host` is an IP address rather than a name (a certificate's name cannot be checked then by mysql2). */
export function isIpAddress(host: string): boolean {
  return isIP(host) !== 0;
}

export function invalidTls(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}
