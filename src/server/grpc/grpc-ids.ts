import type { Metadata, ServerUnaryCall, sendUnaryData, UntypedServiceImplementation } from '@grpc/grpc-js';
import { FrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { IdRun, SegmentId } from '../../core/segment-buffer.js';
import { parseSnowflakeId, type SnowflakeLayout } from '../../core/snowflake-layout.js';
import type { SnowflakeService } from '../../core/snowflake-service.js';
import { assertValidTag } from '../../core/tag.js';
import { type AccessOptions, anyTokenMatches } from '../http/access.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { idModes } from '../ids/id-modes.js';
import { MAX_COUNT, MAX_RANGE_COUNT } from '../ids/v1-handlers.js';
import type { TagIssuer } from '../opaque/tag-issuer.js';
import { grpcError } from './grpc-status.js';

/** What the `frond.v1.Ids` methods issue from: the same issuer and generator as the HTTP routes. */
export interface GrpcIdDeps {
  /** Absent when segment mode is off: MODE_DISABLED, as on HTTP. */
  issuer: TagIssuer | undefined;
  snowflake: SnowflakeService | undefined;
  layout: SnowflakeLayout;
  access: AccessOptions;
  /** `--rate-limit`, the same buckets as HTTP's: a client's address is one client on both. */
  rateLimiter: RateLimiter | undefined;
  logger: Logger;
}

/**
 * An int64 as protobufjs takes it: a number while it is exact, else its decimal string (a bigint it
 * does not take). Both encode as the same varint.
 */
type WireId = number | string;

function wire(id: SegmentId): WireId {
  return typeof id === 'bigint' ? id.toString() : id;
}

function wireRuns(runs: readonly IdRun[]): { start: string; end: string }[] {
  return runs.map((run) => ({ start: run.start.toString(), end: run.end.toString() }));
}

/**
 * `count` as a message carries it: proto3 cannot tell 0 from unset, so 0 is "not set", which is 1
 * as on HTTP (no `?count=`); else 1 to `max`.
 */
export function grpcCount(count: unknown, max = MAX_COUNT): number {
  const value = typeof count === 'number' ? count : Number(count ?? 0);
  if (value === 0) return 1;
  if (!(Number.isInteger(value) && value >= 1 && value <= max))
    throw new FrondError('INVALID_COUNT', `invalid count ${String(count)}: use an integer from 1 to ${max}`);
  return value;
}

/** `authorization: Bearer <token>`, the same tokens as HTTP's (`--token`); the metadata key is lower case. */
export function checkGrpcAccess(metadata: Metadata, options: AccessOptions): void {
  if (options.tokens.length === 0) return;
  const [header] = metadata.get('authorization');
  const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  if (!anyTokenMatches(match?.[1], options.tokens))
    throw new FrondError(
      'UNAUTHORIZED',
      'this node needs a token: send metadata authorization: Bearer <token>',
    );
}

/** The address of a peer (`127.0.0.1:5000`, `[::1]:5000`), without its port: the rate limit's client. */
export function peerAddress(peer: string): string {
  const bracketed = /^\[(.*)\]:\d+$/.exec(peer);
  if (bracketed) return bracketed[1] as string;
  const colon = peer.lastIndexOf(':');
  return colon > 0 && peer.indexOf(':') === colon ? peer.slice(0, colon) : peer;
}

type Answer = (request: Record<string, unknown>, deps: GrpcIdDeps) => Promise<object> | object;

/**
 * The methods of `frond.v1.Ids`. `deps` resolves once the node's modes are open: a call that
 * arrives before waits for it, as an HTTP request does. Every call is checked for its token and
 * counted against the rate limit before anything is issued; every failure ends the call with the
 * status of its code (`grpc-status.ts`).
 */
export function createIdService(deps: Promise<GrpcIdDeps>, logger: Logger): UntypedServiceImplementation {
  let ready: GrpcIdDeps | undefined;
  void deps.then(
    (value) => {
      ready = value;
    },
    () => {},
  );
  const unary =
    (answer: Answer) =>
    (call: ServerUnaryCall<Record<string, unknown>, object>, callback: sendUnaryData<object>) => {
      const run = async (current: GrpcIdDeps) => {
        checkGrpcAccess(call.metadata, current.access);
        current.rateLimiter?.take(peerAddress(call.getPeer()));
        return answer(call.request, current);
      };
      (async () => run(ready ?? (await deps)))().then(
        (reply) => callback(null, reply),
        (error: unknown) => callback(grpcError(error, logger)),
      );
    };

  return {
    Next: unary(async (request, { issuer, snowflake }) => {
      const segment = idModes(issuer, snowflake).needSegment();
      const tag = assertValidTag(String(request.tag ?? ''));
      // A buffered ID is answered without waiting on the issuer's promise.
      const id = segment.tryOne(tag) ?? (await segment.one(tag));
      // A formatted tag's number is text: `text` holds it and `id` stays 0 (unset).
      return typeof id === 'string' ? { text: id } : { id: wire(id) };
    }),
    Batch: unary(async (request, { issuer, snowflake }) => {
      const segment = idModes(issuer, snowflake).needSegment();
      const tag = assertValidTag(String(request.tag ?? ''));
      const ids = await segment.many(tag, grpcCount(request.count));
      if (typeof ids[0] === 'string') return { texts: ids };
      return { ids: (ids as SegmentId[]).map(wire) };
    }),
    Ranges: unary(async (request, { issuer, snowflake }) => {
      const segment = idModes(issuer, snowflake).needSegment();
      const tag = assertValidTag(String(request.tag ?? ''));
      const count = grpcCount(request.count, MAX_RANGE_COUNT);
      return { ranges: wireRuns(await segment.ranges(tag, count)), count };
    }),
    Snowflake: unary(async (request, { issuer, snowflake }) => {
      const service = idModes(issuer, snowflake).needSnowflake();
      const ids = await service.nextMany(grpcCount(request.count));
      return { ids: ids.map(wire) };
    }),
    Decode: unary((request, { layout }) => {
      const id = parseSnowflakeId(String(request.id ?? ''));
      const parts = layout.decompose(id);
      return {
        id: id.toString(),
        timestampMs: parts.timestamp,
        time: new Date(parts.timestamp).toISOString(),
        workerId: parts.workerId,
        sequence: parts.sequence,
      };
    }),
  };
}
