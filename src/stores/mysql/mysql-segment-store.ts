import type mysql from 'mysql2/promise';
import { FrondError } from '../../core/errors.js';
import { parseCounterName } from '../../core/id-format.js';
import type { Gap, HandBackResult } from '../../core/id-gaps.js';
import type { Logger } from '../../core/logger.js';
import { MAX_SEGMENT_ID, rangeExhausted } from '../../core/segment-store.js';
import { type NewTag, type OpaqueSetting, opaqueNameUsed } from '../../core/tag-catalogue.js';
import { kindOf } from '../../core/tag-kind.js';
import { errorCode, INT, MysqlConnections, type Sql } from '../../sql/mysql-connections.js';
import { describeNetworkSql, type NetworkSqlConfig, type SqlValue } from '../../sql/network-sql.js';
import { formatRowNeeded, formatRowRemains } from '../format-rules.js';
import { gapsOf, lowestHeld, planHandBack } from '../hand-back-plan.js';
import { type ExactText, NEW_NAMES_ROW, ownRecordOf, recordOf, startsAfterFence } from '../new-names.js';
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

/** Leaf's own DDL (its README), only with IF NOT EXISTS: a Leaf table and frond's are the same. */
export const MYSQL_DDL = `CREATE TABLE IF NOT EXISTS \`leaf_alloc\` (
  \`biz_tag\` varchar(128) NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256) DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`;

/**
 * frond's own tables, beside Leaf's (which stays as it is): the fence row, one per database, and
 * the highest max_id granted per tag, written in the same transaction as every fenced advance
 * (docs/databases.md, "Failover, restore and split brain").
 */
export const MYSQL_FROND_DDL: Readonly<Record<FrondTable, string>> = {
  frond_fence: `CREATE TABLE IF NOT EXISTS \`frond_fence\` (
  \`id\` tinyint NOT NULL,
  \`epoch\` bigint NOT NULL,
  \`identity\` varchar(128) NOT NULL,
  \`fenced_at\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (\`id\`)
) ENGINE=InnoDB`,
  frond_high_water: `CREATE TABLE IF NOT EXISTS \`frond_high_water\` (
  \`biz_tag\` varchar(128) NOT NULL,
  \`max_id\` bigint NOT NULL,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
  frond_tag_options: `CREATE TABLE IF NOT EXISTS \`frond_tag_options\` (
  \`biz_tag\` varchar(128) NOT NULL,
  \`opaque_domain\` varchar(16) NOT NULL,
  \`key_check\` varchar(32) NOT NULL,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
  frond_tag_formats: `CREATE TABLE IF NOT EXISTS \`frond_tag_formats\` (
  \`biz_tag\` varchar(128) NOT NULL,
  \`id_format\` varchar(255) NOT NULL,
  \`time_zone\` varchar(64) NOT NULL,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB`,
  // The IDs given up for good, [start_id, end_id) of a tag; created_at in ms by the server's clock.
  // The tag is binary: a gap belongs to the tag spelled exactly so, as every grant is (exactTag),
  // never to one that differs in case. The key is what a retry inserts again and the order
  // listGaps pages in.
  frond_gaps: `CREATE TABLE IF NOT EXISTS \`frond_gaps\` (
  \`tag\` varchar(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  \`start_id\` bigint NOT NULL,
  \`end_id\` bigint NOT NULL,
  \`reason\` varchar(32) NOT NULL,
  \`node\` varchar(255) NOT NULL,
  \`created_at\` bigint NOT NULL,
  PRIMARY KEY (\`tag\`, \`start_id\`, \`end_id\`)
) ENGINE=InnoDB`,
};

/** ms since the Unix epoch by the server's clock (UNIX_TIMESTAMP reads NOW in the session's zone). */
const NOW_MS = 'SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED) AS ms';

/** Rows per INSERT of gaps: a crash report of thousands of tags in statements of bounded size. */
const GAPS_PER_INSERT = 500;

/**
 * Gaps inserted. Not INSERT IGNORE, which also turns a value too long for its column into a warning
 * and writes it cut, nor ON DUPLICATE KEY UPDATE, which needs UPDATE on frond_gaps: a duplicate
 * fails the statement alone (InnoDB rolls back the statement, not the transaction), and
 * insertGapsIn then inserts the rows one by one, leaving those already recorded.
 */
const insertGaps = (rows: number) =>
  `INSERT INTO frond_gaps (tag, start_id, end_id, reason, node, created_at) VALUES ${Array<string>(rows)
    .fill(`(?, ${INT}, ${INT}, ?, ?, ${INT})`)
    .join(', ')}`;

/**
 * `column` holds the tag `?` spelled exactly (two parameters, both the tag). MySQL's and MariaDB's
 * default collations match `Orders`, `ORDERS` and `orders ` with a row `orders`: the first test finds
 * the row by its key, the second keeps it only if the bytes are the same (issue 16, item 2), so a
 * case variant advances no row and is TAG_NOT_FOUND. Converted to utf8mb4 first, so a latin1 or
 * utf8mb3 column compares as the UTF-8 the tag is sent in.
 */
