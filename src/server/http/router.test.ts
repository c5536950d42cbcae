import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { isFrondError } from '../../core/errors.js';
import type { IdHandlers } from '../ids/id-handlers.js';
import type { OpsHandlers } from '../ops/ops-handlers.js';
import type { RateLimiter } from './rate-limit.js';
import { FROND_PATHS, routeTable } from './route-table.js';
import { createRouter, type Route, type RouteHandler } from './router.js';

interface Seen {
  handler?: string;
  param?: string;
  query?: string;
  error?: string;
  /** Set when the failure was answered as Leaf's server would (a Leaf route). */
  leaf?: string;
  /** What the router answered by itself (OPTIONS). */
  status?: number;
}

function request(method: string, url: string, authorization?: string): IncomingMessage {
  return {
    method,
    url,
    headers: authorization === undefined ? {} : { authorization },
    socket: { remoteAddress: '10.0.0.9' },
  } as unknown as IncomingMessage;
}

/** A router over `table` whose handlers and error answers only record what reached them. */
function recorder(table: (name: (handler: string) => RouteHandler) => Route[], tokens: string[] = []) {
  let seen: Seen = {};
  const name =
    (handler: string): RouteHandler =>
    (_req, _res, param, query) => {
      seen = { handler, param, query };
    };
  const route = createRouter(table(name), 'other', {
    ownPaths: FROND_PATHS,
    access: { tokens, adminToken: 'admin' },
    rateLimiter: undefined,
    reportError: (_res, error) => {
      seen = { error: isFrondError(error) ? error.code : String(error) };
    },
    reportLeafError: (_req, _res, error, kind) => {
      seen = { error: isFrondError(error) ? error.code : String(error), leaf: kind };
    },
  });
  return (method: string, url: string, authorization?: string) => {
    seen = {};
    const res = {
      writeHead: (status: number) => {
        seen.status = status;
      },
      end: () => {},
    };
    const label = route(request(method, url, authorization), res as unknown as ServerResponse);
    return { label, ...seen };
  };
}

const everyHandler = <T extends object>(name: (handler: string) => RouteHandler, keys: (keyof T)[]) =>
  Object.fromEntries(keys.map((key) => [key, name(String(key))])) as T;

const ID_KEYS: (keyof IdHandlers)[] = [
  'leafSegment',
  'leafSnowflake',
  'leafDecode',
  'cache',
  'db',
  'v1Segment',
  'v1Ranges',
  'v1Snowflake',
  'v1Decode',
  'health',
];
const OPS_KEYS: (keyof OpsHandlers)[] = [
  'metrics',
  'dashboard',
  'stats',
  'readiness',
  'listTags',
  'addTag',
  'getTag',
  'patchTag',
  'removeTag',
];

