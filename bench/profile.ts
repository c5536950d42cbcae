// Profiles `frond serve` beside the bare node:http server under the same load: where frond's CPU
// time per request goes beyond bare's.
//   node --import tsx bench/profile.ts [PATH] [SECONDS] [ROUNDS]   (PATH: /api/segment/get/bench)
// Starts the real frond (dist/, so `npm run build` first) and bench/servers/bare-server.ts, both with
// `--cpu-prof`, warms both up, then loads each in turn with autocannon (ROUNDS rounds of SECONDS,
// alternating). Only the samples taken during the measured runs count (the profiles' timestamps are
// CLOCK_MONOTONIC, as process.hrtime here), so start-up and warm-up fall outside. Self time is
// divided by the requests each server answered in those runs: µs per request, by function and by
// file, and the entries where frond spends more than bare. The .cpuprofile files open in Chrome DevTools.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { frondDataDir } from './http.js';
import { type ChildServer, FROND_BIN, startChildServer } from './lib/child-server.js';
import { cpuSeconds } from './lib/cpu.js';
import { table } from './lib/markdown.js';
import { tempDir } from './lib/temp-dir.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** µs of self time per request, by function and by file, over the measured windows. */
interface Summary {
  requests: number;
  /** Server CPU µs per request from /proc (user + system, the kernel's socket work included). */
  cpuPerRequest: number;
  /** Profiled (non-idle) µs per request: JavaScript, V8, GC and the native code under them. */
  profiled: number;
  byFunction: Map<string, number>;
  byFile: Map<string, number>;
  byGroup: Map<string, number>;
}

/** What a file belongs to: frond's code, Node's JavaScript, or the native code and V8 under them. */
function groupOf(file: string): string {
  if (file.startsWith('dist/')) return "frond's code (dist/)";
  if (file.startsWith('node:')) return "Node's JavaScript (node:http, streams, events)";
  if (file === '(native)') return 'native calls (writev, read: the socket work in the kernel)';
  if (file === '(garbage collector)') return '(garbage collector)';
  if (file === '(program)') return '(program): V8 and libuv outside JavaScript';
  return 'other';
}

const path = process.argv[2] ?? '/api/segment/get/bench';
const seconds = Number(process.argv[3] ?? 5);
const rounds = Number(process.argv[4] ?? 3);
if (!(seconds > 0 && seconds <= 60 && Number.isInteger(rounds) && rounds >= 1 && rounds <= 10))
  throw new Error('usage: bench/profile.ts [PATH] [SECONDS 1-60] [ROUNDS 1-10]');
const CONNECTIONS = 10;
const BENCH_DIR = new URL('.', import.meta.url).pathname;

const frondDir = tempDir('frond-profile-');
const bareDir = tempDir('frond-profile-bare-');
const profiled = (dir: string) => ['--cpu-prof', '--cpu-prof-dir', dir];
const frond = await startChildServer('frond', [
  ...profiled(frondDir),
  FROND_BIN,
  'serve',
  '--port',
  '0',
  '--data-dir',
  await frondDataDir(),
]);
const bare = await startChildServer('bare', [
  ...profiled(bareDir),
  '--import',
  'tsx',
  `${BENCH_DIR}servers/bare-server.ts`,
]);
const targets = [
  { name: 'bare', server: bare, path: '/', dir: bareDir },
  { name: 'frond', server: frond, path, dir: frondDir },
];
type Target = (typeof targets)[number];
const windows = new Map<Target, { from: number; to: number }[]>(targets.map((t) => [t, []]));
const requests = new Map<Target, number>(targets.map((t) => [t, 0]));
const cpu = new Map<Target, number>(targets.map((t) => [t, 0]));
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const load = (server: ChildServer, target: string, durationS: number) =>
  autocannon({ url: `${server.url}${target}`, connections: CONNECTIONS, duration: durationS });