const exactTag = (column: string) =>
  `${column} = ? AND CAST(CONVERT(${column} USING utf8mb4) AS BINARY) = CAST(? AS BINARY)`;

/**
 * A column and a literal compared byte for byte: the Unicode collations ignore U+0001 and case, so
 * the new-names record compared equal to a tag named `New Names` (new-names.ts).
 */
const exactText: ExactText = (column, literal) =>
  `${column} = ${literal} AND CAST(CONVERT(${column} USING utf8mb4) AS BINARY) = CAST(CONVERT(${literal} USING utf8mb4) AS BINARY)`;

/** Every tag up by the skip from its floor (fence-sql.ts). */
const FENCE_FLOOR = fenceFloor(exactText);

/** An advance that InnoDB picked as a deadlock victim is tried this often in all. */
const DEADLOCK_ATTEMPTS = 10;

/** The server a statement runs on: a replica promoted in a failover has its own server_id. */
const IDENTITY_SQL = 'CAST(@@server_id AS CHAR)';

/**
 * The fence row, read under a shared lock that only a fence waits for (FOR UPDATE), held until
 * the advance commits; and the server it is read on, compared with the row's identity in the
 * client. Nothing in the statements that write depends on the server then, so a replica applying
 * them from a statement-based binlog computes what the primary did.
 */
const FENCE_ROW = `SELECT epoch, identity, ${IDENTITY_SQL} AS server FROM frond_fence WHERE id = 1 LOCK IN SHARE MODE`;
const SERVER_IDENTITY = `SELECT ${IDENTITY_SQL} AS identity`;

/**
 * Leaf's allocation, and frond's floor: a row goes on from its own max_id, or from the highest
 * max_id frond recorded for the tag when that is higher (a leaf_alloc restored from a backup, or a
 * row deleted and inserted again lower by hand). `by` is the row's step or a step parameter; the
 * parameters are the tag (floor), the step, the tag twice (exactTag), the tag (floor), the step.
 */
const advanceSql = (by: string) => {
  const floor = `GREATEST(max_id, ${recordOf('?', 'max_id', exactText)})`;
  return `UPDATE leaf_alloc SET max_id = ${floor} + ${by} WHERE ${exactTag('biz_tag')} AND ${floor} <= ${MAX_SEGMENT_ID} - ${by}`;
};
const ADVANCE_BY_TABLE_STEP = advanceSql('step');
const ADVANCE_BY = advanceSql(INT);

/**
 * The tag's row locked first (the tag twice). The UPDATE's floor reads frond_high_water, which in
 * REPEATABLE READ takes a shared lock on its row, and the record after it needs that row
 * exclusively: two advances of one tag each held the shared lock and waited for the other's
 * (60 concurrent advances of one tag deadlocked past 10 retries). With the tag's row locked first,
 * advances of one tag queue on it and never hold the high-water row side by side.
 */
const LOCK_ROW = `SELECT 1 FROM leaf_alloc WHERE ${exactTag('biz_tag')} FOR UPDATE`;

/** The new max_id, recorded in the advance's transaction (the tag twice). */
const RECORD_HIGH_WATER = `INSERT INTO frond_high_water (biz_tag, max_id) SELECT biz_tag, max_id FROM leaf_alloc WHERE ${exactTag('biz_tag')}
  ON DUPLICATE KEY UPDATE max_id = GREATEST(frond_high_water.max_id, VALUES(max_id))`;

/**
 * The row read back with the tag's kind and its recorded high-water, in the advance's transaction
 * (the tag three times). The options row is joined as the catalogue's `tag` joins it, by the
 * column's collation.
 */
const READ_GRANT = `SELECT l.max_id, l.step, o.opaque_domain, o.key_check, f.id_format, f.time_zone,
  (SELECT h.max_id FROM frond_high_water h WHERE h.biz_tag = ?) AS high_water
  FROM leaf_alloc l LEFT JOIN frond_tag_options o ON o.biz_tag = l.biz_tag
  LEFT JOIN frond_tag_formats f ON f.biz_tag = l.biz_tag WHERE ${exactTag('l.biz_tag')}`;

interface GrantRow extends FormatRow {
  max_id: string;
  step: number;
  opaque_domain: string | null;
  key_check: string | null;
  high_water: string | null;
}

/**
 * What a formatted add reads of its name (format-rules.ts), under the tags' lock and by the
 * columns' collation, as the joins match names (the tag five times): its row, the format kept under
 * it, whether frond_high_water knows it, whether it has an opaque setting.
 */
const NAME_STATE = `SELECT EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = ?) AS has_row,
  (SELECT id_format FROM frond_tag_formats WHERE biz_tag = ?) AS id_format,
  (SELECT time_zone FROM frond_tag_formats WHERE biz_tag = ?) AS time_zone,
  EXISTS (SELECT 1 FROM frond_high_water WHERE biz_tag = ?) AS served,
  EXISTS (SELECT 1 FROM frond_tag_options WHERE biz_tag = ?) AS opaque`;