describe('the router', () => {
  const call = recorder((name) =>
    routeTable(everyHandler<IdHandlers>(name, ID_KEYS), everyHandler<OpsHandlers>(name, OPS_KEYS)),
  );

  it('hands the rest of the path after a {name} and the query to the handler', () => {
    assert.deepEqual(call('GET', '/api/segment/get/order/?token=t'), {
      label: 'leaf_segment',
      handler: 'leafSegment',
      param: 'order',
      query: 'token=t',
    });
    assert.deepEqual(call('GET', '/healthz'), { label: 'healthz', handler: 'health', param: '', query: '' });
  });

  it('labels every route as the metrics always did, and a path no route takes as other', () => {
    const labels: [string, string, string][] = [
      ['POST', '/api/segment/get/a', 'leaf_segment'],
      ['DELETE', '/api/snowflake/get/a', 'leaf_snowflake'],
      ['GET', '/decodeSnowflakeId?snowflakeId=1', 'decode'],
      ['GET', '/v1/snowflake/decode/1', 'decode'],
      ['GET', '/v1/segment/a?count=3', 'v1_segment'],
      ['GET', '/v1/ranges/a?count=3', 'v1_ranges'],
      ['GET', '/v1/snowflake?count=3', 'v1_snowflake'],
      ['GET', '/v1/tags', 'admin'],
      ['GET', '/v1/tags/a', 'admin'],
      ['GET', '/metrics', 'metrics'],
      ['GET', '/dashboard', 'dashboard'],
      ['GET', '/v1/stats', 'stats'],
      ['GET', '/healthz?probe=1', 'healthz'],
      ['GET', '/readyz', 'readyz'],
      ['GET', '/cache', 'cache'],
      ['GET', '/db', 'db'],
      ['GET', '/nope', 'other'],
      ['GET', '/cache/', 'cache'],
      ['GET', '/cache/x', 'other'],
    ];
    for (const [method, url, label] of labels) assert.equal(call(method, url).label, label, url);
  });

  it("answers any method on Leaf's routes, GET (and HEAD on operator pages) on frond's own", () => {
    assert.equal(call('PUT', '/cache').handler, 'cache');
    assert.equal(call('HEAD', '/readyz').handler, 'readiness');
    assert.equal(call('HEAD', '/healthz').handler, 'health');
    assert.equal(call('HEAD', '/v1/stats').handler, 'stats');
    assert.equal(call('POST', '/v1/segment/a').error, 'METHOD_NOT_ALLOWED');
    assert.equal(call('POST', '/v1/ranges/a').error, 'METHOD_NOT_ALLOWED');
    assert.equal(call('GET', '/v1/ranges/a%2Fb?count=5').param, 'a%2Fb');
    assert.equal(call('POST', '/v1/nope').error, 'METHOD_NOT_ALLOWED');
    assert.deepEqual(call('GET', '/v1/nope'), { label: 'other', error: 'NOT_FOUND' });
    // Outside frond's API, every method of a path no route takes is Spring's 404 (a Leaf answer).
    assert.deepEqual(call('POST', '/nope'), { label: 'other', error: 'NOT_FOUND', leaf: 'page' });
    assert.deepEqual(call('GET', '/nope'), { label: 'other', error: 'NOT_FOUND', leaf: 'page' });
    assert.equal(call('GET', '/healthz/x').leaf, undefined);
    assert.equal(call('GET', '/metricsx').leaf, 'page');
  });

  it("matches Leaf's routes as Spring MVC did: path parameters dropped, // collapsed, one trailing slash, one segment", () => {
    const leaf = (url: string) => {
      const { handler, param } = call('GET', url);
      return [handler, param];
    };
    assert.deepEqual(leaf('/api/segment/get/a;b'), ['leafSegment', 'a']);
    assert.deepEqual(leaf('/api/segment/get/a;jsessionid=1/'), ['leafSegment', 'a']);
    assert.deepEqual(leaf('/api;x/segment//get/a%3Bb'), ['leafSegment', 'a%3Bb']);
    assert.deepEqual(leaf('/cache;jsessionid=1'), ['cache', '']);
    assert.deepEqual(leaf('/db/'), ['db', '']);
    assert.deepEqual(leaf('//decodeSnowflakeId//?snowflakeId=1'), ['leafDecode', '']);
    for (const url of [
      '/api/segment/get/',
      '/api/segment/get/;a',
      '/api/segment/get/a/b',
      '/cache//x',
      '/Cache',
    ])
      assert.deepEqual(call('GET', url), { label: 'other', error: 'NOT_FOUND', leaf: 'page' }, url);
    // frond's own routes take the path as sent.
    assert.equal(call('GET', '/v1/segment/a;b?count=2').param, 'a;b');
    assert.equal(call('GET', '/healthz/').error, 'NOT_FOUND');
  });

  it("refuses TRACE as Tomcat did wherever Leaf's server answers, and with frond's 405 on frond's API", () => {
    for (const url of ['/api/segment/get/a', '/api/snowflake/get/a', '/cache', '/nope', '/'])
      assert.notEqual(call('TRACE', url).leaf, undefined, url);
    assert.equal(call('TRACE', '/api/segment/get/a').error, 'METHOD_NOT_ALLOWED');
    assert.equal(call('TRACE', '/v1/segment/a').leaf, undefined);
    assert.equal(call('TRACE', '/v1/segment/a').error, 'METHOD_NOT_ALLOWED');
  });

  it('checks the admin token before the method, and an ID token after it', () => {
    const guarded = recorder(
      (name) =>
        routeTable(everyHandler<IdHandlers>(name, ID_KEYS), everyHandler<OpsHandlers>(name, OPS_KEYS)),
      ['id-token'],
    );
    assert.equal(guarded('DELETE', '/v1/tags').error, 'UNAUTHORIZED');
    assert.equal(guarded('DELETE', '/v1/tags', 'Bearer admin').error, 'METHOD_NOT_ALLOWED');
    assert.equal(guarded('POST', '/v1/tags', 'Bearer admin').handler, 'addTag');
    assert.equal(guarded('DELETE', '/v1/tags/a').error, 'UNAUTHORIZED');
    assert.equal(guarded('DELETE', '/v1/tags/a', 'Bearer wrong').error, 'UNAUTHORIZED');
    assert.equal(guarded('DELETE', '/v1/tags/a', 'Bearer admin').handler, 'removeTag');
    assert.equal(guarded('POST', '/v1/segment/a').error, 'METHOD_NOT_ALLOWED');
    assert.equal(guarded('GET', '/v1/segment/a').error, 'UNAUTHORIZED');
    assert.equal(guarded('GET', '/v1/segment/a?token=id-token').handler, 'v1Segment');
    assert.equal(guarded('GET', '/api/segment/get/a').error, 'UNAUTHORIZED');
  });

  it("answers failures on Leaf's routes as Leaf did, and on frond's own with frond's errors", () => {
    const guarded = recorder(
      (name) =>
        routeTable(everyHandler<IdHandlers>(name, ID_KEYS), everyHandler<OpsHandlers>(name, OPS_KEYS)),
      ['id-token'],
    );
    assert.equal(guarded('GET', '/api/segment/get/a').leaf, 'segment');
    assert.equal(guarded('GET', '/api/snowflake/get/a').leaf, 'snowflake');
    assert.equal(guarded('GET', '/v1/segment/a').leaf, undefined);
  });

  it('never hands HEAD or OPTIONS to a handler that issues IDs', () => {
    for (const path of ['/api/segment/get/a', '/api/snowflake/get/a']) {
      assert.equal(call('HEAD', path).error, 'METHOD_NOT_ALLOWED', path);
      assert.deepEqual(call('OPTIONS', path), {
        label: path.includes('segment') ? 'leaf_segment' : 'leaf_snowflake',
        status: 204,
      });
      assert.equal(call('DELETE', path).handler?.startsWith('leaf'), true, path);
    }
    // Leaf's pages issue nothing: HEAD reaches them as any method does.
    assert.equal(call('HEAD', '/cache').handler, 'cache');
  });

  it('refuses a query parameter the route does not take, on every route', () => {
    assert.equal(call('GET', '/v1/segment/a?count=2').handler, 'v1Segment');
    assert.equal(call('GET', '/v1/segment/a?cnt=2').error, 'INVALID_ARGUMENT');
    assert.equal(call('GET', '/v1/snowflake?count=2&token=x').handler, 'v1Snowflake');
    // Leaf's routes let any parameter through, as Spring did: a Leaf client's cache-buster works.
    assert.equal(call('GET', '/api/segment/get/a?cachebuster=1').handler, 'leafSegment');
    assert.equal(call('GET', '/decodeSnowflakeId?snowflakeId=1&x=2').handler, 'leafDecode');
    assert.equal(call('GET', '/healthz?probe=1').error, 'INVALID_ARGUMENT');
    assert.equal(call('GET', '/metrics?').handler, 'metrics');
  });

  it('leaves /healthz and /readyz out of --rate-limit', () => {
    let taken = 0;
    const limited = createRouter(
      routeTable(
        everyHandler<IdHandlers>(() => () => {}, ID_KEYS),
        everyHandler<OpsHandlers>(() => () => {}, OPS_KEYS),
      ),
      'other',
      {
        ownPaths: FROND_PATHS,
        access: { tokens: [], adminToken: undefined },
        rateLimiter: { take: () => void taken++ } as unknown as RateLimiter,
        reportError: () => {},
        reportLeafError: () => {},
      },
    );
    for (const url of ['/healthz', '/readyz', '/healthz']) limited(request('GET', url), {} as ServerResponse);
    assert.equal(taken, 0);
    limited(request('GET', '/v1/snowflake'), {} as ServerResponse);
    limited(request('GET', '/nope'), {} as ServerResponse);
    assert.equal(taken, 2);
  });

  it('refuses a path with two {name}s, or a {name} followed by anything but a fixed /suffix', () => {
    const handle: RouteHandler = () => {};
    for (const path of ['/a/{x}/{y}', '/a/{x}b', '/a/{x']) {
      assert.throws(
        () => recorder(() => [{ path, label: 'a', access: 'open', methods: { any: handle } }]),
        /only one \{name\}/,
        path,
      );
    }
  });

  it('takes what lies between the prefix and a fixed suffix, slashes included, before the prefix route', () => {
    const route = recorder((name) => [
      { path: '/v1/tags/{tag}/gaps', label: 'gaps', access: 'open', methods: { GET: name('gaps') } },
      { path: '/v1/tags/{tag}', label: 'tag', access: 'open', methods: { GET: name('tag') } },
    ]);
    assert.deepEqual(route('GET', '/v1/tags/order/gaps'), {
      label: 'gaps',
      handler: 'gaps',
      param: 'order',
      query: '',
    });
    assert.equal(route('GET', '/v1/tags/a/b/gaps').param, 'a/b');
    assert.equal(route('GET', '/v1/tags/a%2Fgaps').handler, 'tag');
    // Nothing between the two: the prefix route takes it, as the tag "gaps" of `/v1/tags/{tag}`.
    assert.deepEqual(
      [route('GET', '/v1/tags/gaps').handler, route('GET', '/v1/tags/gaps').param],
      ['tag', 'gaps'],
    );
  });

  it("checks the access a method of a route names over the route's own (a client POST on an admin path)", () => {
    const route = recorder(
      (name) => [
        {
          path: '/v1/tags/{tag}/gaps',
          label: 'gaps',
          access: 'admin',
          methods: { GET: name('list'), POST: name('return') },
          methodAccess: { POST: 'id' },
        },
      ],
      ['client-token'],
    );
    assert.equal(route('GET', '/v1/tags/t/gaps', 'Bearer client-token').error, 'UNAUTHORIZED');
    assert.equal(route('GET', '/v1/tags/t/gaps', 'Bearer admin').handler, 'list');
    assert.equal(route('POST', '/v1/tags/t/gaps', 'Bearer client-token').handler, 'return');
    assert.equal(route('POST', '/v1/tags/t/gaps').error, 'UNAUTHORIZED');
  });
});
