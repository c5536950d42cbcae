// A client in a process of its own: `node --import tsx client-worker.ts URLS TAG COUNT` takes COUNT
// segment IDs of TAG (half one by one, half in batches of up to 100), closes the client and prints
// them as one JSON array of decimal strings.
import { createClient } from '../../src/index.js';

const [urls = '', tag = '', countText = '0'] = process.argv.slice(2);
const count = Number(countText);
const client = createClient({ urls: urls.split(','), idType: 'string' });
const ids: string[] = [];
for (let round = 0; ids.length < count && round < 10 * count; round++) {
  if (round % 2 === 0) ids.push(await client.nextId(tag));
  else ids.push(...(await client.nextIds(tag, Math.min(count - ids.length, 1 + (round % 100)))));
}
client.close();
process.stdout.write(`${JSON.stringify(ids)}\n`);
