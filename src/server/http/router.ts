import type { IncomingMessage, ServerResponse } from 'node:http';
import { FrondError } from '../../core/errors.js';
import { type LeafErrorKind, TraceNotAllowedError } from '../leaf/leaf-errors.js';
import { matchesFixed, segmentAfter, springLookupPath } from '../leaf/spring-path.js';
import { type AccessOptions, checkAdminAccess, checkIdAccess } from './access.js';
import type { RateLimiter } from './rate-limit.js';
import { methodNotAllowed } from './responses.js';

/** `param` is the path after the route's prefix (`''` for a route without `{…}`); `query` has no `?`. */
export type RouteHandler = (req: IncomingMessage, res: ServerResponse, param: string, query: string) => void;

export type Method = 'GET' | 'HEAD' | 'POST' | 'PATCH' | 'DELETE';

/**
 * Who may call a route: anyone, a holder of an ID token (`--token`, when any is set), or the admin
 * (`--admin-token`, or loopback without one).
 */
export type Access = 'open' | 'id' | 'admin';

/** One entry of the route table (`route-table.ts`). */
export interface Route<Label extends string = string> {
  /**
   * An exact path, or a prefix ending in one `{name}` that takes the rest of the path, slashes
   * included; or one `{name}` then a fixed suffix with no `{`, which takes what lies between
   * (`/v1/tags/{tag}/gaps`: the tag, slashes included). A suffix route goes before the route of
   * its prefix alone, which would take its paths too.
   */
  path: string;
  /** The metrics label: a small fixed set, so metrics cannot grow with tag names or junk paths. */
  label: Label;
  access: Access;
  /** Handlers by method; `any` answers every method, as Leaf's Spring MVC controllers did. */
  methods: { readonly any: RouteHandler } | { readonly [M in Method]?: RouteHandler };
  /**
   * Leaf's routes: they fail as Leaf's server did (leaf/leaf-errors.ts), and their path is matched
   * as Spring MVC matched it (leaf/spring-path.ts: `;` parameters dropped, `//` collapsed, a
   * trailing slash ignored, `{name}` one path segment). frond's own routes match the path as sent
   * and fail with frond's JSON errors.
   */
  leafErrors?: LeafErrorKind;
  /**
   * The query parameters the route takes; any other is refused with 400, as an unknown field of a
   * JSON body is. An `id` route also takes `token`. None when absent. `any`: every parameter is
   * let through, as Spring did on Leaf's routes (a Leaf client's cache-buster keeps working).
   */
  query?: readonly string[] | 'any';
  /**
   * The handler hands out IDs: HEAD (which shows no body) and OPTIONS never reach it, so neither
   * consumes an ID. Only for `any` routes; a route by method lists what it answers.
   */
  issuesIds?: true;
  /** false: `--rate-limit` does not count or refuse this route (health checks). */
  rateLimited?: false;
  /** Who may call a method where it differs from `access` (a client's `POST` on an admin path). */
  methodAccess?: { readonly [M in Method]?: Access };
}

interface CompiledRoute<Label extends string> {
  /** The exact path, or the prefix before `{name}`. */
  text: string;
  prefix: boolean;
  /** What follows `{name}` (`/gaps`), `''` when `{name}` ends the path. */
  suffix: string;
  label: Label;
  access: Access;
  any: RouteHandler | undefined;
  byMethod: ReadonlyMap<string, RouteHandler>;
  /** `POST is not allowed on /v1/tags/{tag}; use GET or PATCH`, without the method. */
  notAllowed: string;
  leafErrors: LeafErrorKind | undefined;
  /** The `Allow` header: the methods that reach a handler, and OPTIONS. */
  allow: string;
  /** undefined: any parameter passes (Leaf's routes). */
  query: ReadonlySet<string> | undefined;
  issuesIds: boolean;
  rateLimited: boolean;
  methodAccess: ReadonlyMap<string, Access>;
}