interface NameStateRow extends FormatRow {
  has_row: number | string;
  served: number | string;
  opaque: number | string;
}

/** What the advance's transaction found, decided on once its connection is back. */
type AdvanceOutcome =
  | { kind: 'unfenced'; epoch: number; identity: string }
  | { kind: 'read'; advanced: boolean; row: GrantRow | undefined; epoch: number; identity: string };

/**
 * A tag's row: a name frond_high_water knows (a removed tag) starts at its record when the start
 * is below it (`TagCatalogue.addTag`), a name it does not know at the new-names record
 * (src/stores/new-names.ts); an opaque name never has a record of its own here (insertTag refuses
 * it). The tag, the start, the tag, the start, the step and the description.
 */
const INSERT_TAG_ROW = `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
  VALUES (?, GREATEST(${INT}, ${recordOf('?', INT, exactText)}), ${INT}, ?)`;

/**
 * A counter whose period starts after the last fence (`startsAfterFence`, new-names.ts): from its
 * own record only, which is written with the row (RECORD_HIGH_WATER), so its advances go on from
 * there too, not from the new-names record. The same parameters as INSERT_TAG_ROW.
 */
const INSERT_COUNTER_ROW = `INSERT INTO leaf_alloc (biz_tag, max_id, step, description)
  VALUES (?, GREATEST(${INT}, ${ownRecordOf('?', INT)}), ${INT}, ?)`;

/**
 * The last fence, in ms by the database's clock (no row: none). UNIX_TIMESTAMP of a TIMESTAMP
 * column is its stored instant, whatever the session's time zone.
 */
const FENCED_AT = 'SELECT UNIX_TIMESTAMP(fenced_at) * 1000 AS ms FROM frond_fence WHERE id = 1';

/**
 * `leaf_alloc` in MySQL or MariaDB (InnoDB), shared by any number of nodes and by Leaf's own
 * servers: the row lock the UPDATE holds until COMMIT keeps two allocations apart (the rules around
 * the statements are SqlStore's). Every operation runs on a pooled connection under a deadline
 * (`MysqlConnections`); every value goes to the server as a parameter of a server-side prepared
 * statement, never in SQL text.
 */
export class MysqlSegmentStore extends SqlStore {
  constructor(config: NetworkSqlConfig, options: { logger?: Logger | undefined } & SqlStoreOptions = {}) {
    super(new MysqlDialect(config, options), options);
  }
}

/**
 * MySQL's refusals for want of a privilege: on a table (1142), a column (1143), the database (1044),
 * a global privilege (1227).
 */
const DENIED = new Set([
  'ER_TABLEACCESS_DENIED_ERROR',
  'ER_COLUMNACCESS_DENIED_ERROR',
  'ER_DBACCESS_DENIED_ERROR',
  'ER_SPECIFIC_ACCESS_DENIED_ERROR',
]);

/**
 * The columns without a default of each table and a value of each one's type, for the statements
 * that probe a privilege: an INSERT naming fewer fails in strict mode even when it inserts no row.
 */
const PROBE_ROW: Record<StoreTable, { columns: string; values: string }> = {
  leaf_alloc: { columns: 'biz_tag, max_id, step', values: "'', 0, 0" },
  frond_fence: { columns: 'id, epoch, identity', values: "1, 0, ''" },
  frond_high_water: { columns: 'biz_tag, max_id', values: "'', 0" },
  frond_tag_options: { columns: 'biz_tag, opaque_domain, key_check', values: "'', '', ''" },
  frond_tag_formats: { columns: 'biz_tag, id_format, time_zone', values: "'', '', ''" },
  frond_gaps: { columns: 'tag, start_id, end_id, reason, node, created_at', values: "'', 0, 0, '', '', 0" },
};

/**
 * A statement that needs `privilege` on `table` and touches no row (`WHERE 1 = 0`: MySQL checks
 * the privileges of a statement before it finds that nothing matches, and reads no table for an
 * impossible WHERE). MySQL has no function that answers whether an account holds a privilege
 * through its roles and wildcards as a statement sees it, so the statement itself is asked.
 */
function probeSql(table: StoreTable, privilege: Privilege): string {
  const { columns, values } = PROBE_ROW[table];
  const first = columns.split(',')[0] as string;
  const value = values.split(',')[0] as string;
  switch (privilege) {
    case 'SELECT':
      return `SELECT 1 FROM ${table} WHERE 1 = 0`;
    case 'INSERT':
      return `INSERT INTO ${table} (${columns}) SELECT ${values} FROM DUAL WHERE 1 = 0`;
    case 'UPDATE':
      return `UPDATE ${table} SET ${first} = ${value} WHERE 1 = 0`;
    case 'DELETE':
      return `DELETE FROM ${table} WHERE 1 = 0`;
  }
}

class MysqlDialect implements SqlDialect {
  readonly description: string;
  readonly leafDdl = MYSQL_DDL;
  readonly frondDdl = MYSQL_FROND_DDL;
  readonly noRow = '1 = 0';
  readonly int = INT;
  // ON UPDATE CURRENT_TIMESTAMP sets update_time when a row changes.
  readonly touch = '';
  private readonly connections: MysqlConnections;

