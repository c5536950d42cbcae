import { sliceOf } from '../core/option-entry.js';
import { parseDeclaredOpaqueTag } from '../server/opaque/opaque-config.js';
import type {
  AccessConfig,
  ListenConfig,
  SegmentConfig,
  ServeConfig,
  SnowflakeConfig,
  StartConfig,
} from '../server/start/serve-config.js';
import { SERVE_SETTINGS } from '../server/start/serve-settings.js';
import { backendOf } from '../stores/store-registry.js';
import { type CoordinatorConfig, coordinatorConfig, flagOfKind } from '../worker-ids/worker-id-registry.js';
import type { ServeSettings } from './option-table.js';
import { usage } from './options.js';
import { storeOf, storeSettingOf } from './store-options.js';

/**
 * The server's slices of the parsed settings (`SERVE_SETTINGS` says which setting goes to which),
 * each refined by the checks that span settings; each setting's own type and bounds were checked by
 * its entry. Refined in this order, so that of several mistakes the same one is reported first.
 */
export function serveConfig(settings: ServeSettings): ServeConfig {
  const start = startConfig(settings);
  const snowflake = snowflakeConfig(settings);
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
  };
}

/** At least one mode. */
function startConfig(settings: ServeSettings): StartConfig {
  if (!settings.segment && !settings.snowflake)
    throw usage('--no-segment and --no-snowflake together leave nothing to serve');
  return sliceOf(SERVE_SETTINGS, 'start', settings);
}

/** The coordinator's settings checked together; without snowflake mode they mean nothing (a leaf.properties may still name ZooKeeper). */
function snowflakeConfig(settings: ServeSettings): SnowflakeConfig {
  return {
    ...sliceOf(SERVE_SETTINGS, 'snowflake', settings),
    coordinator: settings.snowflake ? coordinatorOf(settings) : undefined,
  };
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

/** `--tls-cert` and `--tls-key` as one pair. */
function listenConfig(settings: ServeSettings): ListenConfig {
  const { tlsCert, tlsKey, ...listen } = sliceOf(SERVE_SETTINGS, 'listen', settings);
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
  };
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
  const config = coordinatorConfig(settings);
  // Leaf mode's worker ID belongs to ip:port, which every worker of --workers shares.
  if (config && !config.lease && settings.workers > 1)
    throw usage(
      `--workers with ${flagOfKind(config.kind)} needs --worker-lease: in Leaf mode ip:port is the worker ID, one per node`,
    );
  return config;
}