export interface RouterOptions {
  /**
   * Where frond's own API lives (`/v1`, `/healthz`: a path equal to one or under it). A path no
   * route takes answers frond's JSON error there, and Leaf's server's answer everywhere else
   * (Spring Boot's 404, Tomcat's 405 for TRACE), as a Leaf client would get from Leaf.
   */
  ownPaths: readonly string[];
  access: AccessOptions;
  rateLimiter: RateLimiter | undefined;
  /** Answers a failure: the error body and status, and the error metric. */
  reportError: (res: ServerResponse, error: unknown) => void;
  /** Answers a failure on one of Leaf's routes, as Leaf's server did. */
  reportLeafError: (req: IncomingMessage, res: ServerResponse, error: unknown, kind: LeafErrorKind) => void;
}

/**
 * Routes a request through the table: the first entry whose path matches takes it. Answers the
 * label of that entry, or `unmatched` when none did. Synchronous all the way to the handler, so an
 * ID that is already buffered is answered before this returns.
 */
export function createRouter<Label extends string>(
  table: readonly Route<Label>[],
  unmatched: Label,
  options: RouterOptions,
): (req: IncomingMessage, res: ServerResponse) => Label {
  const routes = table.map(compile);
  const { access, rateLimiter, reportError, reportLeafError, ownPaths } = options;
  const isOwn = (path: string) =>
    ownPaths.some((own) => path.startsWith(own) && (path.length === own.length || path[own.length] === '/'));

  // The `{name}` of the route `find` returned; read right after it, in the same synchronous call.
  let found = '';
  const find = (path: string, lookupPath: string): CompiledRoute<Label> | undefined => {
    for (const route of routes) {
      if (route.leafErrors !== undefined) {
        if (!route.prefix) {
          if (!matchesFixed(route.text, lookupPath)) continue;
          found = '';
          return route;
        }
        const key = segmentAfter(route.text, lookupPath);
        if (key === undefined) continue;
        found = key;
        return route;
      }
      if (route.suffix !== '') {
        if (
          path.length > route.text.length + route.suffix.length &&
          path.startsWith(route.text) &&
          path.endsWith(route.suffix)
        ) {
          found = path.slice(route.text.length, path.length - route.suffix.length);
          return route;
        }
        continue;
      }
      if (route.prefix ? path.startsWith(route.text) : path === route.text) {
        found = route.prefix ? path.slice(route.text.length) : '';
        return route;
      }
    }
    return undefined;
  };

  return (req, res) => {
    const url = req.url ?? '/';
    const mark = url.indexOf('?');
    const path = mark === -1 ? url : url.slice(0, mark);
    const query = mark === -1 ? '' : url.slice(mark + 1);
    const route = find(path, springLookupPath(path));
    const param = found;
    // Leaf's server answers what frond's own API does not hold: its routes, and every other path.
    const asLeaf = route === undefined ? !isOwn(path) : route.leafErrors !== undefined;
    try {
      if (route?.rateLimited !== false) rateLimiter?.take(req.socket.remoteAddress ?? 'unknown');
      // Tomcat refuses TRACE before Spring sees the request (allowTrace=false).
      if (asLeaf && req.method === 'TRACE') throw new TraceNotAllowedError();
      if (route === undefined) throw asLeaf ? springNoHandler(path) : noRoute(req.method, path);
      // The admin token is checked before the method and an ID token after it, as before the table
      // existed: without the admin token nothing about the admin API shows, and a wrong method on
      // an ID route is a 405 whether or not a token came with it.
      const method = req.method ?? '';
      const who = route.methodAccess.get(method) ?? route.access;
      if (who === 'admin') checkAdminAccess(req, access);
      // A route for `any` method has no map to look in (Leaf's ID routes: every one-ID request).
      let handler = route.any === undefined ? route.byMethod.get(method) : undefined;
      if (handler === undefined && method === 'OPTIONS') {
        answerOptions(res, route.allow);
        return route.label;
      }
      if (handler === undefined && !(route.issuesIds && method === 'HEAD')) handler = route.any;
      if (handler === undefined) {
        throw methodNotAllowed(
          `${method} is not allowed on ${route.notAllowed}${method === 'HEAD' && route.issuesIds ? ' (HEAD would use up an ID it cannot show)' : ''}`,
          route.allow,
        );
      }
      if (query !== '' && route.query !== undefined) checkQuery(query, route.query);
      if (who === 'id') checkIdAccess(req, query, access);
      handler(req, res, param, query);
    } catch (error) {
      if (!asLeaf) reportError(res, error);
      else reportLeafError(req, res, error, route?.leafErrors ?? 'page');
    }
    return route === undefined ? unmatched : route.label;
  };
}

