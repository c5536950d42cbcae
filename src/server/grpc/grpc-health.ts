import {
  type ServerUnaryCall,
  type ServerWritableStream,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';

/** The services a health check may name: the node as a whole (""), and the ID service. */
export const HEALTH_SERVICES: readonly string[] = ['', 'frond.v1.Ids'];

/** How often a `Watch` looks at readiness again: `/readyz` changes at most about once a second. */
const WATCH_POLL_MS = 1000;

type ServingStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

/**
 * `grpc.health.v1.Health`: SERVING when `/readyz` would say ready, NOT_SERVING otherwise (and
 * before the modes have opened). Open without a token, as `/readyz` is: a kubelet's gRPC probe
 * sends none.
 */
export class GrpcHealth {
  private readiness: (() => { ready: boolean }) | undefined;
  private readonly watches = new Set<ServerWritableStream<unknown, unknown>>();
  private poll: NodeJS.Timeout | undefined;
  private readonly last = new Map<ServerWritableStream<unknown, unknown>, ServingStatus>();

  /** From now on, the node's readiness is the answer. */
  serve(readiness: () => { ready: boolean }): void {
    this.readiness = readiness;
  }

  private statusOf(service: string): ServingStatus {
    if (!HEALTH_SERVICES.includes(service)) return 'SERVICE_UNKNOWN';
    return this.readiness?.().ready === true ? 'SERVING' : 'NOT_SERVING';
  }

  /** Ends every `Watch`, so the server's shutdown does not wait on streams that never end. */
  close(): void {
    if (this.poll !== undefined) clearInterval(this.poll);
    this.poll = undefined;
    for (const call of this.watches) call.end();
    this.watches.clear();
    this.last.clear();
  }

  implementation(): UntypedServiceImplementation {
    return {
      Check: (
        call: ServerUnaryCall<{ service?: string }, unknown>,
        callback: sendUnaryData<{ status: ServingStatus }>,
      ) => {
        const answer = this.statusOf(call.request.service ?? '');
        if (answer === 'SERVICE_UNKNOWN')
          callback({
            code: status.NOT_FOUND,
            details: `unknown service ${JSON.stringify(call.request.service)}`,
          });
        else callback(null, { status: answer });
      },
      Watch: (call: ServerWritableStream<{ service?: string }, unknown>) => {
        const stream = call as ServerWritableStream<unknown, unknown>;
        this.watches.add(stream);
        const forget = () => {
          this.watches.delete(stream);
          this.last.delete(stream);
          if (this.watches.size === 0 && this.poll !== undefined) {
            clearInterval(this.poll);
            this.poll = undefined;
          }
        };
        call.on('cancelled', forget);
        call.on('error', forget);
        this.send(stream, call.request.service ?? '');
        // One timer for every watch, while there is one.
        this.poll ??= setInterval(() => {
          for (const watch of this.watches)
            this.send(watch, (watch.request as { service?: string }).service ?? '');
        }, WATCH_POLL_MS);
      },
    };
  }

  /** The status, if it is not the one this watch was last sent. */
  private send(call: ServerWritableStream<unknown, unknown>, service: string): void {
    const answer = this.statusOf(service);
    if (this.last.get(call) === answer) return;
    this.last.set(call, answer);
    call.write({ status: answer });
  }
}