  constructor(config: NetworkSqlConfig, options: { logger?: Logger | undefined }) {
    this.description = describeNetworkSql('mysql', config);
    this.connections = new MysqlConnections(config, {
      description: this.description,
      logger: options.logger,
    });
  }

  tagIs(column: string): { sql: string; params: number } {
    return { sql: exactTag(column), params: 2 };
  }

  // U+001F, in every counter's name and in no tag's (src/core/tag.ts), found byte for byte: the
  // Unicode collations ignore control characters.
  notCounter(column: string): string {
    return `INSTR(CAST(CONVERT(${column} USING utf8mb4) AS BINARY), X'1F') = 0`;
  }

  async query(text: string, values?: readonly SqlValue[]): Promise<SqlResult> {
    const [result] = await this.connections.run(text, values);
    // affectedRows counts matched rows (the driver sets CLIENT_FOUND_ROWS).
    return Array.isArray(result)
      ? { rows: result, count: result.length }
      : { rows: [], count: (result as mysql.ResultSetHeader).affectedRows };
  }

  /**
   * One advance, in one transaction on one connection under one deadline: the fence row is read
   * under a shared lock and compared with this server, and nothing is written unless they match;
   * the row advances from its floor (frond_high_water); the new max_id is recorded in
   * frond_high_water; and the row is read back with the tag's kind (frond_tag_options).
   *
   * Each statement is a round trip of its own (START TRANSACTION, fence row, row lock, UPDATE,
   * INSERT, SELECT, COMMIT: seven; the row lock keeps advances of one tag from deadlocking, see
   * LOCK_ROW), where the advance used to be one batch; a batch would need values in its SQL text.
   * So the latency to the server counts six times: measured with the server's answers 10 ms away,
   * 66 ms an advance; 50 ms away, 313 ms, where a node's batch loads took 57 to 79 ms. On the same
   * machine it takes about 1.5 ms, as the batch did (the commit's log flush dominates). If any
   * statement fails, the connection is destroyed, which rolls the transaction back: nothing was
   * reserved.
   */
  async advance(tag: string, step: number | undefined): Promise<FencedAdvance | undefined> {
    const outcome = await this.withDeadlockRetry(() =>
      this.connections.transaction('advance', async (sql): Promise<AdvanceOutcome> => {
        const [fenceRows] = await sql(FENCE_ROW);
        const fence = (fenceRows as { epoch: string; identity: string; server: string }[])[0];
        if (fence === undefined) {
          // A database frond never fenced, or whose frond_fence was created again.
          const [server] = await sql(SERVER_IDENTITY);
          return { kind: 'unfenced', epoch: 0, identity: serverIdentity(server) };
        }
        const epoch = Number(fence.epoch);
        const identity = fence.server;
        if (fence.identity !== fence.server) return { kind: 'unfenced', epoch, identity };
        await sql(LOCK_ROW, [tag, tag]);
        const [update] =
          step === undefined
            ? await sql(ADVANCE_BY_TABLE_STEP, [tag, tag, tag, tag])
            : await sql(ADVANCE_BY, [tag, String(step), tag, tag, tag, String(step)]);
        // affectedRows counts matched rows (the driver sets CLIENT_FOUND_ROWS). No match, nothing
        // reserved: a row whose next range would pass 2^63 - 1 (Leaf's UPDATE would fail on it
        // with "BIGINT value is out of range"), or a row inserted after the UPDATE, not advanced.
        const advanced = (update as mysql.ResultSetHeader).affectedRows > 0;
        if (advanced) await sql(RECORD_HIGH_WATER, [tag, tag]);
        const [rows] = await sql(READ_GRANT, [tag, tag, tag]);
        return { kind: 'read', advanced, row: (rows as GrantRow[])[0], epoch, identity };
      }),
    );
    if (outcome.kind === 'unfenced') return outcome;
    const { row, epoch, identity } = outcome;
    if (row === undefined) return undefined;
    const tableStep = Number(row.step);
    const used = step ?? tableStep;
    if (!outcome.advanced) {
      const floor = maxOf(BigInt(row.max_id), row.high_water === null ? undefined : BigInt(row.high_water));
      if (floor > MAX_SEGMENT_ID - BigInt(used)) throw rangeExhausted(tag, floor, used);
      return undefined;
    }
    return {
      kind: 'granted',
      allocation: {
        maxId: BigInt(row.max_id),
        step: used,
        tableStep,
        kind: kindOf(row.opaque_domain, row.key_check, row.id_format, row.time_zone),
      },
      epoch,
      identity,
    };
  }

