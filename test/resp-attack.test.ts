import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as tlsConnect } from 'node:tls';
import { Redis } from 'ioredis';
import { type FrondProcess, startFrond, tempDir } from './support/frond-process.js';
import { randomTag } from './support/random-tag.js';
import { freePort } from './support/tls-databases.js';

/** Findings of the attack on the RESP port: each test fails on 61c5c28. */

function rsaSelfSigned(dir: string): { cert: string; key: string } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  chmodSync(key, 0o644);
  return { cert, key };
}

/** Whether a TLS 1.2 handshake offering only `cipher` succeeds on `port`. */
function handshakes(port: number, cipher: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      ciphers: cipher,
      maxVersion: 'TLSv1.2',
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(false);
    }, 5_000);
    socket.on('secureConnect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
}

describe('RESP attack: guards HTTP and gRPC have', () => {
  let frond: FrondProcess;
  let respPort: number;
  const tag = randomTag();

  before(async () => {
    const dir = tempDir();
    const tls = rsaSelfSigned(dir);
    respPort = await freePort();
    frond = await startFrond([
      '--port',
      '0',
      '--resp-port',
      String(respPort),
      '--data-dir',
      join(dir, 'data'),
      '--log-format',
      'json',
      '--rate-limit',
      '5',
      '--tls-cert',
      tls.cert,
      '--tls-key',
      tls.key,
    ]);
    const response = await fetch(`${frond.url}/v1/tags`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tag }),
    }).catch(() => undefined);
    // HTTPS with a self-signed certificate: create the tag over RESP's node through the CLI instead.
    if (response?.status !== 201)
      execFileSync('node', ['bin/frond', 'tag', 'add', tag, '--data-dir', join(dir, 'data')], {
        stdio: 'ignore',
      });
  });
  after(() => frond?.stop());

  it('refuses a CBC suite without forward secrecy (AES128-SHA) on the RESP port, as HTTPS does', async () => {
    const httpPort = Number(new URL(frond.url).port);
    assert.equal(await handshakes(httpPort, 'AES128-SHA'), false, 'HTTPS refuses AES128-SHA');
    assert.equal(await handshakes(respPort, 'AES128-SHA'), false, 'the RESP port accepts AES128-SHA');
  });

  it('counts RESP commands against --rate-limit, as it counts HTTP requests and gRPC calls', async () => {
    const redis = new Redis({
      host: '127.0.0.1',
      port: respPort,
      stringNumbers: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      tls: { rejectUnauthorized: false },
    });
    try {
      const replies = await Promise.all(
        Array.from({ length: 50 }, () => redis.incr(tag).then(String, (caught: Error) => caught.message)),
      );
      assert.ok(
        replies.some((reply) => reply.startsWith('RATE_LIMITED')),
        `50 INCRs at once with --rate-limit 5 were all answered: ${replies.slice(0, 5).join(', ')} …`,
      );
    } finally {
      redis.disconnect();
    }
  });
});
