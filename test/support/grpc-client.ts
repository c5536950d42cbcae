import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export { freePort } from './tls-databases.js';

/** A self-signed P-256 certificate for 127.0.0.1 (IP SAN), for one day, written into `dir`. */
export function selfSignedCertificate(dir: string): { cert: string; key: string } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key],
      ...['-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

import {
  type ChannelCredentials,
  type Client,
  credentials,
  loadPackageDefinition,
  Metadata,
  type ServiceClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

/** The shipped protos, loaded as a user's Node client would (docs/grpc.md): int64 as strings. */
const PROTO_DIR = new URL('../../proto/', import.meta.url).pathname;
const definition = loadSync(['frond.proto', 'grpc/health/v1/health.proto'], {
  includeDirs: [PROTO_DIR],
  longs: String,
  enums: String,
  defaults: true,
});
const loaded = loadPackageDefinition(definition) as unknown as {
  frond: { v1: { Ids: ServiceClientConstructor } };
  grpc: { health: { v1: { Health: ServiceClientConstructor } } };
};

export interface GrpcAnswer<T> {
  reply?: T;
  error?: ServiceError;
  /** `frond-code` of the trailing metadata, when the call failed. */
  frondCode?: string | undefined;
}

/** A channel to one node: `ids` and `health` share it. Every call has a deadline. */
export class GrpcTestClient {
  readonly ids: Client;
  readonly health: Client;

  constructor(
    readonly address: string,
    creds: ChannelCredentials = credentials.createInsecure(),
    options: Record<string, unknown> = {},
  ) {
    this.ids = new loaded.frond.v1.Ids(address, creds, options);
    this.health = new loaded.grpc.health.v1.Health(address, creds, options);
  }

  /** One unary call: its reply, or its error with the frond code; never throws. */
  call<T = Record<string, unknown>>(
    method: string,
    request: object,
    options: { token?: string; deadlineMs?: number; service?: 'ids' | 'health' } = {},
  ): Promise<GrpcAnswer<T>> {
    const metadata = new Metadata();
    if (options.token !== undefined) metadata.set('authorization', `Bearer ${options.token}`);
    const client = options.service === 'health' ? this.health : this.ids;
    const fn = (client as unknown as Record<string, (...args: unknown[]) => void>)[method];
    if (fn === undefined) throw new Error(`no method ${method}`);
    return new Promise((resolve) => {
      fn.call(
        client,
        request,
        metadata,
        { deadline: Date.now() + (options.deadlineMs ?? 15_000) },
        (error: ServiceError | null, reply: T) => {
          if (error) resolve({ error, frondCode: error.metadata?.get('frond-code')[0]?.toString() });
          else resolve({ reply });
        },
      );
    });
  }

  /** The call's reply; throws with its status and frond code when it failed. */
  async ok<T = Record<string, unknown>>(
    method: string,
    request: object,
    options: { token?: string; deadlineMs?: number; service?: 'ids' | 'health' } = {},
  ): Promise<T> {
    const answer = await this.call<T>(method, request, options);
    if (answer.error)
      throw new Error(`${method} failed: ${answer.error.code} ${answer.error.details} (${answer.frondCode})`);
    return answer.reply as T;
  }

  close(): void {
    this.ids.close();
    this.health.close();
  }
}

/** The gRPC address of the node's `listening` log line (`grpc`). */
export function grpcAddressOf(logs: readonly string[]): string {
  for (const line of logs) {
    if (!line.includes('"listening"')) continue;
    const event = JSON.parse(line) as { event: string; grpc?: string };
    if (event.event === 'listening' && typeof event.grpc === 'string' && event.grpc !== 'off')
      return event.grpc;
  }
  throw new Error(`no gRPC address in the listening line:\n${logs.join('\n')}`);
}