try {
  // Warm-up: the JIT, and the segment step's doubling from 1000 (not counted).
  for (const target of targets) await load(target.server, target.path, 2);
  for (let round = 0; round < rounds; round++) {
    for (const target of targets) {
      const cpuBefore = cpuSeconds(target.server.pid);
      const from = monotonicUs();
      const result = await load(target.server, target.path, seconds);
      const to = monotonicUs();
      cpu.set(target, (cpu.get(target) ?? 0) + cpuSeconds(target.server.pid) - cpuBefore);
      windows.get(target)?.push({ from, to });
      requests.set(target, (requests.get(target) ?? 0) + result.requests.total);
      if (result.non2xx + result.errors > 0)
        throw new Error(`${target.name} ${target.path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    }
  }
} finally {
  await Promise.all([frond.stop(), bare.stop()]);
}

function readProfile(dir: string): CpuProfile {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no profile in ${dir}`);
  return JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
}

/** `node:_http_outgoing`, `dist/server/http/router.js`, `(garbage collector)`: what a file row names. */
function fileOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return url;
  const parts = url.replace(/^file:\/\//, '').split('/');
  const dist = parts.lastIndexOf('dist');
  if (dist !== -1) return parts.slice(dist).join('/');
  const modules = parts.lastIndexOf('node_modules');
  if (modules !== -1) return `node_modules/${parts[modules + 1]}`;
  return parts.slice(-2).join('/');
}

function summarise(target: Target): Summary {
  const profile = readProfile(target.dir);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const spans = windows.get(target) ?? [];
  const count = requests.get(target) ?? 1;
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const byGroup = new Map<string, number>();
  let total = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i] ?? 0;
    at += delta;
    if (!spans.some((span) => at >= span.from && at <= span.to)) continue;
    const node = byId.get(profile.samples[i] as number) as ProfileNode;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    const file = fileOf(url, functionName);
    const name = `${functionName || '(anonymous)'} ${url === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + delta);
    byFile.set(file, (byFile.get(file) ?? 0) + delta);
    byGroup.set(groupOf(file), (byGroup.get(groupOf(file)) ?? 0) + delta);
    total += delta;
  }
  if (total === 0)
    throw new Error(`${target.name}: no samples inside the measured runs (clocks of the profile differ?)`);
  const perRequest = (map: Map<string, number>) => {
    for (const [key, us] of map) map.set(key, us / count);
    return map;
  };
  return {
    requests: count,
    cpuPerRequest: ((cpu.get(target) ?? 0) * 1e6) / count,
    profiled: total / count,
    byFunction: perRequest(byFunction),
    byFile: perRequest(byFile),
    byGroup: perRequest(byGroup),
  };
}

const [bareSummary, frondSummary] = targets.map(summarise) as [Summary, Summary];
const us = (value: number) => value.toFixed(2);
/** Rows of `key, frond µs, bare µs, frond − bare`, the largest excess first. */
const excess = (frondMap: Map<string, number>, bareMap: Map<string, number>, count: number) =>
  [...new Set([...frondMap.keys(), ...bareMap.keys()])]
    .map((key) => ({ key, frond: frondMap.get(key) ?? 0, bare: bareMap.get(key) ?? 0 }))
    .sort((a, b) => b.frond - b.bare - (a.frond - a.bare))
    .slice(0, count)
    .map((row) => [`\`${row.key}\``, us(row.frond), us(row.bare), us(row.frond - row.bare)]);

const gap = frondSummary.profiled - bareSummary.profiled;
process.stdout.write(
  [
    `${path} against bare \`/\`: ${rounds} rounds of ${seconds} s, autocannon ${CONNECTIONS} connections`,
    '',
    table(
      ['', ' Requests', ' req/s', ' CPU µs/request (/proc)', ' profiled µs/request'],
      [bareSummary, frondSummary].map((summary, i) => [
        (targets[i] as Target).name,
        String(summary.requests),
        String(Math.round(summary.requests / (rounds * seconds))),
        us(summary.cpuPerRequest),
        us(summary.profiled),
      ]),
    ),
    '',
    `CPU per request ×bare: ${(frondSummary.cpuPerRequest / bareSummary.cpuPerRequest).toFixed(3)}; profiled gap ${us(gap)} µs/request`,
    '',
    'Self time by kind of code, µs per request',
    '',
    table(
      ['Code', ' frond', ' bare', ' frond − bare'],
      excess(frondSummary.byGroup, bareSummary.byGroup, 10),
    ),
    '',
    'Self time by file, µs per request (the largest excess over bare first)',
    '',
    table(['File', ' frond', ' bare', ' frond − bare'], excess(frondSummary.byFile, bareSummary.byFile, 15)),
    '',
    'Self time by function, µs per request (the largest excess over bare first)',
    '',
    table(
      ['Function', ' frond', ' bare', ' frond − bare'],
      excess(frondSummary.byFunction, bareSummary.byFunction, 25),
    ),
    '',
    `profiles: ${frondDir} ${bareDir}`,
    '',
  ].join('\n'),
);
