import { type Agent, request } from 'node:http';

export interface HttpAnswer {
  status: number;
  body: string;
  /** The `retry-after` header, if the answer had one. */
  retryAfter?: string | undefined;
}

/** One GET, bounded by `timeoutMs`; a keep-alive `agent` reuses connections under load. */
export function httpGet(
  url: string,
  options: { agent?: Agent; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: options.agent, timeout: options.timeoutMs ?? 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      const retryAfter = res.headers['retry-after'];
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, retryAfter }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url} got no answer in time`)));
    req.on('error', reject);
    req.end();
  });
}

/** The IDs in an answer of either API: plain text (Leaf's) or `{"ids":[…]}` (frond's). */
export function idsOf(answer: HttpAnswer): number[] {
  if (answer.body.startsWith('{')) return (JSON.parse(answer.body) as { ids: string[] }).ids.map(Number);
  return [Number(answer.body)];
}

/** The value at quantile `q` (0 to 1) of numbers sorted ascending. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}
