// The one-ID tables of bench/http.ts alone, for before/after runs of a change to the HTTP path:
//   node --import tsx bench/http-one-id.ts [ROUNDS] [SECONDS] [RATE]   (3 rounds, 2 s, 4,000 req/s)
// Runs the real frond (dist/, so `npm run build` first) against the bare node:http server, both
// alternating in every round, at saturation and at RATE requests/s, and prints the two tables.
import { runHttp } from './http.js';
import { renderSection } from './lib/markdown.js';

const rounds = Number(process.argv[2] ?? 3);
const runS = Number(process.argv[3] ?? 2);
const fixedRate = Number(process.argv[4] ?? 4000);
if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 20 && runS > 0 && runS <= 30 && fixedRate >= 100))
  throw new Error('usage: bench/http-one-id.ts [ROUNDS 1-20] [SECONDS 1-30] [RATE ≥ 100]');
const { sections } = await runHttp({
  rounds,
  runS,
  fixedRate,
  fixedS: runS,
  connections: 10,
  warmupS: 1,
  batches: false,
});
process.stdout.write(`${sections.map(renderSection).join('\n\n')}\n`);
