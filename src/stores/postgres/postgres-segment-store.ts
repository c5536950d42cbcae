import type pg from 'pg';
import { describeError, FrondError, isFrondError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { type Allocation, MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import {
  type NewTag,
  type OpaqueSetting,
  opaqueNameUsed,
  type TagRow,
  type TagStore,
} from '../../core/tag-admin.js';
import { kindOf } from '../../core/tag-kind.js';
import { describeNetworkSql, type NetworkSqlConfig } from '../../sql/network-sql.js';
import { PostgresConnections, sqlState } from '../../sql/postgres-connections.js';
import type { FencedAdvance, FenceOps, FenceOutcome, FenceRequest } from '../fencing/fence.js';
import { COLUMNS, type OptionRow, opaqueMap, optionsOf, type RawRow, toTagRow } from '../sql/leaf-rows.js';
import type { TableCheck } from '../store-backend.js';
import { TableCheckOnce } from './table-check.js';

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
export const POSTGRES_FROND_DDL = [
  `CREATE TABLE IF NOT EXISTS frond_fence (
  id        SMALLINT     NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch     BIGINT       NOT NULL,
  identity  VARCHAR(128) NOT NULL,
  fenced_at TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP
)`,
  `CREATE TABLE IF NOT EXISTS frond_high_water (
  biz_tag VARCHAR(128) NOT NULL PRIMARY KEY,
  max_id  BIGINT       NOT NULL
)`,
  `CREATE TABLE IF NOT EXISTS frond_tag_options (
  biz_tag       VARCHAR(128) NOT NULL PRIMARY KEY,
  opaque_domain VARCHAR(16)  NOT NULL,
  key_check     VARCHAR(32)  NOT NULL
)`,
];

/**
 * The database a statement runs on: the system identifier (a replica shares it) and the timeline
 * of the current WAL position, which a promotion changes. On a replica it fails (recovery in
 * progress), as a write would.
 */
const IDENTITY_SQL = `(SELECT system_identifier::text FROM pg_control_system()) || '/' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)`;

/**
 * Every advance is one statement, so one transaction and one snapshot (READ COMMITTED takes one per
 * statement): the row of the tag advances from at least the highest max_id frond recorded for it
 * (a leaf_alloc restored to an older state, or a row deleted and put back lower by hand, goes on
 * above it), the new max_id is recorded, and the tag's kind is read from frond_tag_options. A row
 * of frond_tag_options is inserted only in the transaction that inserts its leaf_alloc row and is
 * never changed, so the row this statement advances was inserted by a transaction its snapshot
 * sees, and so is that row's setting: the kind read is the kind of the row granted.
 *
 * Fenced (what a node serves from): the fence row is locked first (KEY SHARE: only a fence waits
 * for it) and compared with this database; the row advances only if they match. Unfenced (tests,
 * tools) the fence is not read at all: the statement then locks only the tag's rows, and no order
 * of locks can deadlock with a fence.
 *
 * The bound is part of the UPDATE: a range past 2^63 - 1 changes nothing (PostgreSQL would fail the
 * statement with "bigint out of range", which says less). `$1` is the tag, `$2` the step when one is
 * given: the only values in the statement, both parameters.
 */
const ADVANCE = (fenced: boolean, byStep: boolean) => {
  const by = byStep ? '$2::bigint' : 'step';
  // The floor a restored leaf_alloc goes on from: its own max_id, or frond's record when higher.
  const floor =
    'GREATEST(max_id, COALESCE((SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = $1), max_id))';
  const fence = fenced
    ? `fence AS (
  SELECT epoch, identity, identity = ${IDENTITY_SQL} AS current FROM frond_fence WHERE id = 1 FOR KEY SHARE
), `
    : '';
  return {
    // Named statements are parsed once per connection; a new text needs a new name.
    name: `frond_advance${fenced ? '_fenced' : ''}${byStep ? '_by' : ''}_v3`,
    text: `WITH ${fence}advanced AS (
  UPDATE leaf_alloc
     SET max_id = ${floor} + ${by},
         update_time = CURRENT_TIMESTAMP
   WHERE biz_tag = $1${fenced ? ' AND (SELECT current FROM fence)' : ''} AND ${floor} <= ${MAX_SEGMENT_ID} - ${by}
  RETURNING max_id, step
), recorded AS (
  INSERT INTO frond_high_water (biz_tag, max_id) SELECT $1, max_id FROM advanced
  ON CONFLICT (biz_tag) DO UPDATE SET max_id = GREATEST(frond_high_water.max_id, EXCLUDED.max_id)
)
SELECT ${fenced ? `f.epoch, ${IDENTITY_SQL} AS identity, f.current` : 'NULL::bigint AS epoch, NULL::text AS identity, NULL::boolean AS current'},
       a.max_id, a.step, o.opaque_domain, o.key_check,
       GREATEST(l.max_id, COALESCE(h.max_id, l.max_id)) AS floor, l.step AS table_step
  FROM (SELECT 1) one
  ${fenced ? 'LEFT JOIN fence f ON true ' : ''}LEFT JOIN advanced a ON true
  LEFT JOIN leaf_alloc l ON l.biz_tag = $1 LEFT JOIN frond_high_water h ON h.biz_tag = $1
  LEFT JOIN frond_tag_options o ON o.biz_tag = $1`,
  };
};

/** What an advance statement returns: one row, whatever happened. */
interface AdvanceRow {
  epoch: string | null;
  identity: string | null;
  current: boolean | null;
  max_id: string | null;
  step: number | null;
  opaque_domain: string | null;
  key_check: string | null;
  /** The row's floor in the statement's snapshot (null without a row): for the refusal's message. */
  floor: string | null;
  table_step: number | null;
}

/**
 * `leaf_alloc` in PostgreSQL, shared by any number of nodes. An allocation is one statement
 * (`ADVANCE`: the UPDATE … RETURNING, the high-water record and the kind): its own transaction,
 * holding the row lock from the update to the commit, as Leaf's UPDATE-then-SELECT transaction
 * does, in one round trip instead of four. The pool
 * reconnects by itself; a connection that failed or timed out is discarded, never reused.
 */
export class PostgresSegmentStore implements TagStore, FenceOps {
  readonly description: string;
  private readonly connections: PostgresConnections;
  /**
   * The first query of a store checks the tables, once; a failed check is tried again next time,
   * and so is one whose tables were dropped since (`withTables`).
   */
  private readonly tables = new TableCheckOnce(() => this.checkTable());

  constructor(config: NetworkSqlConfig, options: { logger?: Logger | undefined } = {}) {
    this.description = describeNetworkSql('postgres', config);
    this.connections = new PostgresConnections(config, {
      description: this.description,
      logger: options.logger,
    });
  }

  /** The same rules as a fenced advance (floor, record, kind), without the fence. */
  async advance(tag: string, step?: number): Promise<Allocation | undefined> {
    const row = await this.runAdvance(false, tag, step);
    return row === undefined ? undefined : allocationOf(row, step);
  }

  async advanceFenced(tag: string, step?: number): Promise<FencedAdvance | undefined> {
    const row = await this.runAdvance(true, tag, step);
    if (row === undefined) return undefined;
    const epoch = row.epoch === null ? 0 : Number(row.epoch);
    const identity = row.identity as string;
    if (row.current !== true) return { kind: 'unfenced', epoch, identity };
    return { kind: 'granted', allocation: allocationOf(row, step), epoch, identity };
  }

  /**
   * One advance statement. Undefined: the tag has no row. ID_RANGE_EXHAUSTED: its next range would
   * pass 2^63 - 1 (from the snapshot's floor). Otherwise the row, granted or (fenced) not.
   */
  private async runAdvance(
    fenced: boolean,
    tag: string,
    step: number | undefined,
  ): Promise<AdvanceRow | undefined> {
    const statement = ADVANCE(fenced, step !== undefined);
    // On a client of its own: a commit whose wait for a synchronous standby was cancelled fails it.
    const result = await this.onClient((client) =>
      client.query<AdvanceRow>({ ...statement, values: step === undefined ? [tag] : [tag, step] }),
    );
    const row = result.rows[0];
    if (row === undefined) throw new Error('the advance returned no row');
    if (fenced && row.current !== true) return row;
    if (row.max_id === null || row.step === null) {
      // Nothing reserved: no row, or its next range would pass 2^63 - 1.
      if (row.floor === null || row.table_step === null) return undefined;
      const used = step ?? row.table_step;
      if (BigInt(row.floor) > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, row.floor, used);
      return undefined;
    }
    return row;
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    // A failed fence leaves nothing behind; if the connection broke, the server rolls back.
    return this.withTables(() => this.connections.transaction((client) => this.fenceIn(client, request)));
  }

  private async fenceIn(client: pg.PoolClient, request: FenceRequest): Promise<FenceOutcome> {
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
    const raised = await client.query(
      // A tag within the skip of 2^63 - 1 is raised to it, and so is used up, not overflowed.
      `UPDATE leaf_alloc SET max_id = CASE WHEN max_id > ${MAX_SEGMENT_ID} - $1::bigint THEN ${MAX_SEGMENT_ID} ELSE max_id + $1::bigint END, update_time = CURRENT_TIMESTAMP`,
      [request.skip.toString()],
    );
    if (request.atLeast.size > 0) {
      await client.query(
        `UPDATE leaf_alloc l SET max_id = f.max_id, update_time = CURRENT_TIMESTAMP
           FROM unnest($1::text[], $2::bigint[]) AS f(biz_tag, max_id)
          WHERE l.biz_tag = f.biz_tag AND l.max_id < f.max_id`,
        [[...request.atLeast.keys()], [...request.atLeast.values()].map(String)],
      );
    }
    const epoch = Math.max(Number(row.epoch), request.aboveEpoch) + 1;
    await client.query(
      'UPDATE frond_fence SET epoch = $1, identity = $2, fenced_at = CURRENT_TIMESTAMP WHERE id = 1',
      [epoch, identity],
    );
    return { epoch, identity, fenced: true, tags: raised.rowCount ?? 0 };
  }

  async listTags(): Promise<string[]> {
    const result = await this.query<{ biz_tag: string }>({
      text: 'SELECT biz_tag FROM leaf_alloc ORDER BY biz_tag',
    });
    return result.rows.map((row) => row.biz_tag);
  }

  async getTag(tag: string): Promise<TagRow | undefined> {
    const result = await this.query<RawRow>({
      text: `SELECT ${COLUMNS} FROM leaf_alloc WHERE biz_tag = $1`,
      values: [tag],
    });
    const row = result.rows[0];
    return row && toTagRow(row);
  }

  async listRows(): Promise<TagRow[]> {
    const result = await this.query<RawRow>({ text: `SELECT ${COLUMNS} FROM leaf_alloc ORDER BY biz_tag` });
    return result.rows.map(toTagRow);
  }

  /**
   * One statement: nothing is inserted for a name whose opaque setting is still in
   * frond_tag_options without a row (the row was deleted by hand): its opaque IDs are spread over
   * the whole domain, and a plain tag under that name could repeat one of them. A row that is there
   * fails the insert: TAG_EXISTS.
   */
  async addTag(tag: NewTag): Promise<void> {
    let result: { rowCount: number | null };
    try {
      result = await this.query({
        text: `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
  SELECT $1::varchar, $2::bigint, $3::integer, $4::varchar
   WHERE NOT EXISTS (SELECT 1 FROM frond_tag_options WHERE biz_tag = $1::varchar)
      OR EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar)`,
        values: [tag.tag, tag.start.toString(), tag.step, tag.description ?? null],
      });
    } catch (error) {
      if (sqlState((error as Error).cause) === '23505') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
    if (result.rowCount === 0) throw opaqueSettingRemains(tag.tag);
  }

  async tagOptions(tag: string): Promise<{ opaque: OpaqueSetting | null } | undefined> {
    const result = await this.query<OptionRow>({
      text: 'SELECT o.opaque_domain, o.key_check FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag WHERE l.biz_tag = $1',
      values: [tag],
    });
    return optionsOf(result.rows[0]);
  }

  async listOpaque(): Promise<Map<string, OpaqueSetting>> {
    const result = await this.query<OptionRow>({
      text: 'SELECT biz_tag, opaque_domain, key_check FROM frond_tag_options',
    });
    return opaqueMap(result.rows);
  }

  /** One statement, so one transaction: the setting and the row exist together or not at all. */
  async addOpaqueTag(tag: NewTag, opaque: OpaqueSetting): Promise<void> {
    let result: { rowCount: number | null };
    try {
      // Nothing is inserted for a name frond_high_water knows and leaf_alloc no longer holds: it
      // served plain IDs (opaqueNameUsed). A row that is there fails the insert: TAG_EXISTS.
      result = await this.query({
        text: `WITH o AS (INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check)
    SELECT $1::varchar, $5, $6 WHERE NOT EXISTS (SELECT 1 FROM frond_high_water WHERE biz_tag = $1::varchar)
       OR EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = $1::varchar) RETURNING biz_tag)
  INSERT INTO leaf_alloc (biz_tag, max_id, step, description) SELECT biz_tag, $2::bigint, $3::integer, $4::varchar FROM o`,
        values: [
          tag.tag,
          tag.start.toString(),
          tag.step,
          tag.description ?? null,
          opaque.domain,
          opaque.keyCheck,
        ],
      });
    } catch (error) {
      if (sqlState((error as Error).cause) === '23505') {
        throw new FrondError('TAG_EXISTS', `tag ${tag.tag} already exists`);
      }
      throw error;
    }
    if (result.rowCount === 0) throw opaqueNameUsed(tag.tag);
  }

  async setStep(tag: string, step: number): Promise<void> {
    const result = await this.query({
      text: 'UPDATE leaf_alloc SET step = $1, update_time = CURRENT_TIMESTAMP WHERE biz_tag = $2',
      values: [step, tag],
    });
    if (result.rowCount === 0) throw new FrondError('TAG_NOT_FOUND', `tag ${tag} has no row in leaf_alloc`);
  }

  /** Creates leaf_alloc if it is missing (what `frond db init` does); never alters one. */
  init(): Promise<TableCheck> {
    return this.guard(() => this.checkTable());
  }

  close(): Promise<void> {
    return this.connections.end();
  }

  /** `operation` on one pooled connection (`PostgresConnections.onClient`), after the table check. */
  private onClient<T>(operation: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.withTables(() => this.connections.onClient(operation));
  }

  /** One statement on a pooled connection; a failed connection is closed, not returned to the pool. */
  private query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    return this.withTables(() => this.connections.query<R>(config));
  }

  /**
   * `operation` after the table check. A statement that failed because a table is missing (42P01:
   * dropped while the node runs) did nothing, its transaction rolled back: the check is forgotten
   * and run again (it creates frond's tables, and leaf_alloc, as at start), and the operation is
   * tried once more. Without this the check, done once, would never run again and every load would
   * fail (503) until the node restarted.
   */
  private withTables<T>(operation: () => Promise<T>): Promise<T> {
    return this.guard(async () => {
      await this.tables.run();
      try {
        return await operation();
      } catch (error) {
        if (sqlState(error) !== UNDEFINED_TABLE) throw error;
        this.tables.forget();
      }
      await this.tables.run();
      return operation();
    });
  }

  /** Driver errors become STORE_UNAVAILABLE, named after the store; the driver's error is the cause. */
  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (isFrondError(error)) throw error;
      throw new FrondError('STORE_UNAVAILABLE', `${this.description}: ${describeError(error)}`, {
        cause: error,
      });
    }
  }

  /** leaf_alloc (created if missing, never altered), then frond's own tables. */
  private async checkTable(): Promise<TableCheck> {
    const found = await this.checkLeafTable();
    await this.checkFrondTables();
    return found;
  }

  private async checkLeafTable(): Promise<TableCheck> {
    const probe = `SELECT ${COLUMNS} FROM leaf_alloc WHERE false`;
    try {
      await this.connections.query(probe);
      return 'exists';
    } catch (error) {
      if (sqlState(error) === '42703') throw missingColumn(this.description, error);
      if (sqlState(error) !== UNDEFINED_TABLE) throw error;
    }
    try {
      await this.connections.query(POSTGRES_DDL);
    } catch (error) {
      // Two nodes creating the table at once: one of them loses with a duplicate in pg_type.
      if (sqlState(error) !== '23505') throw error;
    }
    await this.connections.query(probe);
    return 'created';
  }

  /** frond's own tables, created if missing (IF NOT EXISTS; a race of two nodes is harmless). */
  private async checkFrondTables(): Promise<void> {
    for (const ddl of POSTGRES_FROND_DDL) {
      try {
        await this.connections.query(ddl);
      } catch (error) {
        if (sqlState(error) !== '23505') throw error;
      }
    }
  }
}

/** PostgreSQL's undefined_table. */
const UNDEFINED_TABLE = '42P01';

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

/** A granted row as an Allocation: served under the kind read in its statement. */
function allocationOf(row: AdvanceRow, step: number | undefined): Allocation {
  return {
    maxId: BigInt(row.max_id as string),
    step: step ?? (row.step as number),
    tableStep: row.step as number,
    kind: kindOf(row.opaque_domain, row.key_check),
  };
}

function missingColumn(store: string, error: unknown): FrondError {
  return new FrondError(
    'INVALID_CONFIG',
    `${store}: leaf_alloc lacks a column frond needs (${describeError(error)}); frond never alters a table, compare it with 'frond db init --print'`,
  );
}
