import type pg from 'pg';
import { FrondError } from '../../core/errors.js';
import { parseCounterName } from '../../core/id-format.js';
import type { Gap, HandBackResult } from '../../core/id-gaps.js';
import type { Logger } from '../../core/logger.js';
import { MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import { type NewTag, type OpaqueSetting, opaqueNameUsed } from '../../core/tag-catalogue.js';
import { kindOf } from '../../core/tag-kind.js';
import { describeNetworkSql, type NetworkSqlConfig, type SqlValue } from '../../sql/network-sql.js';
import { PostgresConnections, sqlState } from '../../sql/postgres-connections.js';
import { formatRowNeeded, formatRowRemains } from '../format-rules.js';
import { gapsOf, lowestHeld, planHandBack } from '../hand-back-plan.js';
import { NEW_NAMES_ROW, ownRecordOf, recordOf, startsAfterFence } from '../new-names.js';
import type { FencedAdvance, FenceOutcome, FenceRequest, HandBackRequest } from '../segment-primitive.js';
import { fenceFloor, ROW_GONE } from '../sql/fence-sql.js';
import { type FormatRow, formatOf } from '../sql/leaf-rows.js';
import { type SqlDialect, type SqlResult, SqlStore, type SqlStoreOptions } from '../sql/sql-store.js';
import {
  type FrondTable,
  type Needs,
  type Privilege,
  pairsOf,
  type Refusal,
  type StoreTable,
} from '../sql/table-access.js';

/**
 * Leaf's MySQL table in PostgreSQL's types. MySQL's TIMESTAMP is an instant (stored in UTC), which
 * is PostgreSQL's TIMESTAMPTZ. PostgreSQL has no ON UPDATE, so every UPDATE frond runs sets
 * update_time itself.
 */
export const POSTGRES_DDL = `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag     VARCHAR(128) NOT NULL DEFAULT '',
  max_id      BIGINT       NOT NULL DEFAULT 1,
  step        INTEGER      NOT NULL,
  description VARCHAR(256) DEFAULT NULL,
  update_time TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
)`;

/**
 * frond's own tables, beside Leaf's (which stays as it is): the fence row, one per database, and
 * the highest max_id granted per tag, written in the same transaction as every fenced advance
 * (docs/databases.md, "Failover, restore and split brain").
 */
export const POSTGRES_FROND_DDL: Readonly<Record<FrondTable, string>> = {
  frond_fence: `CREATE TABLE IF NOT EXISTS frond_fence (
  id        SMALLINT     NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch     BIGINT       NOT NULL,
  identity  VARCHAR(128) NOT NULL,
  fenced_at TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP
)`,
  frond_high_water: `CREATE TABLE IF NOT EXISTS frond_high_water (
  biz_tag VARCHAR(128) NOT NULL PRIMARY KEY,
  max_id  BIGINT       NOT NULL
)`,
  frond_tag_options: `CREATE TABLE IF NOT EXISTS frond_tag_options (
  biz_tag       VARCHAR(128) NOT NULL PRIMARY KEY,
  opaque_domain VARCHAR(16)  NOT NULL,
  key_check     VARCHAR(32)  NOT NULL
)`,
  frond_tag_formats: `CREATE TABLE IF NOT EXISTS frond_tag_formats (
  biz_tag   VARCHAR(128) NOT NULL PRIMARY KEY,
  id_format VARCHAR(255) NOT NULL,
  time_zone VARCHAR(64)  NOT NULL
)`,
  // The IDs given up for good, [start_id, end_id) of a tag; created_at in ms by the server's clock.
  // The key is what a retry inserts again (ON CONFLICT DO NOTHING) and the order listGaps pages in.
  frond_gaps: `CREATE TABLE IF NOT EXISTS frond_gaps (
  tag        VARCHAR(128) NOT NULL,
  start_id   BIGINT       NOT NULL,
  end_id     BIGINT       NOT NULL,
  reason     VARCHAR(32)  NOT NULL,
  node       VARCHAR(255) NOT NULL,
  created_at BIGINT       NOT NULL,
  PRIMARY KEY (tag, start_id, end_id)
)`,
};

/** ms since the Unix epoch by the server's clock, as frond_gaps.created_at keeps it. */
const NOW_MS = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint';

/**
 * Gaps of one tag inserted from arrays (`$1` the tag, `$2`/`$3` starts and ends, `$4` reasons, `$5`
 * the node, `$6` the time): one statement whatever their number; one already recorded stays.
 */
const INSERT_GAPS = `INSERT INTO frond_gaps (tag, start_id, end_id, reason, node, created_at)
  SELECT $1, g.s, g.e, g.r, $5, $6::bigint FROM unnest($2::bigint[], $3::bigint[], $4::text[]) AS g(s, e, r)
  ON CONFLICT (tag, start_id, end_id) DO NOTHING`;

/**
 * Gaps of any tags, as recordGaps gets them (crash gaps of every tag a node held): arrays of tags,
 * starts, ends, reasons and nodes, one time.
 */
const INSERT_ANY_GAPS = `INSERT INTO frond_gaps (tag, start_id, end_id, reason, node, created_at)
  SELECT g.t, g.s, g.e, g.r, g.n, ${NOW_MS}
    FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[]) AS g(t, s, e, r, n)
  ON CONFLICT (tag, start_id, end_id) DO NOTHING`;

/**
 * The locks an advance takes before its statement, in the order every writer of a tag's row takes
 * them (the fence row shared, then the tag's row), so that the advance's statement starts after
 * they are held. Under READ COMMITTED a statement reads the tables other than the row it updates
 * as they were when it started: an advance that started while a hand-back held the row, and waited
 * for it, went on from the high-water record as it was before the hand-back lowered it, and skipped
 * the IDs handed back without a gap (all of them lost, none twice). Started after the lock, its
 * snapshot holds the hand-back's commit. The fence row first: a fence holds it, then every row.
 */
const LOCK_FOR_ADVANCE = `WITH f AS (SELECT 1 FROM frond_fence WHERE id = 1 FOR KEY SHARE)
SELECT (SELECT count(*) FROM f) AS fenced,
       (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1 FOR UPDATE) AS locked`;

/**
 * The database a statement runs on: the system identifier (a replica shares it) and the timeline
 * of the current WAL position, which a promotion changes. On a replica it fails (recovery in
 * progress), as a write would.
 */
const IDENTITY_SQL = `(SELECT system_identifier::text FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`;

/**
 * Every advance is one statement, so one transaction and one snapshot (READ COMMITTED takes one per
 * statement): the fence row is locked first (KEY SHARE: only a fence waits for it) and compared
 * with this database; the row advances only if they match, from at least the highest max_id frond
 * recorded for it (a leaf_alloc restored to an older state, or a row deleted and put back lower by
 * hand, goes on above it), the new max_id is recorded, and the tag's kind is read from
 * frond_tag_options and frond_tag_formats. A row of either is inserted only in the transaction that
 * inserts its leaf_alloc row and is never changed, so the row this statement advances was inserted
 * by a transaction its snapshot sees, and so is that row's setting or format: the kind read is the
 * kind of the row granted.
 *
 * The bound is part of the UPDATE: a range past 2^63 - 1 changes nothing (PostgreSQL would fail the
 * statement with "bigint out of range", which says less). `$1` is the tag, `$2` the step when one is
 * given: the only values in the statement, both parameters.
 */
const ADVANCE = (byStep: boolean) => {
  const by = byStep ? '$2::bigint' : 'step';
  // The floor a restored leaf_alloc goes on from: its own max_id, or frond's record when higher
  // (for a name without one, the new-names record: src/stores/new-names.ts).
  const floor = `GREATEST(max_id, ${recordOf('$1', 'max_id')})`;
  return {
    // Named statements are parsed once per connection; a new text needs a new name.
    name: `frond_advance_fenced${byStep ? '_by' : ''}_v5`,
    text: `WITH fence AS (
  SELECT epoch, identity, identity = ${IDENTITY_SQL} AS current FROM frond_fence WHERE id = 1 FOR KEY SHARE
), advanced AS (
  UPDATE leaf_alloc
     SET max_id = ${floor} + ${by},
         update_time = CURRENT_TIMESTAMP
   WHERE biz_tag = $1 AND (SELECT current FROM fence) AND ${floor} <= ${MAX_SEGMENT_ID} - ${by}
  RETURNING max_id, step
), recorded AS (
  INSERT INTO frond_high_water (biz_tag, max_id) SELECT $1, max_id FROM advanced
  ON CONFLICT (biz_tag) DO UPDATE SET max_id = GREATEST(frond_high_water.max_id, EXCLUDED.max_id)
)
SELECT f.epoch, ${IDENTITY_SQL} AS identity, f.current,
       a.max_id, a.step, o.opaque_domain, o.key_check, fm.id_format, fm.time_zone,
       GREATEST(l.max_id, COALESCE(h.max_id, l.max_id)) AS floor, l.step AS table_step
  FROM (SELECT 1) one
  LEFT JOIN fence f ON true LEFT JOIN advanced a ON true
  LEFT JOIN leaf_alloc l ON l.biz_tag = $1 LEFT JOIN frond_high_water h ON h.biz_tag = $1
  LEFT JOIN frond_tag_options o ON o.biz_tag = $1 LEFT JOIN frond_tag_formats fm ON fm.biz_tag = $1`,
  };
};
const ADVANCE_BY_TABLE_STEP = ADVANCE(false);
const ADVANCE_BY = ADVANCE(true);

/** What an advance statement returns: one row, whatever happened. */
interface AdvanceRow {
  epoch: string | null;
  identity: string | null;
  current: boolean | null;
  max_id: string | null;
  step: number | null;
  opaque_domain: string | null;
  key_check: string | null;
  id_format: string | null;
  time_zone: string | null;
  /** The row's floor in the statement's snapshot (null without a row): for the refusal's message. */
  floor: string | null;
  table_step: number | null;
}

/**
 * A plain tag's row, in one statement: nothing is inserted for a name whose opaque setting is still
 * in frond_tag_options without a row (a removed tag, or a row deleted by hand): its opaque IDs are
 * spread over the whole domain, and a plain tag under that name could repeat one of them. A row
 * that is there fails the insert: TAG_EXISTS. A name frond_high_water knows starts at its record
 * when the start is below it (`TagCatalogue.addTag`).
 */
const insertPlain = (record: string) => `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
  SELECT $1::varchar,
         GREATEST($2::bigint, ${record}),
         $3::integer, $4::varchar
   WHERE NOT EXISTS (SELECT 1 FROM frond_tag_options WHERE biz_tag = $1::varchar)
      OR EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar)`;
const INSERT_PLAIN = insertPlain(recordOf('$1::varchar', '$2::bigint'));

/**
 * A counter whose period starts after the last fence (`startsAfterFence`, new-names.ts): from its
 * own record only, which is written with the row (RECORD_ROW), so its advances go on from there
 * too, not from the new-names record.
 */
const INSERT_COUNTER = insertPlain(ownRecordOf('$1::varchar', '$2::bigint'));
const RECORD_ROW = `INSERT INTO frond_high_water (biz_tag, max_id) SELECT biz_tag, max_id FROM leaf_alloc WHERE biz_tag = $1
  ON CONFLICT (biz_tag) DO UPDATE SET max_id = GREATEST(frond_high_water.max_id, EXCLUDED.max_id)`;

/** The last fence, in ms by the database's clock (no row: none). */
const FENCED_AT = 'SELECT (EXTRACT(EPOCH FROM fenced_at) * 1000)::float8 AS ms FROM frond_fence WHERE id = 1';

/** A counter's format row goes with its row: the tag's own row keeps the format for good. */
const DELETE_COUNTER_FORMAT = 'DELETE FROM frond_tag_formats WHERE biz_tag = $1';

/**
 * An opaque tag's setting and row in one statement, so one transaction: both exist or neither.
 * Nothing is inserted for a name frond_high_water knows and leaf_alloc no longer holds: it served
 * plain IDs (opaqueNameUsed). A row that is there fails the insert: TAG_EXISTS.
 */
const INSERT_OPAQUE = `WITH o AS (INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check)
    SELECT $1::varchar, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM frond_high_water WHERE biz_tag = $1::varchar)
       OR EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar) RETURNING biz_tag)
  INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
    SELECT biz_tag, GREATEST($2::bigint, ${recordOf('$1::varchar', '$2::bigint')}), $3::integer, $4::varchar FROM o`;

/**
 * What a formatted add reads of its name (format-rules.ts), after taking the tags' lock: its row,
 * the format kept under it, whether frond_high_water knows it, whether it has an opaque setting.
 */
const NAME_STATE = `SELECT EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar) AS has_row,
       f.id_format, f.time_zone,
       EXISTS (SELECT 1 FROM frond_high_water WHERE biz_tag = $1::varchar) AS served,
       EXISTS (SELECT 1 FROM frond_tag_options WHERE biz_tag = $1::varchar) AS opaque
  FROM (SELECT 1) one LEFT JOIN frond_tag_formats f ON f.biz_tag = $1::varchar`;

interface NameStateRow extends FormatRow {
  has_row: boolean;
  served: boolean;
  opaque: boolean;
}

const INSERT_FORMAT = 'INSERT INTO frond_tag_formats (biz_tag, id_format, time_zone) VALUES ($1, $2, $3)';

/** A formatted tag's format whose leaf_alloc row is gone: a plain or opaque tag may not take the name. */
const FORMAT_WITHOUT_ROW = `SELECT id_format, time_zone FROM frond_tag_formats
  WHERE biz_tag = $1::varchar AND NOT EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar)`;

/**
 * `removeTag` in one statement, so one transaction: the row is deleted (after any advance that
 * holds its lock commits: the DELETE then takes the row as that advance left it) and its max_id
 * recorded in frond_high_water, the higher of the two kept, as an advance records it. No row, no
 * answer row.
 */
const DELETE_TAG = `WITH gone AS (
  DELETE FROM leaf_alloc WHERE biz_tag = $1 RETURNING biz_tag, max_id
)
INSERT INTO frond_high_water (biz_tag, max_id) SELECT biz_tag, max_id FROM gone
  ON CONFLICT (biz_tag) DO UPDATE SET max_id = GREATEST(frond_high_water.max_id, EXCLUDED.max_id)
  RETURNING max_id`;

/**
 * The transaction lock that adds, removals and fences take, one for every name: an advisory lock in
 * frond's own key space (the first key, 'frnd' in ASCII, keeps it apart from an application's
 * advisory locks on the same database). A fence takes it too: an add that committed while a fence
 * ran was missed by the fence's UPDATE and read the new-names record from before it, so a tag the
 * restore had lost came back at its old IDs (5,000 of 12,000 twice). Adds and removals are rare; a
 * fence is rarer.
 */
const TAGS_LOCK = 'SELECT pg_advisory_xact_lock(1718775396, 0)';

/** Every tag up by the skip from its floor (fence-sql.ts). */
const FENCE_FLOOR = fenceFloor();

/**
 * Each (table, privilege) asked, whether the table is there (by the search path, as frond's
 * statements find it) and whether the account holds the privilege, itself or through a role:
 * one read of the catalogue, which every account may read.
 */
const PRIVILEGES = `SELECT n.t AS table_name, n.p AS privilege, to_regclass(n.t) IS NOT NULL AS present,
       COALESCE(has_table_privilege(to_regclass(n.t), n.p), false) AS granted
  FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS n(t, p, i) ORDER BY n.i`;

/** PostgreSQL's undefined_table, undefined_column, insufficient_privilege and unique_violation. */
const UNDEFINED_TABLE = '42P01';
const INSUFFICIENT_PRIVILEGE = '42501';
const UNDEFINED_COLUMN = '42703';
const UNIQUE_VIOLATION = '23505';
/** lock_not_available: a lock_timeout passed. */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * `leaf_alloc` in PostgreSQL, shared by any number of nodes (the rules around the statements are
 * SqlStore's). An allocation is one statement (`ADVANCE`: the fence row, the UPDATE … RETURNING,
 * the high-water record and the kind): its own transaction, holding the row lock from the update to
 * the commit, as Leaf's UPDATE-then-SELECT transaction does, in one round trip instead of four.
 */
export class PostgresSegmentStore extends SqlStore {
  constructor(config: NetworkSqlConfig, options: { logger?: Logger | undefined } & SqlStoreOptions = {}) {
    super(new PostgresDialect(config, options), options);
  }
}

class PostgresDialect implements SqlDialect {
  readonly description: string;
  readonly leafDdl = POSTGRES_DDL;
  readonly frondDdl = POSTGRES_FROND_DDL;
  readonly noRow = 'false';
  readonly int = '?';
  // PostgreSQL has no ON UPDATE: every UPDATE frond runs sets update_time itself.
  readonly touch = ', update_time = CURRENT_TIMESTAMP';
  private readonly connections: PostgresConnections;
  private readonly queryTimeoutMs: number;
  /** The statements of SqlStore, their `?` numbered as `$1`, `$2`… once per text. */
  private readonly numbered = new Map<string, string>();

  constructor(config: NetworkSqlConfig, options: { logger?: Logger | undefined }) {
    this.description = describeNetworkSql('postgres', config);
    this.queryTimeoutMs = config.queryTimeoutMs;
    this.connections = new PostgresConnections(config, {
      description: this.description,
      logger: options.logger,
    });
  }

  tagIs(column: string): { sql: string; params: number } {
    return { sql: `${column} = ?`, params: 1 };
  }

  // U+001F: in every counter's name, in no tag's (src/core/tag.ts).
  readonly notCounter = (column: string) => `strpos(${column}, chr(31)) = 0`;

  async query(text: string, values?: readonly SqlValue[]): Promise<SqlResult> {
    let numbered = this.numbered.get(text);
    if (numbered === undefined) {
      let n = 0;
      numbered = text.replace(/\?/g, () => `$${++n}`);
      this.numbered.set(text, numbered);
    }
    const result = await this.connections.query(
      values === undefined ? numbered : { text: numbered, values: values as SqlValue[] },
    );
    return { rows: result.rows, count: result.rowCount ?? 0 };
  }

  /**
   * One advance statement, in a transaction on a client of its own after the locks it needs
   * (LOCK_FOR_ADVANCE): a commit whose wait for a synchronous standby was cancelled fails it. Undefined: the tag has no row. ID_RANGE_EXHAUSTED: its next range would
   * pass 2^63 - 1 (from the snapshot's floor).
   */
  async advance(tag: string, step: number | undefined): Promise<FencedAdvance | undefined> {
    const statement = step === undefined ? ADVANCE_BY_TABLE_STEP : ADVANCE_BY;
    const result = await this.connections.transaction(async (client) => {
      await client.query({ text: LOCK_FOR_ADVANCE, values: [tag] });
      return client.query<AdvanceRow>({ ...statement, values: step === undefined ? [tag] : [tag, step] });
    });
    const row = result.rows[0];
    if (row === undefined) throw new Error('the advance returned no row');
    const epoch = row.epoch === null ? 0 : Number(row.epoch);
    const identity = row.identity as string;
    if (row.current !== true) return { kind: 'unfenced', epoch, identity };
    if (row.max_id === null || row.step === null) {
      // Nothing reserved: no row, or its next range would pass 2^63 - 1.
      if (row.floor === null || row.table_step === null) return undefined;
      const used = step ?? row.table_step;
      if (BigInt(row.floor) > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, row.floor, used);
      return undefined;
    }
    return {
      kind: 'granted',
      // Served under the kind read in its statement.
      allocation: {
        maxId: BigInt(row.max_id),
        step: step ?? row.step,
        tableStep: row.step,
        kind: kindOf(row.opaque_domain, row.key_check, row.id_format, row.time_zone),
      },
      epoch,
      identity,
    };
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    // A failed fence leaves nothing behind; if the connection broke, the server rolls back.
    return this.connections.transaction(async (client) => {
      await this.lockTags(client, 'fencing the database');
      return fenceIn(client, request);
    });
  }

  /**
   * One transaction, each decision read by a statement that starts after the locks it depends on
   * are held (READ COMMITTED: a snapshot per statement): the fence row shared (a fence waits), the
   * tag's row locked as an advance locks it (advances of other nodes wait), then the record (locked
   * too: it is written) and the gaps near the range; the decision is planHandBack's.
   */
  handBack(request: HandBackRequest): Promise<HandBackResult> {
    return this.connections.transaction(async (client) => {
      const fence = (
        await client.query<{ epoch: string; identity: string; current: boolean; now: string }>(
          `SELECT f.epoch, f.identity, f.identity = ${IDENTITY_SQL} AS current, ${NOW_MS} AS now
             FROM (SELECT 1) one LEFT JOIN (SELECT * FROM frond_fence WHERE id = 1 FOR KEY SHARE) f ON true`,
        )
      ).rows[0];
      const row = (
        await client.query<{ max_id: string }>({
          text: 'SELECT max_id FROM leaf_alloc WHERE biz_tag = $1 FOR UPDATE',
          values: [request.tag],
        })
      ).rows[0];
      const recorded = (
        await client.query<{ max_id: string }>({
          text: 'SELECT max_id FROM frond_high_water WHERE biz_tag = $1 FOR UPDATE',
          values: [request.tag],
        })
      ).rows[0];
      const claimed = (
        await client.query<{ start_id: string; end_id: string }>({
          text: 'SELECT start_id, end_id FROM frond_gaps WHERE tag = $1 AND start_id < $2 AND end_id > $3',
          values: [request.tag, request.to.toString(), lowestHeld(request).toString()],
        })
      ).rows.map((gap) => ({ start: BigInt(gap.start_id), end: BigInt(gap.end_id) }));
      const plan = planHandBack(request, {
        maxId: row === undefined ? undefined : BigInt(row.max_id),
        recorded: recorded === undefined ? undefined : BigInt(recorded.max_id),
        fenceMatches:
          fence?.current === true &&
          Number(fence.epoch) === request.epoch &&
          fence.identity === request.identity,
        claimed,
      });
      if (plan.returned !== undefined && !plan.alreadyReturned) {
        const values = [request.tag, plan.returned.from.toString()];
        await client.query({
          text: 'UPDATE leaf_alloc SET max_id = $2, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $1',
          values,
        });
        if (recorded !== undefined)
          await client.query({ text: 'UPDATE frond_high_water SET max_id = $2 WHERE biz_tag = $1', values });
      }
      const gaps = gapsOf(request, plan, Number(fence?.now ?? Date.now()));
      if (gaps.length > 0)
        await client.query({
          text: INSERT_GAPS,
          values: [
            request.tag,
            gaps.map((gap) => gap.start.toString()),
            gaps.map((gap) => gap.end.toString()),
            gaps.map((gap) => gap.reason),
            request.node,
            String(gaps[0]?.at ?? 0),
          ],
        });
      return { tag: request.tag, returned: plan.returned, gaps };
    });
  }

  async recordGaps(gaps: readonly Gap[]): Promise<void> {
    const real = gaps.filter((gap) => gap.end > gap.start);
    if (real.length === 0) return;
    await this.connections.query({
      text: INSERT_ANY_GAPS,
      values: [
        real.map((gap) => gap.tag),
        real.map((gap) => gap.start.toString()),
        real.map((gap) => gap.end.toString()),
        real.map((gap) => gap.reason),
        real.map((gap) => gap.node),
      ],
    });
  }

  /**
   * Adds and removals hold the tags' lock (TAGS_LOCK) for their transaction, and read after
   * taking it: under READ COMMITTED each statement has a snapshot of its own, so the insert's
   * checks see a removal that committed while it waited. Without it, an insert whose snapshot
   * still held a row being removed waited for the removal and went through: a name that served
   * plain IDs came back opaque, or a plain row joined a removed opaque tag's setting (both seen).
   */
  async insertTag(tag: NewTag, opaque: OpaqueSetting | undefined): Promise<void> {
    const values = [tag.tag, tag.start.toString(), tag.step, tag.description ?? null];
    const { format } = tag;
    const result = await this.connections.transaction(async (client) => {
      await this.lockTags(client, `adding tag ${tag.tag}`);
      if (format !== undefined) {
        // The format's rules (format-rules.ts) from one read of the name, then the rows; a refusal
        // thrown here rolls back the format row with the rest.
        const state = (await client.query<NameStateRow>({ text: NAME_STATE, values: [tag.tag] }))
          .rows[0] as NameStateRow;
        const needed = formatRowNeeded(
          { ...tag, format },
          {
            row: state.has_row,
            format: formatOf(state) ?? undefined,
            served: state.served,
            opaque: state.opaque,
          },
        );
        // Read under the tags' lock, which fences take too: the fence row as the last fence left it.
        const own =
          tag.periodStartMs !== undefined &&
          startsAfterFence(tag, (await client.query<{ ms: number }>(FENCED_AT)).rows[0]?.ms);
        if (needed)
          await client.query({ text: INSERT_FORMAT, values: [tag.tag, format.format, format.timeZone] });
        const inserted = await client.query({ text: own ? INSERT_COUNTER : INSERT_PLAIN, values });
        if (inserted.rowCount === 0) throw opaqueSettingRemains(tag.tag);
        if (own) await client.query({ text: RECORD_ROW, values: [tag.tag] });
        return inserted;
      }
      const kept = (await client.query<FormatRow>({ text: FORMAT_WITHOUT_ROW, values: [tag.tag] })).rows[0];
      const keptFormat = kept && formatOf(kept);
      if (keptFormat) throw formatRowRemains(tag.tag, keptFormat);
      return opaque === undefined
        ? await client.query({ text: INSERT_PLAIN, values })
        : await client.query({ text: INSERT_OPAQUE, values: [...values, opaque.domain, opaque.keyCheck] });
    });
    if (result.rowCount === 0)
      throw opaque === undefined ? opaqueSettingRemains(tag.tag) : opaqueNameUsed(tag.tag);
  }

  async deleteTag(tag: string): Promise<bigint | undefined> {
    const result = await this.connections.transaction(async (client) => {
      await this.lockTags(client, `removing tag ${tag}`);
      const removed = await client.query<{ max_id: string }>({ text: DELETE_TAG, values: [tag] });
      // A counter's format row goes with it (8,760 a year of an hourly tag otherwise); its record
      // stays, so a node that creates it again (with its tag's format) starts it above that.
      if (removed.rows.length > 0 && parseCounterName(tag) !== undefined)
        await client.query({ text: DELETE_COUNTER_FORMAT, values: [tag] });
      return removed;
    });
    const row = result.rows[0];
    return row === undefined ? undefined : BigInt(row.max_id);
  }

  /**
   * TAGS_LOCK within half the statement timeout (lock_timeout, for this transaction only), so a
   * holder that hangs, an operator's console, say, fails the call in a line that says so, not in
   * the server's "canceling statement due to statement timeout". `what` is the caller, for it.
   */
  private async lockTags(client: pg.PoolClient, what: string): Promise<void> {
    const waitMs = Math.max(1, Math.floor(this.queryTimeoutMs / 2));
    await client.query(`SET LOCAL lock_timeout = ${waitMs}`);
    try {
      await client.query(TAGS_LOCK);
    } catch (error) {
      if (sqlState(error) !== LOCK_NOT_AVAILABLE) throw error;
      throw new FrondError(
        'STORE_UNAVAILABLE',
        `${this.description}: ${what}: tags are being added, removed or fenced by another connection, which held their lock for ${waitMs} ms; try again`,
        { cause: error },
      );
    }
    await client.query('SET LOCAL lock_timeout = 0');
  }

  isMissingTable(error: unknown): boolean {
    return sqlState(error) === UNDEFINED_TABLE;
  }

  isMissingColumn(error: unknown): boolean {
    return sqlState(error) === UNDEFINED_COLUMN;
  }

  isDenied(error: unknown): boolean {
    return sqlState(error) === INSUFFICIENT_PRIVILEGE;
  }

  async account(): Promise<string> {
    const { rows } = await this.connections.query<{ account: string }>('SELECT current_user AS account');
    return rows[0]?.account ?? 'unknown';
  }

  async refusals(needs: Needs): Promise<Refusal[]> {
    const pairs = pairsOf(needs);
    const { rows } = await this.connections.query<{
      table_name: StoreTable;
      privilege: Privilege;
      present: boolean;
      granted: boolean;
    }>({
      text: PRIVILEGES,
      values: [pairs.map((pair) => pair.table), pairs.map((pair) => pair.privilege)],
    });
    const refusals = new Map<StoreTable, Refusal>();
    for (const row of rows) {
      if (row.granted) continue;
      const refusal = refusals.get(row.table_name) ?? {
        table: row.table_name,
        missing: [],
        unseen: !row.present,
      };
      refusals.set(row.table_name, { ...refusal, missing: [...refusal.missing, row.privilege] });
    }
    return [...refusals.values()];
  }

  isDuplicateKey(error: unknown): boolean {
    return sqlState(error) === UNIQUE_VIOLATION;
  }

  close(): Promise<void> {
    return this.connections.end();
  }
}

/** The fence, in the caller's transaction. */
async function fenceIn(client: pg.PoolClient, request: FenceRequest): Promise<FenceOutcome> {
  const identity = (await client.query<{ identity: string }>(`SELECT ${IDENTITY_SQL} AS identity`)).rows[0]
    ?.identity as string;
  const lock = () =>
    client.query<{ epoch: string; identity: string }>(
      'SELECT epoch, identity FROM frond_fence WHERE id = 1 FOR UPDATE',
    );
  let row = (await lock()).rows[0];
  if (row === undefined) {
    // A database frond never fenced: it records this one and raises nothing.
    await client.query(
      'INSERT INTO frond_fence (id, epoch, identity) VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING',
      [request.aboveEpoch + 1, identity],
    );
    row = (await lock()).rows[0] as { epoch: string; identity: string };
    return { epoch: Number(row.epoch), identity: row.identity, fenced: false, tags: 0 };
  }
  if (row.identity === identity && Number(row.epoch) > request.observedEpoch) {
    return { epoch: Number(row.epoch), identity, fenced: false, tags: 0 };
  }
  // Every row locked and read as the fence finds it: what the fence skipped of each tag,
  // [max_id before, max_id after), is recorded as a gap below.
  const before = await client.query<{ biz_tag: string; max_id: string }>(
    'SELECT biz_tag, max_id FROM leaf_alloc FOR UPDATE',
  );
  const raised = await client.query(
    // Every tag up by the skip from its floor: a row put back lower by hand was granted from its
    // frond_high_water, and raised from max_id it could land below ranges served after the backup
    // (300 IDs twice after a restore, on a row set lower before the dump). A tag within the skip of
    // 2^63 - 1 is raised to it, and so is used up, not overflowed.
    `UPDATE leaf_alloc SET max_id = CASE WHEN ${FENCE_FLOOR} > ${MAX_SEGMENT_ID} - $1::bigint THEN ${MAX_SEGMENT_ID} ELSE ${FENCE_FLOOR} + $1::bigint END, update_time = CURRENT_TIMESTAMP`,
    [request.skip.toString()],
  );
  // A removed tag (a name frond_high_water keeps without a row) is raised as well: added again, it
  // goes on from there, above what the database may have lost of it. So is the new-names record,
  // made first where it is missing: a name the database lost whole comes back above it.
  if (request.skip > 0n)
    await client.query(`INSERT INTO frond_high_water ${NEW_NAMES_ROW} ON CONFLICT (biz_tag) DO NOTHING`);
  await client.query(
    `UPDATE frond_high_water h SET max_id = CASE WHEN h.max_id > ${MAX_SEGMENT_ID} - $1::bigint THEN ${MAX_SEGMENT_ID} ELSE h.max_id + $1::bigint END
      WHERE ${ROW_GONE}`,
    [request.skip.toString()],
  );
  if (request.atLeast.size > 0) {
    const atLeast = [[...request.atLeast.keys()], [...request.atLeast.values()].map(String)];
    await client.query(
      `UPDATE leaf_alloc l SET max_id = f.max_id, update_time = CURRENT_TIMESTAMP
         FROM unnest($1::text[], $2::bigint[]) AS f(biz_tag, max_id)
        WHERE l.biz_tag = f.biz_tag AND l.max_id < f.max_id`,
      atLeast,
    );
    await client.query(
      `UPDATE frond_high_water h SET max_id = f.max_id
         FROM unnest($1::text[], $2::bigint[]) AS f(biz_tag, max_id)
        WHERE h.biz_tag = f.biz_tag AND h.max_id < f.max_id AND ${ROW_GONE}`,
      atLeast,
    );
  }
  // Some of these IDs may have been issued by the database that was lost, none after the fence.
  await client.query(
    `INSERT INTO frond_gaps (tag, start_id, end_id, reason, node, created_at)
       SELECT l.biz_tag, b.max_id, l.max_id, 'fence', 'fence', ${NOW_MS}
         FROM unnest($1::text[], $2::bigint[]) AS b(biz_tag, max_id) JOIN leaf_alloc l ON l.biz_tag = b.biz_tag
        WHERE l.max_id > b.max_id
     ON CONFLICT (tag, start_id, end_id) DO NOTHING`,
    [before.rows.map((r) => r.biz_tag), before.rows.map((r) => r.max_id)],
  );
  const epoch = Math.max(Number(row.epoch), request.aboveEpoch) + 1;
  await client.query(
    'UPDATE frond_fence SET epoch = $1, identity = $2, fenced_at = CURRENT_TIMESTAMP WHERE id = 1',
    [epoch, identity],
  );
  return { epoch, identity, fenced: true, tags: raised.rowCount ?? 0 };
}

/**
 * A plain tag under a name whose opaque setting outlived its row (deleted by hand) is refused: the
 * setting stays in frond_tag_options for good, so a row put back under the name is opaque again.
 */
function opaqueSettingRemains(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_TAG_FIXED',
    `tag ${tag} was an opaque tag and its setting remains in frond_tag_options: a plain tag under that name could repeat one of its IDs; use a new name`,
  );
}
