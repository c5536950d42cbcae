// Profiles `frond serve` under load: where a request's CPU time goes.
//   node --import tsx bench/profile.ts [PATH] [SECONDS]     (PATH: /api/segment/get/bench by default)
// Starts the real frond (dist/, so `npm run build` first) with `--cpu-prof`, loads PATH with
// autocannon, stops frond (the profile is written on exit) and prints the functions with the most
// self time and the most inclusive time. The .cpuprofile file also opens in Chrome DevTools.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { frondDataDir } from './http.js';
import { FROND_BIN, startChildServer } from './lib/child-server.js';
import { tempDir } from './lib/temp-dir.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const path = process.argv[2] ?? '/api/segment/get/bench';
const seconds = Number(process.argv[3] ?? 5);
const profileDir = tempDir('frond-profile-');
const server = await startChildServer('frond', [
  '--cpu-prof',
  '--cpu-prof-dir',
  profileDir,
  FROND_BIN,
  'serve',
  '--port',
  '0',
  '--data-dir',
  await frondDataDir(),
]);
const result = await autocannon({ url: `${server.url}${path}`, connections: 10, duration: seconds });
process.stdout.write(`${path}: ${Math.round(result.requests.total / result.duration)} requests/s\n`);
await server.stop();

const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
if (file === undefined) throw new Error(`no profile in ${profileDir}`);
const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile;
const label = (node: ProfileNode) =>
  `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
const selfTime = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfTime.set(id, (selfTime.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let total = 0;
for (const node of profile.nodes) {
  const time = selfTime.get(node.id) ?? 0;
  total += time;
  self.set(label(node), (self.get(label(node)) ?? 0) + time);
  const seen = new Set<string>();
  for (let id: number | undefined = node.id; id !== undefined; id = parent.get(id)) {
    const name = label(byId.get(id) as ProfileNode);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + time);
  }
}
const top = (times: Map<string, number>, count: number) =>
  [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([name, time]) => `${((time / total) * 100).toFixed(1).padStart(6)} %  ${name}`)
    .join('\n');
process.stdout.write(
  `\nself time\n${top(self, 20)}\n\ninclusive time\n${top(inclusive, 30)}\n\n${join(profileDir, file)}\n`,
);
