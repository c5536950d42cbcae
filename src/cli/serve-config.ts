import { hostname } from 'node:os';
import { sliceOf } from '../core/option-entry.js';
import type { SnowflakeLayout } from '../core/snowflake-layout.js';
import { tagProblem } from '../core/tag.js';
import { type DeclaredFormatTag, parseDeclaredFormatTag } from '../server/opaque/format-config.js';
import { parseDeclaredOpaqueTag } from '../server/opaque/opaque-config.js';
import type {
  AccessConfig,
  ListenConfig,
  SegmentConfig,
  ServeConfig,
  SnowflakeConfig,
  StartConfig,
} from '../server/start/serve-config.js';
import { LAYOUT_FLAGS, layoutSetting, SERVE_SETTINGS } from '../server/start/serve-settings.js';
import { backendOf } from '../stores/store-registry.js';
import {
  COORDINATOR_BACKENDS,
  type CoordinatorConfig,
  coordinatorConfig,
  flagOfKind,
} from '../worker-ids/worker-id-registry.js';
import type { ServeSettings } from './option-table.js';
import { usage } from './options.js';
import { storeOf, storeSettingOf } from './store-options.js';

/**
 * The server's slices of the parsed settings (`SERVE_SETTINGS` says which setting goes to which),
 * each refined by the checks that span settings; each setting's own type and bounds were checked by
 * its entry. Refined in this order, so that of several mistakes the same one is reported first.
 */
export function serveConfig(settings: ServeSettings, host: ServeHost = currentHost()): ServeConfig {
  const start = startConfig(settings);
  const snowflake = snowflakeConfig(settings, host);
  const access = accessConfig(settings);
  const listen = listenConfig(settings);
  const segment = segmentConfig(settings);
  return {
    ...start,
    ...listen,
    ...access,
    ...segment,
    ...snowflake,
    ...sliceOf(SERVE_SETTINGS, 'ops', settings),
    ...sliceOf(SERVE_SETTINGS, 'resp', settings),
  };
}

/** At least one mode. */
function startConfig(settings: ServeSettings): StartConfig {
  if (!settings.segment && !settings.snowflake)
    throw usage('--no-segment and --no-snowflake together leave nothing to serve');
  // The RESP port is one process's listener; node:cluster shares only the HTTP port among workers.
  if (settings.respPort !== 0 && settings.workers > 1)
    throw usage('--resp-port serves one process: run it without --workers, or one node per RESP port');
  if (settings.respPort !== 0 && settings.respPort === settings.port)
    throw usage(`--resp-port ${settings.respPort} is --port too: give the Redis protocol its own port`);
  return sliceOf(SERVE_SETTINGS, 'start', settings);
}

/** What the settings read of the machine: the hostname (`--worker-id-ordinal`) and the time. */
export interface ServeHost {
  /** `HOSTNAME` as Kubernetes and Docker set it, else the system's. */
  hostname: string;
  now: number;
}

export function currentHost(env: NodeJS.ProcessEnv = process.env): ServeHost {
  const fromEnv = env.HOSTNAME?.trim();
  return { hostname: fromEnv === undefined || fromEnv === '' ? hostname() : fromEnv, now: Date.now() };
}

/**
 * The layout (always: decode routes use it with snowflake mode off), the worker ID from the
 * hostname's ordinal, and the coordinator's settings checked together; without snowflake mode the
 * worker-ID settings mean nothing (a leaf.properties may still name ZooKeeper).
 */
function snowflakeConfig(settings: ServeSettings, host: ServeHost): SnowflakeConfig {
  const slice = sliceOf(SERVE_SETTINGS, 'snowflake', settings);
  const layout = layoutSetting(settings);
  if (!settings.snowflake) return { ...slice, layout, coordinator: undefined };
  layout.assertLasts(host.now, LAYOUT_FLAGS);
  const coordinator = coordinatorOf(settings);
  const workerId = workerIdOf(settings, layout, host.hostname);
  return { ...slice, layout, workerId, coordinator };
}

