// `node --import tsx close-worker.ts HANGING_URL DEAD_URL LIVE_URL TAG`: three clients, one waiting
// on a server that never answers (60 s timeout), one in a 30–60 s backoff after a refused connection,
// one with a prefetch pending against a live server. Closes them all, prints how each pending call
// ended, and then must exit on its own: no process.exit, so any timer or socket left running would
// keep it alive and the test would see it.
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from '../../src/index.js';

const [hangingUrl = '', deadUrl = '', liveUrl = '', tag = ''] = process.argv.slice(2);
const hanging = createClient({ urls: [hangingUrl], timeoutMs: 60_000 });
const sleeping = createClient({
  urls: [deadUrl],
  backoffInitialMs: 60_000,
  backoffMaxMs: 60_000,
  retryBudgetMs: 600_000,
});
const live = createClient({ urls: [liveUrl], snowflakeMaxAgeMs: 60_000 });
await live.nextIds(tag, 50);
await live.snowflakes(20);
// Crossing the 10% mark schedules a prefetch on the next turn; close() must cancel it or its fetch.
live.tryNextId(tag);
const pending = [hanging.nextId(tag), sleeping.nextId(tag), sleeping.snowflake(), live.nextIds(tag, 100_000)];
await sleep(300);
hanging.close();
sleeping.close();
live.close();
const outcomes = await Promise.allSettled(pending);
// After close, tryNextId answers undefined (it never throws) and nextId says why.
const afterClose =
  live.tryNextId(tag) !== undefined
    ? 'returned'
    : await live.nextId(tag).then(
        () => 'resolved',
        (error: unknown) => (error as { code?: string }).code ?? String(error),
      );
process.stdout.write(
  `${JSON.stringify({
    outcomes: outcomes.map((o) =>
      o.status === 'rejected' ? (o.reason as { code?: string }).code : 'resolved',
    ),
    afterClose,
  })}\n`,
);
