import { spawnSync } from 'node:child_process';
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { createSecureContext } from 'node:tls';
import { FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { readGivenFile } from '../../platform/data-file.js';

/**
 * Descriptors a node needs besides its connections: stdio, the event loop, the store's pool, the
 * SQLite files, the coordinator, the cluster channel, the record file and the one kept in reserve.
 */
export const RESERVED_DESCRIPTORS = 128;
/** The most a default gRPC or RESP cap holds (src/server/start/connection-budget.ts). */
export const PORT_CONNECTIONS_CAP = 10_000;
/** The fewest connections the default allows, however low the descriptor limit. */
const MIN_CONNECTIONS = 16;

/**
 * TLS 1.3, and TLS 1.2 with forward secrecy (ECDHE) and an AEAD cipher only: Mozilla's
 * "intermediate" list. No CBC suites (AES128-SHA, AES256-SHA), no RSA key exchange.
 */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** RSA keys below this many bits can be factored with public means; refused at start. */
export const MIN_RSA_BITS = 2048;

export interface HttpServerOptions {
  /** A PEM certificate and key (`readTls`): the server then speaks HTTPS. */
  tls: { cert: Buffer; key: Buffer } | undefined;
  /** ms a request may take to arrive, headers and body; then 408. */
  requestTimeoutMs: number;
  /** Connections held at once; more are closed as they arrive. */
  maxConnections: number;
  logger: Logger;
}

/**
 * The `http.Server` (or HTTPS) of a node: bounded request time (checked every second, so a slow
 * request is cut within a second of the bound, not 30 s later), a cap on connections below the
 * descriptor limit, modern TLS only, and a status for each malformed request.
 */
export function createHttpServer(handler: RequestListener, options: HttpServerOptions): Server {
  const timeout = options.requestTimeoutMs;
  const http: ServerOptions = {
    requestTimeout: timeout,
    headersTimeout: timeout,
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(timeout / 4))),
  };
  const server = options.tls
    ? createTlsServer(
        {
          ...http,
          ...options.tls,
          minVersion: 'TLSv1.2',
          ciphers: TLS_CIPHERS,
          honorCipherOrder: true,
        },
        handler,
      )
    : createServer(http, handler);
  server.maxConnections = options.maxConnections;
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A malformed request gets a status instead of a silent reset; nothing reaches the process.
    if (socket.writable) socket.end(clientErrorAnswer(error.code));
    options.logger.log('debug', 'http.client_error', { error: error.message, code: error.code });
  });
  return server;
}

/** 408 for a request that took too long to arrive, 431 for headers over Node's limit, else 400. */
export function clientErrorAnswer(code: string | undefined): string {
  const [status, reason] =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout']
      : code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large']
        : [400, 'Bad Request'];
  return `HTTP/1.1 ${status} ${reason}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`;
}

/**
 * Reads `--tls-cert` and `--tls-key` at start and checks them as HTTPS will use them, before
 * anything else starts: a file that holds no PEM key or certificate, an encrypted key, a key that is
 * not the certificate's, or a weak key is one line naming the flag, never OpenSSL's text (`error:
 * 0480006C:PEM routines::no start line`, which names no file).
 */
export function readTls(paths: { cert: string; key: string }): { cert: Buffer; key: Buffer } {
  const key = readGivenFile(`--tls-key ${paths.key}`, paths.key, 'the PEM private key of --tls-cert');
  const privateKey = tlsPrivateKey(key, paths.key);
  assertStrongKey(privateKey, paths.key);
  const cert = readGivenFile(`--tls-cert ${paths.cert}`, paths.cert, 'the PEM certificate');
  assertCertificateOf(cert, { pem: key, key: privateKey }, paths);
  return { cert, key };
}

/** PKCS #8 (`BEGIN ENCRYPTED PRIVATE KEY`) or OpenSSL's traditional form (`Proc-Type: 4,ENCRYPTED`). */
const ENCRYPTED_PEM = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED/;

/** The key of `--tls-key`; a file without one frond can use is one line saying what to give. */
function tlsPrivateKey(pem: Buffer, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (error) {
    throw new FrondError(
      'INVALID_CONFIG',
      ENCRYPTED_PEM.test(pem.toString('latin1')) ||
        (error as { code?: unknown }).code === 'ERR_MISSING_PASSPHRASE'
        ? `--tls-key ${path} is encrypted, and frond takes no passphrase: give it decrypted (openssl pkey -in ${path} -out key.pem), readable by this user only`
        : `--tls-key ${path} holds no private key frond can read: give the path of the PEM private key of --tls-cert (-----BEGIN PRIVATE KEY-----)`,
      { cause: error },
    );
  }
}

/** `--tls-cert` holds a certificate, of `key`, that Node.js's TLS takes with it. */
function assertCertificateOf(
  pem: Buffer,
  { pem: keyPem, key }: { pem: Buffer; key: KeyObject },
  paths: { cert: string; key: string },
): void {
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(pem);
  } catch (error) {
    throw new FrondError(
      'INVALID_CONFIG',
      `--tls-cert ${paths.cert} holds no certificate frond can read: give the path of the PEM certificate (-----BEGIN CERTIFICATE-----)`,
      { cause: error },
    );
  }
  if (!certificate.checkPrivateKey(key))
    throw new FrondError(
      'INVALID_CONFIG',
      `--tls-key ${paths.key} is not the key of --tls-cert ${paths.cert}: give the key the certificate was made for`,
    );
  try {
    createSecureContext({ cert: pem, key: keyPem });
  } catch (error) {
    // The first certificate is the key's: what follows it (the chain) is not a PEM certificate.
    throw new FrondError(
      'INVALID_CONFIG',
      `--tls-cert ${paths.cert}: its chain after the first certificate cannot be read (${(error as { code?: string }).code ?? 'unknown error'}); give the certificate and its chain as PEM, each -----BEGIN CERTIFICATE-----`,
      { cause: error },
    );
  }
}

/** Refuses an RSA key under 2048 bits and a DSA key, with a line that says what to use. */
export function assertStrongKey(key: KeyObject, path: string): void {
  const details = { type: key.asymmetricKeyType, bits: key.asymmetricKeyDetails?.modulusLength };
  const fix = `use an RSA key of ${MIN_RSA_BITS} bits or more, or an EC key (openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 …)`;
  if ((details.type === 'rsa' || details.type === 'rsa-pss') && (details.bits ?? 0) < MIN_RSA_BITS)
    throw new FrondError(
      'INVALID_CONFIG',
      `--tls-key ${path} is a ${details.bits}-bit RSA key, too weak: ${fix}`,
    );
  if (details.type === 'dsa')
    throw new FrondError(
      'INVALID_CONFIG',
      `--tls-key ${path} is a DSA key, which TLS 1.3 does not take: ${fix}`,
    );
}

/**
 * The soft limit on open file descriptors (`ulimit -n`), read at start: from /proc on Linux, else
 * from the shell; undefined when neither tells (or there is no limit).
 */
export function descriptorLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (line) return line[1] === 'unlimited' ? undefined : Number(line[1]);
  } catch {
    // Not Linux: ask the shell, which has the same limits as this process.
  }
  const shell = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 });
  const n = Number(shell.stdout?.trim());
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** `--max-connections` by default: the descriptor limit less what the node needs besides them. */
export function defaultMaxConnections(limit: number | undefined = descriptorLimit()): number {
  if (limit === undefined) return 10_000;
  return Math.max(MIN_CONNECTIONS, limit - RESERVED_DESCRIPTORS);
}
