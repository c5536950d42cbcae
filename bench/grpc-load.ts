// The gRPC load generator, in a process of its own so that it never shares an event loop with the
// server or with the bench: `node --import tsx bench/grpc-load.ts '<json options>'`. It opens
// `channels` connections, keeps `inFlight` unary calls going on each (closed loop: the next call
// leaves when an answer arrives), and prints one JSON line with what it measured.
import {
  type Client,
  credentials,
  loadPackageDefinition,
  type ServiceClientConstructor,
  type ServiceError,
} from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { countDuplicateStrings, Samples, summarize } from './lib/stats.js';

export interface GrpcLoadOptions {
  address: string;
  method: 'Next' | 'Batch' | 'Snowflake';
  request: Record<string, unknown>;
  channels: number;
  inFlight: number;
  durationMs: number;
  warmupMs: number;
}

export interface GrpcLoadResult {
  calls: number;
  ids: number;
  errors: number;
  seconds: number;
  duplicates: number;
  latency: ReturnType<typeof summarize>;
  firstError?: string;
  /** Every ID received, for the bench to count duplicates across the load processes. */
  seen: string[];
}

const options = JSON.parse(process.argv[2] ?? '{}') as GrpcLoadOptions;
const definition = loadSync('frond.proto', {
  includeDirs: [new URL('../proto/', import.meta.url).pathname],
  longs: String,
  defaults: true,
});
const Ids = (
  loadPackageDefinition(definition) as unknown as { frond: { v1: { Ids: ServiceClientConstructor } } }
).frond.v1.Ids;
// One connection per client: grpc-js would otherwise share one subchannel between them.
const clients: Client[] = Array.from(
  { length: options.channels },
  () => new Ids(options.address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }),
);

type Reply = { id?: string; ids?: string[] };
const unary = (client: Client) =>
  new Promise<Reply>((resolve, reject) => {
    (
      client as unknown as Record<string, (r: object, cb: (e: ServiceError | null, r: Reply) => void) => void>
    )[options.method]?.call(client, options.request, (error, reply) =>
      error ? reject(error) : resolve(reply),
    );
  });

async function load(durationMs: number, keep: boolean): Promise<GrpcLoadResult> {
  const latencies = new Samples();
  const seen: string[] = [];
  let calls = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const end = start + durationMs;
  const loop = async (client: Client) => {
    while (performance.now() < end) {
      const sent = performance.now();
      try {
        const reply = await unary(client);
        calls++;
        latencies.push(performance.now() - sent);
        if (keep) {
          if (reply.id !== undefined) seen.push(reply.id);
          if (reply.ids !== undefined) for (const id of reply.ids) seen.push(id);
        }
      } catch (error) {
        errors++;
        firstError ??= (error as Error).message;
      }
    }
  };
  await Promise.all(
    clients.flatMap((client) => Array.from({ length: options.inFlight }, () => loop(client))),
  );
  const seconds = (performance.now() - start) / 1000;
  return {
    calls,
    ids: seen.length,
    errors,
    seconds,
    duplicates: countDuplicateStrings(seen),
    latency: summarize(latencies.values()),
    seen,
    ...(firstError === undefined ? {} : { firstError }),
  };
}

if (options.warmupMs > 0) await load(options.warmupMs, false);
// Ready (connections up): the bench starts every load process at once with a line on stdin, and
// measures the server's CPU from then until the last result.
for (const client of clients)
  await new Promise<void>((resolve) => client.waitForReady(Date.now() + 30_000, () => resolve()));
process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);
await new Promise((resolve) => process.stdin.once('data', resolve));
const result = await load(options.durationMs, true);
process.stdout.write(`${JSON.stringify(result)}\n`);
for (const client of clients) client.close();
process.stdin.destroy();