/**
 * `--worker-id N`, or the ordinal of a StatefulSet pod's hostname (`frond-3` is 3) plus
 * `--worker-id-offset`, times `--workers` (each process of a pod adds its index, so pods never
 * overlap); checked against the layout's worker bits.
 */
function workerIdOf(settings: ServeSettings, layout: SnowflakeLayout, name: string): number | undefined {
  const { workerId, workerIdOrdinal, workerIdOffset, workers } = settings;
  const bits = layout.isLeafBits
    ? ''
    : ` (the ${layout.workerBits} worker bits of --snowflake-layout ${layout.bits})`;
  if (!workerIdOrdinal) {
    if (workerIdOffset !== 0) throw usage('--worker-id-offset goes with --worker-id-ordinal');
    if (workerId !== undefined && workerId > layout.maxWorkerId)
      throw usage(
        `--worker-id "${workerId}" is invalid: use an integer from 0 to ${layout.maxWorkerId}${bits}`,
      );
    return workerId;
  }
  if (workerId !== undefined) throw usage('--worker-id and --worker-id-ordinal: pick one');
  const ordinal = hostnameOrdinal(name);
  const base = workerIdOffset + ordinal * workers;
  const last = base + workers - 1;
  if (last > layout.maxWorkerId) {
    const how = `${workerIdOffset > 0 ? `--worker-id-offset ${workerIdOffset} + ` : ''}ordinal ${ordinal}${workers > 1 ? ` × --workers ${workers}` : ''}`;
    throw usage(
      `--worker-id-ordinal: hostname ${JSON.stringify(name)} gives worker ID ${last} (${how}), above ${layout.maxWorkerId}, the largest of ${layout.workerBits} worker bits; use fewer replicas or more worker bits (--snowflake-layout)`,
    );
  }
  return base;
}

/** The number a StatefulSet puts at the end of a pod's name: `frond-3` (or `frond-3.frond.ns.svc…`) is 3. */
export function hostnameOrdinal(name: string): number {
  const label = name.split('.')[0] ?? '';
  const match = /^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?-(0|[1-9][0-9]{0,8})$/.exec(label);
  if (match === null)
    throw usage(
      `--worker-id-ordinal: hostname ${JSON.stringify(name.slice(0, 80))} does not end in -N, as a StatefulSet pod's (frond-0, frond-1, …); set HOSTNAME, or give --worker-id`,
    );
  return Number(match[1]);
}

/** The tokens, each checked. */
function accessConfig(settings: ServeSettings): AccessConfig {
  const access = sliceOf(SERVE_SETTINGS, 'access', settings);
  const { adminToken } = access;
  return {
    ...access,
    tokens: access.tokens.map((token) => checkedToken(token, '--token')),
    adminToken: adminToken === undefined ? undefined : checkedToken(adminToken, '--admin-token'),
  };
}

/** `--tls-cert` and `--tls-key` as one pair; `--grpc-port` in one process only. */
function listenConfig(settings: ServeSettings): ListenConfig {
  const { tlsCert, tlsKey, ...listen } = sliceOf(SERVE_SETTINGS, 'listen', settings);
  // node:cluster shares an HTTP port among the processes, not an HTTP/2 server's: one would hold it.
  if (listen.grpcPort !== 0 && settings.workers > 1)
    throw usage('--grpc-port serves one process: it cannot go with --workers above 1; drop one');
  if (tlsCert === undefined && tlsKey === undefined) return { ...listen, tls: undefined };
  if (tlsCert === undefined || tlsKey === undefined) throw usage('--tls-cert and --tls-key go together');
  return { ...listen, tls: { cert: tlsCert, key: tlsKey } };
}

/**
 * The store with its default, and the declared opaque tags. The store's value is read here, with
 * segment mode off too (the store then unused, `frond serve` says so): a value no backend takes, or
 * a URL that does not parse, stops the start before the port is taken or the data dir made. Nothing
 * connects here, and no file is read: the TLS files the URL names are read by the start, in segment
 * mode only, before it takes the port (src/server/start/start-files.ts).
 */