  /**
   * InnoDB answers a deadlock by rolling the whole transaction back, so nothing was reserved and
   * the load may be tried again at once (first loads of several tags insert their
   * frond_high_water rows side by side, and the gap locks of REPEATABLE READ can cross).
   */
  private async withDeadlockRetry<T>(operation: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await operation();
      } catch (error) {
        if (
          attempt >= DEADLOCK_ATTEMPTS ||
          (errorCode(error) !== 'ER_LOCK_DEADLOCK' &&
            errorCode((error as Error).cause) !== 'ER_LOCK_DEADLOCK')
        )
          throw error;
        // Apart at random, so the two transactions that crossed do not cross again: up to 5, 10,
        // 15 … ms (0.2 s in all at most), well inside a load's deadline.
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
      }
    }
  }

  fence(request: FenceRequest): Promise<FenceOutcome> {
    // The first fence of a database inserts its row while other nodes' advances hold share locks
    // on the gap where it goes: InnoDB may pick either as a deadlock victim and roll it back whole,
    // so it is simply run again.
    return this.withDeadlockRetry(() =>
      // Under the tags' lock (TAGS_LOCK), as adds and removals: an add that committed while the
      // fence ran would be missed by its UPDATE (seen on PostgreSQL; here for the same reason).
      this.connections.exclusiveTransaction('fence', TAGS_LOCK, async (sql) => {
        const [identityRows] = await sql(SERVER_IDENTITY);
        const identity = serverIdentity(identityRows);
        const lock = async () =>
          (
            (await sql('SELECT epoch, identity FROM frond_fence WHERE id = 1 FOR UPDATE'))[0] as {
              epoch: string;
              identity: string;
            }[]
          )[0];
        let row = await lock();
        if (row === undefined) {
          // A database frond never fenced: it records this one and raises nothing.
          await sql(`INSERT IGNORE INTO frond_fence (id, epoch, identity) VALUES (1, ${INT}, ?)`, [
            String(request.aboveEpoch + 1),
            identity,
          ]);
          row = (await lock()) as { epoch: string; identity: string };
          return { epoch: Number(row.epoch), identity: row.identity, fenced: false, tags: 0 };
        }
        if (row.identity === identity && Number(row.epoch) > request.observedEpoch) {
          return { epoch: Number(row.epoch), identity, fenced: false, tags: 0 };
        }
        // Every tag up by the skip from its floor: a row put back lower by hand was granted from
        // its frond_high_water, and raised from max_id it could land below ranges served after
        // the backup (300 IDs twice after a restore, on a row set lower before the dump). A tag
        // within the skip of 2^63 - 1 is raised to it, and so is used up, not overflowed.
        const skip = request.skip.toString();
        // Every row locked and read as the fence finds it: what the fence skipped of each tag,
        // [max_id before, max_id after), is recorded as a gap below.
        const [before] = await sql('SELECT biz_tag, max_id FROM leaf_alloc FOR UPDATE');
        const [raised] = await sql(
          `UPDATE leaf_alloc SET max_id = CASE WHEN ${FENCE_FLOOR} > ${MAX_SEGMENT_ID} - ${INT} THEN ${MAX_SEGMENT_ID} ELSE ${FENCE_FLOOR} + ${INT} END`,
          [skip, skip],
        );
        // A removed tag (a name frond_high_water keeps without a row) is raised as well: added
        // again, it goes on from there, above what the database may have lost of it. So is the
        // new-names record, made first where it is missing: a name the database lost whole comes
        // back above it.
        if (request.skip > 0n) await sql(`INSERT IGNORE INTO frond_high_water ${NEW_NAMES_ROW}`);
        await sql(
          `UPDATE frond_high_water h SET h.max_id = CASE WHEN h.max_id > ${MAX_SEGMENT_ID} - ${INT} THEN ${MAX_SEGMENT_ID} ELSE h.max_id + ${INT} END WHERE ${ROW_GONE}`,
          [skip, skip],
        );
        for (const [tag, maxId] of request.atLeast) {
          const floor = maxId.toString();
          await sql(`UPDATE leaf_alloc SET max_id = ${INT} WHERE biz_tag = ? AND max_id < ${INT}`, [
            floor,
            tag,
            floor,
          ]);
          await sql(
            `UPDATE frond_high_water h SET h.max_id = ${INT} WHERE h.biz_tag = ? AND h.max_id < ${INT} AND ${ROW_GONE}`,
            [floor, tag, floor],
          );
        }
        // Some of these IDs may have been issued by the database that was lost, none after the fence.
        const [after] = await sql('SELECT biz_tag, max_id FROM leaf_alloc FOR UPDATE');
        const was = new Map(
          (before as { biz_tag: string; max_id: string | number }[]).map((r) => [
            r.biz_tag,
            BigInt(r.max_id),
          ]),
        );
        const [now] = await sql(NOW_MS);
        const at = Number((now as { ms: string | number }[])[0]?.ms ?? 0);
        const skipped: Gap[] = [];
        for (const r of after as { biz_tag: string; max_id: string | number }[]) {
          const start = was.get(r.biz_tag);
          const end = BigInt(r.max_id);
          if (start !== undefined && end > start)
            skipped.push({ tag: r.biz_tag, start, end, reason: 'fence', node: 'fence', at });
        }
        await insertGapsIn(sql, skipped);
        const epoch = Math.max(Number(row.epoch), request.aboveEpoch) + 1;
        await sql(
          `UPDATE frond_fence SET epoch = ${INT}, identity = ?, fenced_at = CURRENT_TIMESTAMP WHERE id = 1`,
          [String(epoch), identity],
        );
        return { epoch, identity, fenced: true, tags: (raised as mysql.ResultSetHeader).affectedRows };
      }),
    );
  }

  /**
   * One transaction, every read that decides current (REPEATABLE READ: a plain SELECT reads the
   * transaction's first snapshot, a locking one the newest row): the fence row shared (a fence
   * waits), the tag's row locked as an advance locks it (LOCK_ROW: advances of other nodes wait),
   * the record locked (it is written), then the gaps near the range by the first plain read; the
   * decision is planHandBack's. A deadlock rolls it all back and it is tried again.
   */
  handBack(request: HandBackRequest): Promise<HandBackResult> {
    const { tag } = request;
    return this.withDeadlockRetry(() =>
      this.connections.transaction('handBack', async (sql): Promise<HandBackResult> => {
        const [fenceRows] = await sql(FENCE_ROW);
        const fence = (fenceRows as { epoch: string; identity: string; server: string }[])[0];
        const [rows] = await sql(`SELECT max_id FROM leaf_alloc WHERE ${exactTag('biz_tag')} FOR UPDATE`, [
          tag,
          tag,
        ]);
        const row = (rows as { max_id: string | number }[])[0];
        const [records] = await sql('SELECT max_id FROM frond_high_water WHERE biz_tag = ? FOR UPDATE', [
          tag,
        ]);
        const recorded = (records as { max_id: string | number }[])[0];
        // A plain read, yet current: every read before it was a locking read, so this first
        // consistent read makes the transaction's snapshot now, with the row already locked. (A
        // locking read of frond_gaps would need UPDATE or DELETE on it on MySQL 8.0.22 and later.)
        const [near] = await sql(
          `SELECT start_id, end_id FROM frond_gaps WHERE tag = ? AND start_id < ${INT} AND end_id > ${INT}`,
          [tag, request.to.toString(), lowestHeld(request).toString()],
        );
        const plan = planHandBack(request, {
          maxId: row === undefined ? undefined : BigInt(row.max_id),
          recorded: recorded === undefined ? undefined : BigInt(recorded.max_id),
          fenceMatches:
            fence !== undefined &&
            fence.identity === fence.server &&
            Number(fence.epoch) === request.epoch &&
            fence.identity === request.identity,
          claimed: (near as { start_id: string | number; end_id: string | number }[]).map((gap) => ({
            start: BigInt(gap.start_id),
            end: BigInt(gap.end_id),
          })),
        });
        if (plan.returned !== undefined && !plan.alreadyReturned) {
          const from = plan.returned.from.toString();
          await sql(`UPDATE leaf_alloc SET max_id = ${INT} WHERE ${exactTag('biz_tag')}`, [from, tag, tag]);
          if (recorded !== undefined)
            await sql(`UPDATE frond_high_water SET max_id = ${INT} WHERE biz_tag = ?`, [from, tag]);
        }
        const [now] = await sql(NOW_MS);
        const gaps = gapsOf(request, plan, Number((now as { ms: string | number }[])[0]?.ms ?? Date.now()));
        await insertGapsIn(sql, gaps);
        return { tag, returned: plan.returned, gaps };
      }),
    );
  }

  recordGaps(gaps: readonly Gap[]): Promise<void> {
    const real = gaps.filter((gap) => gap.end > gap.start);
    if (real.length === 0) return Promise.resolve();
    return this.withDeadlockRetry(() =>
      this.connections.transaction('recordGaps', async (sql) => {
        const [now] = await sql(NOW_MS);
        const at = Number((now as { ms: string | number }[])[0]?.ms ?? Date.now());
        await insertGapsIn(
          sql,
          real.map((gap) => ({ ...gap, at })),
        );
      }),
    );
  }

  /**
   * A plain tag's row, in a transaction with the check that no opaque setting is left under its
   * name: a setting is never removed, so one whose leaf_alloc row was deleted by hand would be
   * joined to the new row, and the tag served as opaque. The check matches names as the join does
   * (by the column's collation), so it refuses exactly the rows the join would find a setting for;
   * a name whose row is there (the same key) is left to the insert, which answers TAG_EXISTS. A name
   * frond_high_water knows starts at its record when the start is below it (INSERT_TAG_ROW).
   *
   * An opaque tag's setting and row in one transaction: a name frond_high_water knows and
   * leaf_alloc no longer holds served plain IDs (opaqueNameUsed); a row that is there fails the
   * insert (TAG_EXISTS). Without its leaf_alloc row no advance can record the name meanwhile.
   *
   * Both, and deleteTag, hold the tags' lock (TAGS_LOCK): the checks are plain reads of a
   * snapshot, and one taken while a removal was in flight still held the row; the insert then
   * waited for the removal to commit and went through, so a name that served plain IDs came back
   * opaque, or a plain row joined a removed opaque tag's setting (both seen, in the store contract's
   * race cases).
   */
  insertTag(tag: NewTag, opaque: OpaqueSetting | undefined): Promise<void> {
    const { format } = tag;
    if (format !== undefined)
      return this.connections.exclusiveTransaction('addFormattedTag', TAGS_LOCK, async (sql) => {
        const [rows] = await sql(NAME_STATE, Array<string>(5).fill(tag.tag));
        const state = (rows as NameStateRow[])[0] as NameStateRow;
        const needed = formatRowNeeded(
          { ...tag, format },
          {
            row: Number(state.has_row) === 1,
            format: formatOf(state) ?? undefined,
            served: Number(state.served) === 1,
            opaque: Number(state.opaque) === 1,
          },
        );
        // A counter's name with an opaque setting left (by hand): as for a plain tag.
        if (Number(state.opaque) === 1 && Number(state.has_row) !== 1) throw opaqueSettingKept(tag.tag);
        // Read under the tags' lock, which fences take too: the fence row as the last fence left it.
        let own = false;
        if (tag.periodStartMs !== undefined) {
          const [fenced] = await sql(FENCED_AT);
          const ms = (fenced as { ms: number | string | null }[])[0]?.ms;
          own = startsAfterFence(tag, ms === undefined || ms === null ? undefined : Number(ms));
        }
        if (needed)
          await sql('INSERT INTO frond_tag_formats (biz_tag, id_format, time_zone) VALUES (?, ?, ?)', [
            tag.tag,
            format.format,
            format.timeZone,
          ]);
        const start = tag.start.toString();
        await sql(own ? INSERT_COUNTER_ROW : INSERT_TAG_ROW, [
          tag.tag,
          start,
          tag.tag,
          start,
          String(tag.step),
          tag.description ?? null,
        ]);
        if (own) await sql(RECORD_HIGH_WATER, [tag.tag, tag.tag]);
      });
    if (opaque === undefined)
      return this.connections.exclusiveTransaction('addTag', TAGS_LOCK, async (sql) => {
        await refuseKeptFormat(sql, tag.tag);
        const [kept] = await sql(
          `SELECT 1 AS kept FROM frond_tag_options o WHERE o.biz_tag = ?
              AND NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = ?)`,
          [tag.tag, tag.tag],
        );
        if ((kept as unknown[]).length > 0) throw opaqueSettingKept(tag.tag);
        const start = tag.start.toString();
        await sql(INSERT_TAG_ROW, [
          tag.tag,
          start,
          tag.tag,
          start,
          String(tag.step),
          tag.description ?? null,
        ]);
      });
    return this.connections.exclusiveTransaction('addOpaqueTag', TAGS_LOCK, async (sql) => {
      await refuseKeptFormat(sql, tag.tag);
      // By the columns' collation, not exact bytes: `ORDER`, `order ` and `cafe` are one key of
      // frond_high_water with `order` and `café`, and an opaque `ORDER` after a removed plain `order`
      // served 841 IDs in 30,000 equal to plain ones (its advance goes on from `order`'s record).
      const [used] = await sql(
        `SELECT 1 AS used FROM frond_high_water WHERE biz_tag = ?
              AND NOT EXISTS (SELECT 1 FROM leaf_alloc WHERE biz_tag = ?)`,
        [tag.tag, tag.tag],
      );
      if ((used as unknown[]).length > 0) throw opaqueNameUsed(tag.tag);
      await sql('INSERT INTO frond_tag_options (biz_tag, opaque_domain, key_check) VALUES (?, ?, ?)', [
        tag.tag,
        opaque.domain,
        opaque.keyCheck,
      ]);
      const start = tag.start.toString();
      await sql(INSERT_TAG_ROW, [tag.tag, start, tag.tag, start, String(tag.step), tag.description ?? null]);
    });
  }

  /**
   * The row locked first, as an advance locks it (LOCK_ROW: an advance in flight commits before,
   * and one after finds no row), its max_id recorded as an advance records it (the higher of the
   * two kept), the row deleted, and the record read back: one transaction.
   */
  deleteTag(tag: string): Promise<bigint | undefined> {
    return this.withDeadlockRetry(() =>
      this.connections.exclusiveTransaction('removeTag', TAGS_LOCK, async (sql) => {
        const [locked] = await sql(LOCK_ROW, [tag, tag]);
        if ((locked as unknown[]).length === 0) return undefined;
        await sql(RECORD_HIGH_WATER, [tag, tag]);
        await sql(`DELETE FROM leaf_alloc WHERE ${exactTag('biz_tag')}`, [tag, tag]);
        // A counter's format row goes with it (8,760 a year of an hourly tag otherwise); its record
        // stays, so a node that creates it again (with its tag's format) starts it above that.
        if (parseCounterName(tag) !== undefined)
          await sql(`DELETE FROM frond_tag_formats WHERE ${exactTag('biz_tag')}`, [tag, tag]);
        const [kept] = await sql('SELECT max_id FROM frond_high_water WHERE biz_tag = ?', [tag]);
        const row = (kept as { max_id: string }[])[0];
        if (row === undefined)
          throw new Error(`frond_high_water has no row for ${tag} right after recording it`);
        return BigInt(row.max_id);
      }),
    );
  }

  /** ER_NO_SUCH_TABLE (1146), from the driver or as the cause of a store error. */
  isMissingTable(error: unknown): boolean {
    return (
      errorCode(error) === 'ER_NO_SUCH_TABLE' ||
      errorCode((error as Error | undefined)?.cause) === 'ER_NO_SUCH_TABLE'
    );
  }

  isMissingColumn(error: unknown): boolean {
    return errorCode(error) === 'ER_BAD_FIELD_ERROR';
  }

  isDenied(error: unknown): boolean {
    return (
      DENIED.has(errorCode(error) ?? '') || DENIED.has(errorCode((error as Error | undefined)?.cause) ?? '')
    );
  }

  async account(): Promise<string> {
    const [rows] = await this.connections.run('SELECT CURRENT_USER() AS account');
    return (rows as { account?: string }[])[0]?.account ?? 'unknown';
  }

  /**
   * Each privilege asked by a statement that needs it and changes nothing (probeSql), in a
   * transaction rolled back. A table the account may neither read nor write is unseen: MySQL
   * answers "command denied" for a table that is missing too, unless the account holds a privilege
   * on the whole database (then "doesn't exist").
   */
  refusals(needs: Needs): Promise<Refusal[]> {
    return this.connections.onConnection(async (connection) => {
      const refused = new Map<StoreTable, { missing: Privilege[]; gone: boolean }>();
      await connection.query('START TRANSACTION');
      for (const { table, privilege } of pairsOf(needs)) {
        try {
          await connection.query(probeSql(table, privilege));
        } catch (error) {
          const gone = this.isMissingTable(error);
          if (!gone && !this.isDenied(error)) throw error;
          const entry = refused.get(table) ?? { missing: [], gone: false };
          refused.set(table, { missing: [...entry.missing, privilege], gone: entry.gone || gone });
        }
      }
      await connection.query('ROLLBACK');
      return [...refused].map(([table, { missing, gone }]) => ({
        table,
        missing,
        unseen: gone || missing.length === (needs[table] ?? []).length,
      }));
    }, 'privilege check');
  }

  isDuplicateKey(error: unknown): boolean {
    return errorCode(error) === 'ER_DUP_ENTRY';
  }

  close(): Promise<void> {
    return this.connections.end();
  }
}

