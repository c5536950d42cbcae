// What the tests of formatted tags (order numbers) share: a node's wall clock put at a chosen moment
// through libfaketime, the tag made over the admin API, and numbers taken while recording when each
// request left and its answer came back on that node's clock, so a number can be checked against the
// period its node was in.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import { LIBFAKETIME, offsetClock } from './fake-clock.js';
import type { FrondProcess } from './frond-process.js';
import { type HttpAnswer, httpGet } from './http-get.js';
import { serviceMissing } from './service-gate.js';

/** A fake clock whose time is known to the test: `at(ms)` puts every process on it at that moment. */
export interface NodeClock {
  env: NodeJS.ProcessEnv;
  /** Puts the clock at `ms` (epoch ms, whole seconds: libfaketime's offset is in seconds) now. */
  at(ms: number): void;
  /** What the processes on this clock read now. */
  now(): number;
}

/**
 * A libfaketime clock (see fake-clock.ts) set to `ms`. Its offset is a whole number of seconds, so
 * `now()` is exact: the process reads the same real clock plus the same offset.
 */
export function clockAt(t: TestContext, ms: number): NodeClock | undefined {
  if (!existsSync(LIBFAKETIME)) {
    serviceMissing(t, 'libfaketime', `${LIBFAKETIME} is missing; run scripts/services.sh`);
    return undefined;
  }
  return fakeClockAt(ms);
}

/** `clockAt` where the caller has checked that libfaketime is installed (a suite's `before`). */
export function fakeClockAt(ms: number): NodeClock {
  const offsetFor = (target: number) => Math.round((target - Date.now()) / 1000);
  const text = (seconds: number) => `${seconds >= 0 ? '+' : ''}${seconds}s`;
  let offsetS = offsetFor(ms);
  const clock = offsetClock(text(offsetS));
  return {
    env: clock.env,
    at(target) {
      offsetS = offsetFor(target);
      clock.set(text(offsetS));
    },
    now: () => Date.now() + offsetS * 1000,
  };
}

/** `iso` (with its offset, `2027-01-01T00:00:00+08:00`) as epoch ms. */
export const ms = (iso: string): number => {
  const value = Date.parse(iso);
  assert.ok(Number.isFinite(value), iso);
  return value;
};

export interface AdminAnswer {
  status: number;
  text: string;
  code: string | undefined;
  message: string | undefined;
}

/** `POST /v1/tags` with `body`; the answer with its error code and message, if any. */
export async function postTag(url: string, body: Record<string, unknown>): Promise<AdminAnswer> {
  const response = await fetch(`${url}/v1/tags`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  const text = await response.text();
  let error: { code?: string; message?: string } | undefined;
  try {
    error = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
  } catch {}
  return { status: response.status, text, code: error?.code, message: error?.message };
}

/** Creates a formatted tag over the admin API; fails the test unless it is created (201). */
export async function addFormattedTag(
  url: string,
  tag: string,
  format: string,
  timeZone: string,
  step = 100,
): Promise<void> {
  const made = await postTag(url, { tag, step, format, timeZone });
  assert.equal(made.status, 201, `POST /v1/tags ${tag} ${format} ${timeZone}: ${made.text}`);
}

/** A number as a node served it, with the moments its request left and its answer came (node's clock). */
export interface Served {
  id: string;
  node: number;
  sentAt: number;
  receivedAt: number;
  /** The order answers arrived in, across all nodes of a test. */
  arrival: number;
}

/** A node under test and its clock. */
export interface ClockedNode {
  process: FrondProcess;
  clock: NodeClock;
}

let arrivals = 0;

/**
 * One request for numbers of `tag` on `node`: Leaf's route for `count` 1 (plain text), else
 * `/v1/segment/{tag}?count=N` (a JSON list of strings). Served numbers are appended to `into`; the
 * answer is returned whatever its status.
 */
export async function take(
  node: ClockedNode,
  index: number,
  tag: string,
  count: number,
  into: Served[],
): Promise<HttpAnswer> {
  const path = count === 1 ? `/api/segment/get/${tag}` : `/v1/segment/${tag}?count=${count}`;
  const sentAt = node.clock.now();
  const answer = await httpGet(node.process.url + path);
  const receivedAt = node.clock.now();
  if (answer.status !== 200) return answer;
  let ids: unknown[];
  if (count === 1) {
    ids = [answer.body];
  } else {
    ids = (JSON.parse(answer.body) as { ids: unknown[] }).ids;
    // JSON strings, always, even for a format of digits only (they may not fit a JavaScript number).
    for (const id of ids) assert.equal(typeof id, 'string', `${path}: ${answer.body.slice(0, 200)}`);
  }
  for (const id of ids) into.push({ id: id as string, node: index, sentAt, receivedAt, arrival: arrivals++ });
  return answer;
}

/** Every number once. */
export function assertUniqueNumbers(served: readonly Served[]): void {
  const seen = new Map<string, Served>();
  for (const one of served) {
    const before = seen.get(one.id);
    assert.equal(before, undefined, `${one.id} served twice (nodes ${before?.node} and ${one.node})`);
    seen.set(one.id, one);
  }
}

/**
 * Each number carries the period its node was in: a request sent at or after `boundary` (on its
 * node's clock) has the new period's text, one answered before it the old one's. 50 ms of slack:
 * the test's and the node's reading of the same real clock are not the same instant.
 */
export function assertPeriodByClock(
  served: readonly Served[],
  boundary: number,
  periodOf: (id: string) => string,
  oldPeriod: string,
  newPeriod: string,
): void {
  for (const one of served) {
    const period = periodOf(one.id);
    assert.ok(period === oldPeriod || period === newPeriod, `${one.id}: period ${period}`);
    if (one.sentAt >= boundary + 50)
      assert.equal(period, newPeriod, `${one.id} from node ${one.node}, asked at ${iso(one.sentAt)}`);
    if (one.receivedAt < boundary - 50)
      assert.equal(period, oldPeriod, `${one.id} from node ${one.node}, answered at ${iso(one.receivedAt)}`);
  }
}

/** Numbers of one node increase within a period, in the order it served them; it never goes back a period. */
export function assertIncreasingPerNode(
  served: readonly Served[],
  periodOf: (id: string) => string,
  seqOf: (id: string) => bigint,
): void {
  const last = new Map<number, { period: string; seq: bigint; id: string }>();
  for (const one of served) {
    const period = periodOf(one.id);
    const seq = seqOf(one.id);
    const before = last.get(one.node);
    if (before !== undefined) {
      assert.ok(period >= before.period, `node ${one.node} went back from ${before.id} to ${one.id}`);
      if (period === before.period)
        assert.ok(seq > before.seq, `node ${one.node} served ${one.id} after ${before.id}`);
    }
    last.set(one.node, { period, seq, id: one.id });
  }
}

export const iso = (at: number): string => new Date(at).toISOString();

export const sleep = (milliseconds: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, milliseconds));