function segmentConfig(settings: ServeSettings): SegmentConfig {
  const store = storeOf(settings);
  backendOf(store).parse(store);
  return {
    ...sliceOf(SERVE_SETTINGS, 'segment', settings),
    store,
    storeSetting: storeSettingOf(settings),
    opaqueTags: declaredOpaqueTags(settings),
    formatTags: declaredFormatTags(settings),
    denseTags: declaredDenseTags(settings),
  };
}

/** `--dense-tag TAG`, each a valid tag name; only segment mode has tags. Repeats are harmless, kept once. */
function declaredDenseTags(settings: ServeSettings): string[] {
  const tags = [...new Set(settings.denseTags)];
  if (tags.length > 0 && !settings.segment)
    throw usage('--dense-tag names segment tags, and --no-segment turns segment mode off: drop one');
  for (const tag of tags) {
    const problem = tagProblem(tag);
    if (problem !== undefined) throw usage(`--dense-tag ${JSON.stringify(tag)}: ${problem}`);
  }
  return tags;
}

/** `--format-tag TAG=FORMAT[@ZONE]`, each tag once, none also opaque; only segment mode has tags. */
function declaredFormatTags(settings: ServeSettings): readonly DeclaredFormatTag[] {
  const declared = settings.formatTags.map((text) => parseDeclaredFormatTag(text, '--format-tag'));
  if (declared.length > 0 && !settings.segment)
    throw usage('--format-tag declares segment tags, and --no-segment turns segment mode off: drop one');
  const seen = new Set(settings.opaqueTags.map((text) => text.slice(0, text.lastIndexOf('='))));
  for (const { tag } of declared) {
    if (seen.has(tag))
      throw usage(`--format-tag names tag ${tag} twice, or also in --opaque-tag: give each tag once`);
    seen.add(tag);
  }
  return declared;
}

/** `--opaque-tag TAG=DOMAIN`, each tag once; only segment mode has tags. */
function declaredOpaqueTags(settings: ServeSettings): SegmentConfig['opaqueTags'] {
  const declared = settings.opaqueTags.map((text) => parseDeclaredOpaqueTag(text, '--opaque-tag'));
  if (declared.length > 0 && !settings.segment)
    throw usage('--opaque-tag declares segment tags, and --no-segment turns segment mode off: drop one');
  const seen = new Set<string>();
  for (const { tag } of declared) {
    if (seen.has(tag)) throw usage(`--opaque-tag names tag ${tag} twice: give each tag once`);
    seen.add(tag);
  }
  return declared;
}

/**
 * A token is sent as `Authorization: Bearer T`, which cannot carry whitespace; an empty or blank
 * one would stand for "no token", which for `--token` means open ID endpoints: both stop the start.
 */
function checkedToken(token: string, flag: string): string {
  if (token.trim() === '') throw usage(`${flag} is empty or blank: give a token, or leave ${flag} out`);
  if (/\s/.test(token))
    throw usage(`${flag} holds whitespace, which Authorization: Bearer cannot carry: use a token without it`);
  return token;
}

/** A backend's setting (`--zk`, `--etcd`) and their companions; undefined: worker IDs from the data dir's file. */
function coordinatorOf(settings: ServeSettings): CoordinatorConfig | undefined {
  if (settings.workerIdOrdinal) {
    const values = settings as Record<string, unknown>;
    const chosen = COORDINATOR_BACKENDS.find((backend) => typeof values[backend.option.name] === 'string');
    if (chosen !== undefined) throw usage(`--worker-id-ordinal and --${chosen.option.flag}: pick one`);
    if (settings.workerLease) throw usage('--worker-lease and --worker-id-ordinal: pick one');
    return undefined;
  }
  const config = coordinatorConfig(settings);
  // Leaf mode's worker ID belongs to ip:port, which every worker of --workers shares.
  if (config && !config.lease && settings.workers > 1)
    throw usage(
      `--workers with ${flagOfKind(config.kind)} needs --worker-lease: in Leaf mode ip:port is the worker ID, one per node`,
    );
  return config;
}