/**
 * No handler for a path outside frond's API: Spring Boot 1.5 maps `/**` to its static-resource
 * handler, which answers 404 before it looks at the method (ResourceHttpRequestHandler
 * .handleRequest: "For very general mappings (e.g. "/") we need to check 404 first"), so every
 * method gets Spring's 404.
 */
function springNoHandler(path: string): FrondError {
  return new FrondError('NOT_FOUND', `no route for ${path.slice(0, 200)}`);
}

function compile<Label extends string>(route: Route<Label>): CompiledRoute<Label> {
  const brace = route.path.indexOf('{');
  const close = route.path.indexOf('}', brace);
  const suffix = brace === -1 || close === -1 ? '' : route.path.slice(close + 1);
  if (
    brace !== -1 &&
    (close === -1 ||
      route.path.indexOf('{', brace + 1) !== -1 ||
      (suffix !== '' && (route.leafErrors !== undefined || !suffix.startsWith('/'))))
  ) {
    throw new Error(
      `route ${route.path}: only one {name}, at the end of the path or before a fixed /suffix, is supported`,
    );
  }
  const methods = route.methods;
  const any = 'any' in methods ? methods.any : undefined;
  const byMethod = new Map<string, RouteHandler>();
  if (!('any' in methods)) {
    for (const [method, handler] of Object.entries(methods)) if (handler) byMethod.set(method, handler);
  }
  // HEAD rides along with GET where a route allows it; the message names what a client would send.
  const named = any ? ['GET'] : [...byMethod.keys()].filter((method) => method !== 'HEAD');
  const answered = any
    ? ['GET', ...(route.issuesIds ? [] : ['HEAD']), 'POST', 'PUT', 'PATCH', 'DELETE']
    : [...byMethod.keys()];
  const query = route.query === 'any' ? undefined : new Set(route.query ?? []);
  if (route.access === 'id') query?.add('token');
  return {
    text: brace === -1 ? route.path : route.path.slice(0, brace),
    prefix: brace !== -1,
    suffix,
    label: route.label,
    access: route.access,
    any,
    byMethod,
    notAllowed: `${route.path}; use ${named.join(' or ')}`,
    leafErrors: route.leafErrors,
    allow: [...answered, 'OPTIONS'].join(', '),
    query,
    issuesIds: route.issuesIds === true,
    rateLimited: route.rateLimited !== false,
    methodAccess: new Map(Object.entries(route.methodAccess ?? {})),
  };
}

/** `OPTIONS`: 204 with the methods of the route; no handler runs, so no ID is used up. */
function answerOptions(res: ServerResponse, allow: string): void {
  res.writeHead(204, { allow, 'content-length': 0 });
  res.end();
}

/** One rule for every route: a query parameter the route does not take is a 400, as an unknown JSON field. */
function checkQuery(query: string, takes: ReadonlySet<string>): void {
  for (const name of new URLSearchParams(query).keys()) {
    if (takes.has(name)) continue;
    const names = takes.size === 0 ? 'none' : [...takes].join(', ');
    throw new FrondError(
      'INVALID_ARGUMENT',
      `unknown query parameter ${JSON.stringify(name.slice(0, 40))}; this route takes: ${names}`,
    );
  }
}

/** No entry matched: frond's own routes answer GET only, so any other method is told so first. */
function noRoute(method: string | undefined, path: string): FrondError {
  if (method !== 'GET')
    return new FrondError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}; use GET`);
  return new FrondError('NOT_FOUND', `no route for ${path.slice(0, 200)}`);
}
