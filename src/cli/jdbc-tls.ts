// The TLS properties of Leaf's `leaf.jdbc.url` (issue 12, item 5): a JDBC driver's TLS settings
// become the store URL's TLS parameters (src/stores/*/…-tls.ts), so `useSSL=true&requireSSL=true`
// is TLS in frond too. What cannot be carried over (Java key stores, Java cipher names) stops the
// start with one line saying what to give instead; it is never dropped. Properties that are not
// about TLS are not read here.
import { FrondError } from '../core/errors.js';

export type JdbcDialect = 'mysql' | 'mariadb' | 'postgresql';

/** A Java key store cannot be read by Node.js: what to give instead. */
const KEY_STORE_HINT =
  'frond reads PEM files, not Java key stores: export the certificates as PEM and give --store (or FROND_STORE) with ssl-ca, ssl-cert and ssl-key, which wins over leaf.jdbc.url; a CA alone can also go in NODE_EXTRA_CA_CERTS';
const CIPHER_HINT =
  'Java cipher-suite names do not carry over to Node.js: remove it (Node.js offers only strong ciphers by default) or restrict TLS versions with tlsVersions';

/** Connector/J's and MariaDB Connector/J's TLS properties (lower case: frond reads them in any case). */
const MYSQL_TLS_KEYS = [
  'sslmode',
  'usessl',
  'requiressl',
  'verifyservercertificate',
  'enabledtlsprotocols',
  'tlsversions',
  'enabledsslciphersuites',
  'tlsciphersuites',
  'trustcertificatekeystoreurl',
  'trustcertificatekeystoretype',
  'trustcertificatekeystorepassword',
  'clientcertificatekeystoreurl',
  'clientcertificatekeystoretype',
  'clientcertificatekeystorepassword',
  'fallbacktosystemtruststore',
  'fallbacktosystemkeystore',
];
const MARIADB_TLS_KEYS = [
  'sslmode',
  'usessl',
  'trustservercertificate',
  'disablesslhostnameverification',
  'serversslcert',
  'enabledsslprotocolsuites',
  'enabledsslciphersuites',
  'keystore',
  'keystorepassword',
  'keystoretype',
  'keypassword',
];
const POSTGRESQL_TLS_KEYS = [
  'ssl',
  'sslmode',
  'sslrootcert',
  'sslcert',
  'sslkey',
  'sslfactory',
  'sslpassword',
  'sslhostnameverifier',
];

/** Whether `key` (any case) is one of the driver's TLS properties, read by `tlsParametersFromJdbc`. */
export function isJdbcTlsKey(dialect: JdbcDialect, key: string): boolean {
  const keys =
    dialect === 'mysql' ? MYSQL_TLS_KEYS : dialect === 'mariadb' ? MARIADB_TLS_KEYS : POSTGRESQL_TLS_KEYS;
  return keys.includes(key.toLowerCase());
}

/**
 * The store URL's TLS parameters (`ssl-mode=REQUIRED`, `sslmode=verify-full`, …) for the TLS
 * properties in a JDBC URL's query; an empty list when it has none (plain TCP, as before).
 */
export function tlsParametersFromJdbc(
  dialect: JdbcDialect,
  query: string,
  where: string,
): [string, string][] {
  const props = new Map<string, string>();
  for (const [key, value] of new URLSearchParams(query.replace(/;/g, '&')))
    props.set(key.toLowerCase(), value);
  const keys =
    dialect === 'mysql' ? MYSQL_TLS_KEYS : dialect === 'mariadb' ? MARIADB_TLS_KEYS : POSTGRESQL_TLS_KEYS;
  const given = new Map([...props].filter(([key]) => keys.includes(key)));
  if (given.size === 0) return [];
  const context = { props: given, where };
  if (dialect === 'mysql') return fromConnectorJ(context);
  if (dialect === 'mariadb') return fromMariadbConnectorJ(context);
  return fromPgJdbc(context);
}

interface Context {
  props: Map<string, string>;
  where: string;
}

function invalid(message: string): FrondError {
  return new FrondError('INVALID_CONFIG', message);
}

/** A boolean property as Connector/J reads it: true/false or yes/no, any case; absent: `fallback`. */
function flag({ props, where }: Context, key: string, fallback: boolean): boolean {
  const value = props.get(key);
  if (value === undefined) return fallback;
  if (/^(true|yes)$/i.test(value)) return true;
  if (/^(false|no)$/i.test(value)) return false;
  throw invalid(`${where}: ${key}=${JSON.stringify(value)} must be true or false`);
}

function refuse({ props, where }: Context, keys: string[], hint: string): void {
  const found = keys.filter((key) => props.has(key));
  if (found.length > 0) throw invalid(`${where}: ${found.join(', ')}: ${hint}`);
}

/**
 * MySQL Connector/J (8.0 and later; its security properties). `sslMode` wins; without it the
 * legacy properties are translated as Connector/J documents: `useSSL=false` DISABLED,
 * `verifyServerCertificate=true` VERIFY_CA, `requireSSL=true` REQUIRED, otherwise PREFERRED (their
 * defaults: useSSL true, requireSSL and verifyServerCertificate false). PREFERRED becomes REQUIRED:
 * frond never falls back to plain text, so a server without TLS fails the connection instead.
 * Without a trust store, VERIFY_CA checks against Node.js's CA list (plus `NODE_EXTRA_CA_CERTS`),
 * as Connector/J falls back to the JVM's.
 */