/**
 * The lock every add, removal and fence takes (GET_LOCK), one for all names: the default
 * collations make one key of names that differ in case, accents or trailing blanks (and more), which
 * no lock name computed here could match exactly, and adds and removals are rare.
 */
const TAGS_LOCK = 'frond_tags';

/**
 * `gaps` inserted in the caller's transaction, GAPS_PER_INSERT rows a statement; a statement that
 * meets a gap already recorded is made again row by row, each duplicate left as it is.
 */
async function insertGapsIn(sql: Sql, gaps: readonly Gap[]): Promise<void> {
  const valuesOf = (gap: Gap) => [
    gap.tag,
    gap.start.toString(),
    gap.end.toString(),
    gap.reason,
    gap.node,
    String(Math.round(gap.at)),
  ];
  for (let i = 0; i < gaps.length; i += GAPS_PER_INSERT) {
    const chunk = gaps.slice(i, i + GAPS_PER_INSERT);
    try {
      await sql(insertGaps(chunk.length), chunk.flatMap(valuesOf));
    } catch (error) {
      if (errorCode(error) !== 'ER_DUP_ENTRY') throw error;
      for (const gap of chunk) {
        try {
          await sql(insertGaps(1), valuesOf(gap));
        } catch (each) {
          if (errorCode(each) !== 'ER_DUP_ENTRY') throw each;
        }
      }
    }
  }
}

