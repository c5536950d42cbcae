import { execFile } from 'node:child_process';
import { type AddressInfo, connect, createServer } from 'node:net';
import { promisify } from 'node:util';
import { frondDataDir } from './http.js';
import { startFrondServer } from './lib/child-server.js';
import { type Section, table } from './lib/markdown.js';
import { saturate } from './lib/saturate.js';
import { median, si } from './lib/stats.js';

const run = promisify(execFile);

export interface RespOptions {
  rounds: number;
  /** Commands per redis-benchmark run without pipelining, and with `-P 16`. */
  requests: number;
  pipelinedRequests: number;
  /** redis-benchmark's and autocannon's connections (`-c`). */
  connections: number;
  /** Seconds of each autocannon run (frond's HTTP, one ID a request). */
  httpS: number;
  warmupRequests: number;
}

export interface RespSummary {
  /** Undefined when no Redis answers on 127.0.0.1:6379 (the ratios then too). */
  redisRps: number | undefined;
  redisPipelinedRps: number | undefined;
  frondRps: number;
  frondPipelinedRps: number;
  httpRps: number;
  vsRedis: number | undefined;
  vsRedisPipelined: number | undefined;
  vsHttp: number;
  /** frond's last INCR over the commands it was sent: 1 or a little above (a segment's unused rest). */
  lastIdOverCommands: number;
}

const REDIS_PORT = 6379;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('data', (chunk) => done(chunk.toString().startsWith('+PONG')));
    socket.write('PING\r\n');
  });
}

/** One redis-benchmark run of a custom command (`INCR key`); its requests per second from `--csv`. */
async function redisBenchmark(
  port: number,
  key: string,
  requests: number,
  pipeline: number,
  clients: number,
) {
  const args = ['-h', '127.0.0.1', '-p', String(port), '-c', String(clients), '-n', String(requests)];
  if (pipeline > 1) args.push('-P', String(pipeline));
  const { stdout } = await run('redis-benchmark', [...args, '--csv', 'INCR', key], { timeout: 120_000 });
  const line = stdout
    .split('\n')
    .find((each) => each.startsWith('"INCR'))
    ?.split('","');
  const rps = Number((line?.[1] ?? '').replace(/"/g, ''));
  if (!(rps > 0)) throw new Error(`redis-benchmark printed no rate:\n${stdout}`);
  return rps;
}

async function incr(port: number, key: string): Promise<bigint> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'INCR', key], { timeout: 10_000 });
  return BigInt(stdout.trim());
}

/**
 * frond's RESP port against the real Redis on this machine, in one run: redis-benchmark `-c 50`
 * sends `INCR key` to Redis and `INCR bench` to frond, without pipelining and with `-P 16`,
 * rounds alternating; then frond's HTTP one-ID route (Leaf's) at the same connections with
 * autocannon, the http suite's machinery.
 */
export async function runResp(options: RespOptions): Promise<{ section: Section; summary: RespSummary }> {
  const hasRedis = await answers(REDIS_PORT);
  const respPort = await freePort();
  const dataDir = await frondDataDir(['bench']);
  const frond = await startFrondServer('frond', [
    '--port',
    '0',
    '--resp-port',
    String(respPort),
    '--data-dir',
    dataDir,
  ]);
  const redisKey = `frond-bench-${process.pid}`;
  let sent = 0;
  try {
    // Warm-up: JIT, and the segment step's doubling from 1000.
    await redisBenchmark(respPort, 'bench', options.warmupRequests, 16, options.connections);
    sent += options.warmupRequests;
    const plain = { redis: [] as number[], frond: [] as number[] };
    const piped = { redis: [] as number[], frond: [] as number[] };
    const http: number[] = [];
    for (let round = 0; round < options.rounds; round++) {
      if (hasRedis)
        plain.redis.push(
          await redisBenchmark(REDIS_PORT, redisKey, options.requests, 1, options.connections),
        );
      plain.frond.push(await redisBenchmark(respPort, 'bench', options.requests, 1, options.connections));
      sent += options.requests;
      if (hasRedis)
        piped.redis.push(
          await redisBenchmark(REDIS_PORT, redisKey, options.pipelinedRequests, 16, options.connections),
        );
      piped.frond.push(
        await redisBenchmark(respPort, 'bench', options.pipelinedRequests, 16, options.connections),
      );
      sent += options.pipelinedRequests;
      const result = await saturate(`${frond.url}/api/segment/get/bench`, {
        connections: options.connections,
        durationS: options.httpS,
      });
      http.push(result.requestsPerSecond);
      sent += Math.round(result.requestsPerSecond * options.httpS);
    }
    const last = await incr(respPort, 'bench');
    const summary: RespSummary = {
      redisRps: hasRedis ? median(plain.redis) : undefined,
      redisPipelinedRps: hasRedis ? median(piped.redis) : undefined,
      frondRps: median(plain.frond),
      frondPipelinedRps: median(piped.frond),
      httpRps: median(http),
      vsRedis: hasRedis ? median(plain.frond) / median(plain.redis) : undefined,
      vsRedisPipelined: hasRedis ? median(piped.frond) / median(piped.redis) : undefined,
      vsHttp: median(plain.frond) / median(http),
      lastIdOverCommands: Number(last) / (sent + 1),
    };
    const ratio = (value: number | undefined) => (value === undefined ? 'no Redis' : `${value.toFixed(2)}×`);
    const rows = [
      [
        'INCR, no pipelining',
        hasRedis ? si(summary.redisRps as number) : 'no Redis on :6379',
        si(summary.frondRps),
        ratio(summary.vsRedis),
        '≥ 0.8×',
      ],
      [
        'INCR, `-P 16`',
        hasRedis ? si(summary.redisPipelinedRps as number) : 'no Redis on :6379',
        si(summary.frondPipelinedRps),
        ratio(summary.vsRedisPipelined),
        '≥ 0.5×',
      ],
      [
        'frond RESP INCR vs its own HTTP one-ID (`/api/segment/get/bench`, autocannon)',
        '',
        `${si(summary.frondRps)} vs ${si(summary.httpRps)} HTTP req/s`,
        `${summary.vsHttp.toFixed(2)}×`,
        '≥ 3×',
      ],
    ];
    return {
      summary,
      section: {
        title: 'RESP port (`--resp-port`) against Redis',
        method: `redis-benchmark -c ${options.connections} with a custom command (\`INCR key\`), ${options.requests} commands a run without pipelining and ${options.pipelinedRequests} with \`-P 16\`, against the real Redis on 127.0.0.1:6379 and against frond's RESP port (\`INCR bench\`, a SQLite tag), rounds alternating, median of ${options.rounds}; frond's HTTP one-ID route with autocannon at the same ${options.connections} connections, ${options.httpS} s a run. One frond process, load generators on the same 2 cores.`,
        table: table(['Workload', ' Redis ops/s', ' frond ops/s', ' frond / baseline', 'Goal'], rows),
        notes: [
          `frond's last ID over the commands sent: ${summary.lastIdOverCommands.toFixed(3)} (1 or a little above: a segment's unused rest when the step grows; below 1 would mean an ID lost count).`,
          'redis-benchmark is one C thread; autocannon is Node and costs more CPU per request on the same cores, so part of the RESP/HTTP ratio is the client.',
        ],
      },
    };
  } finally {
    await frond.stop();
  }
}