function fromConnectorJ(context: Context): [string, string][] {
  const { props, where } = context;
  refuse(
    context,
    [
      'trustcertificatekeystoreurl',
      'trustcertificatekeystoretype',
      'trustcertificatekeystorepassword',
      'clientcertificatekeystoreurl',
      'clientcertificatekeystoretype',
      'clientcertificatekeystorepassword',
    ],
    KEY_STORE_HINT,
  );
  refuse(context, ['enabledsslciphersuites', 'tlsciphersuites'], CIPHER_HINT);
  if (!flag(context, 'fallbacktosystemtruststore', true))
    throw invalid(`${where}: fallbackToSystemTrustStore=false without a trust store would trust no CA`);
  flag(context, 'fallbacktosystemkeystore', true);
  let mode: string;
  const explicit = props.get('sslmode');
  if (explicit !== undefined) {
    mode = explicit.toUpperCase();
    const modes = ['DISABLED', 'PREFERRED', 'REQUIRED', 'VERIFY_CA', 'VERIFY_IDENTITY'];
    if (!modes.includes(mode))
      throw invalid(`${where}: sslMode=${JSON.stringify(explicit)} is invalid; use ${modes.join(', ')}`);
  } else if (!flag(context, 'usessl', true)) mode = 'DISABLED';
  else if (flag(context, 'verifyservercertificate', false)) mode = 'VERIFY_CA';
  else if (flag(context, 'requiressl', false)) mode = 'REQUIRED';
  else mode = 'PREFERRED';
  if (mode === 'DISABLED') return [['ssl-mode', 'DISABLED']];
  const versions = props.get('tlsversions') ?? props.get('enabledtlsprotocols');
  return [
    ['ssl-mode', mode === 'PREFERRED' ? 'REQUIRED' : mode],
    ...(versions === undefined ? [] : ([['tls-version', versions]] as [string, string][])),
  ];
}

/**
 * MariaDB Connector/J: `sslMode` disable, trust (no check), verify-ca, verify-full; or its 2.x
 * properties (`useSsl` verifies fully unless `trustServerCertificate` or
 * `disableSslHostnameVerification`). `serverSslCert` is the CA file (a path; `classpath:` and
 * inline certificates cannot be read by frond).
 */
function fromMariadbConnectorJ(context: Context): [string, string][] {
  const { props, where } = context;
  refuse(context, ['keystore', 'keystorepassword', 'keystoretype', 'keypassword'], KEY_STORE_HINT);
  refuse(context, ['enabledsslciphersuites'], CIPHER_HINT);
  const modes: Record<string, string> = {
    disable: 'DISABLED',
    trust: 'REQUIRED',
    'verify-ca': 'VERIFY_CA',
    'verify-full': 'VERIFY_IDENTITY',
  };
  let mode: string | undefined;
  const explicit = props.get('sslmode');
  if (explicit !== undefined) {
    mode = modes[explicit.toLowerCase()];
    if (mode === undefined)
      throw invalid(
        `${where}: sslMode=${JSON.stringify(explicit)} is invalid; use ${Object.keys(modes).join(', ')}`,
      );
  } else if (!flag(context, 'usessl', false)) mode = 'DISABLED';
  else if (flag(context, 'trustservercertificate', false)) mode = 'REQUIRED';
  else if (flag(context, 'disablesslhostnameverification', false)) mode = 'VERIFY_CA';
  else mode = 'VERIFY_IDENTITY';
  if (mode === 'DISABLED') return [['ssl-mode', 'DISABLED']];
  const ca = props.get('serversslcert');
  if (ca !== undefined && (ca.startsWith('classpath:') || ca.includes('-----BEGIN')))
    throw invalid(`${where}: serverSslCert must be a file path for frond (${KEY_STORE_HINT})`);
  const versions = props.get('enabledsslprotocolsuites');
  return [
    ['ssl-mode', mode],
    ...(ca === undefined ? [] : ([['ssl-ca', ca.replace(/^file:(\/\/)?/, '')]] as [string, string][])),
    ...(versions === undefined ? [] : ([['tls-version', versions]] as [string, string][])),
  ];
}

/**
 * PostgreSQL's JDBC driver: `sslmode` as libpq's (prefer and allow become require: frond never
 * falls back to plain text), `ssl=true` alone is verify-full (pgJDBC's rule), `sslrootcert`,
 * `sslcert`, `sslkey` (PEM files for frond; pgJDBC's default key format is DER, convert it with
 * `openssl pkcs8 -inform DER -in key.pk8 -out key.pem`). `sslfactory=…NonValidatingFactory` is
 * require.
 */
function fromPgJdbc(context: Context): [string, string][] {
  const { props, where } = context;
  refuse(context, ['sslpassword', 'sslhostnameverifier'], KEY_STORE_HINT);
  const factory = props.get('sslfactory');
  const nonValidating = factory !== undefined && /\.NonValidatingFactory$/.test(factory);
  if (factory !== undefined && !nonValidating)
    throw invalid(`${where}: sslfactory=${factory} cannot be carried over (${KEY_STORE_HINT})`);
  const explicit = props.get('sslmode')?.toLowerCase();
  let mode: string;
  if (explicit !== undefined) mode = explicit === 'prefer' || explicit === 'allow' ? 'require' : explicit;
  else if (props.has('ssl') && !flag(context, 'ssl', true)) mode = 'disable';
  else mode = nonValidating ? 'require' : 'verify-full';
  if (mode === 'disable') return [['sslmode', 'disable']];
  const files = ['sslrootcert', 'sslcert', 'sslkey'].flatMap((key): [string, string][] => {
    const value = props.get(key);
    return value === undefined ? [] : [[key, value]];
  });
  return [['sslmode', mode], ...files];
}
