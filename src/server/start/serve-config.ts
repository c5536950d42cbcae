import type { SliceOf } from '../../core/option-entry.js';
import type { SnowflakeLayout } from '../../core/snowflake-layout.js';
import type { CoordinatorConfig } from '../../worker-ids/worker-id-registry.js';
import type { ClusterLink } from '../cluster/worker-link.js';
import type { DeclaredFormatTag } from '../opaque/format-config.js';
import type { DeclaredOpaqueTag } from '../opaque/opaque-config.js';
import type { OpaqueSecret } from '../opaque/opaque-keys.js';
import type { SERVE_SETTINGS, ServeSlice } from './serve-settings.js';

/**
 * The values of one slice of `SERVE_SETTINGS` as parsed, typed from its entries: a setting is
 * named and typed once, in its entry (`segmentWaitMs` is `--segment-wait-ms`, a number), and the
 * part that reads it takes it from here.
 */
type Slice<S extends ServeSlice> = SliceOf<typeof SERVE_SETTINGS, S>;

/** How the node is put together: its data dir, its modes, its processes and its log level. */
export type StartConfig = Slice<'start'>;

/** HTTP and its shutdown (`listen.ts`, `startServer`'s close). */
export type ListenConfig = Omit<Slice<'listen'>, 'tlsCert' | 'tlsKey'> & {
  /** `--tls-cert` and `--tls-key`, given together: the node then speaks HTTPS. */
  tls: { cert: string; key: string } | undefined;
};

/** Who may ask for IDs and the admin API (tokens checked: none empty, none with whitespace), and how often. */
export type AccessConfig = Slice<'access'>;

/** What segment mode opens (`segment-mode.ts`). */
export type SegmentConfig = Omit<Slice<'segment'>, 'store' | 'opaqueTags' | 'formatTags'> & {
  /** `--store`, or the default `sqlite:<dataDir>/frond.db`. */
  store: string;
  /**
   * The setting `store` came from, with its value as given and no password, for a store that
   * cannot be opened: `--data-dir ./data`, `--store sqlite:ids.db`. Undefined: `--store` and `store`.
   */
  storeSetting?: string;
  /** `--opaque-tag`, each tag once: created or checked at start. */
  opaqueTags: readonly DeclaredOpaqueTag[];
  /** `--format-tag`, each tag once: created or checked at start; none when absent. */
  formatTags?: readonly DeclaredFormatTag[];
  /**
   * The opaque-ID secret, no setting (a secret is never printed): read from
   * FROND_OPAQUE_SECRET(_FILE) when undefined, none when null.
   */
  opaqueSecret?: OpaqueSecret | null;
};

/** What snowflake mode starts with (`snowflake-mode.ts`). */
export type SnowflakeConfig = Slice<'snowflake'> & {
  /**
   * `--snowflake-layout`, `--time-unit-ms` and `--epoch` as one value, checked: IDs are made and
   * decoded with it (the decode routes also with snowflake mode off). `workerId` fits its worker
   * bits; with `--worker-id-ordinal` it is the hostname's ordinal (plus the offset).
   */
  layout: SnowflakeLayout;
  /**
   * ZooKeeper or etcd hands out worker IDs: the coordinator's settings (`--zk`, `--etcd`, `--name`,
   * …) checked together; undefined: the data dir's file, or snowflake mode is off.
   */
  coordinator: CoordinatorConfig | undefined;
};

/** The Redis protocol's port and its limits (`resp-port.ts`); `respPort` 0 is off. */
export type RespConfig = Slice<'resp'>;

/** What operators read (`ops-surface.ts`). */
export type OpsConfig = Slice<'ops'> & {
  /** Set in a `--workers` process: metrics and stats are answered for all the processes. */
  cluster?: ClusterLink | undefined;
};

/**
 * What `startServer` needs: every slice, flat, so each part takes its own slice (or a `Pick` of
 * another's) from one object, and every field is named as its setting in the option table and in
 * the core's options.
 */
export type ServeConfig = StartConfig &
  ListenConfig &
  AccessConfig &
  SegmentConfig &
  SnowflakeConfig &
  OpsConfig &
  RespConfig;