function serverIdentity(rows: unknown): string {
  const identity = (rows as { identity?: string }[])[0]?.identity;
  if (identity === undefined) throw new Error('the server did not name itself (@@server_id)');
  return identity;
}

/**
 * A plain or opaque tag under a name whose format outlived its leaf_alloc row (a removed formatted
 * tag, a counter of one): matched by the columns' collation, as the joins match it.
 */
async function refuseKeptFormat(sql: Sql, tag: string): Promise<void> {
  const [kept] = await sql(
    `SELECT id_format, time_zone FROM frond_tag_formats f WHERE f.biz_tag = ?
        AND NOT EXISTS (SELECT 1 FROM leaf_alloc l WHERE l.biz_tag = ?)`,
    [tag, tag],
  );
  const row = (kept as FormatRow[])[0];
  const format = row && formatOf(row);
  if (format) throw formatRowRemains(tag, format);
}

/** A plain tag under a name whose opaque setting outlived its leaf_alloc row. */
function opaqueSettingKept(tag: string): FrondError {
  return new FrondError(
    'OPAQUE_TAG_FIXED',
    `tag ${tag} was an opaque tag: its leaf_alloc row was deleted, and its setting remains in frond_tag_options (a setting is never changed or removed), so a new row under that name would be served as opaque, not plain; use a new name`,
  );
}

function maxOf(a: bigint, b: bigint | undefined): bigint {
  return b !== undefined && b > a ? b : a;
}
