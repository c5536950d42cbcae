// What each of frond's operations needs of the database account it connects as, table by table,
// and the words for what is missing. One list serves the GRANTs `frond db init --print --grant-to`
// prints, the check a node makes at start, the diagnosis of a statement the database refused, and
// docs/databases.md ("The account frond connects as"), which a test keeps equal to it.
import { FrondError } from '../../core/errors.js';

/** frond's own tables, beside Leaf's `leaf_alloc`, in the order they are created. */
export const FROND_TABLES = [
  'frond_fence',
  'frond_high_water',
  'frond_tag_options',
  'frond_tag_formats',
  'frond_gaps',
] as const;

export type FrondTable = (typeof FROND_TABLES)[number];

export type StoreTable = 'leaf_alloc' | FrondTable;

export const STORE_TABLES: readonly StoreTable[] = ['leaf_alloc', ...FROND_TABLES];

export type Privilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE';

/** The order privileges are named in, in messages and GRANTs. */
const ORDER: readonly Privilege[] = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/** The privileges an operation needs on each table it reads or writes. */
export type Needs = Partial<Record<StoreTable, readonly Privilege[]>>;

/** An operation: what a person calls it, and what it needs. */
export interface Use {
  /** `serving segments`: the end of "…, which serving segments needs". */
  readonly what: string;
  readonly needs: Needs;
}

/**
 * A node's segment loads, its fence, its tag list and its clean stop. A load reads the fence row under a lock
 * (PostgreSQL asks UPDATE for FOR KEY SHARE: "permission denied for table frond_fence" with SELECT
 * alone), advances the row, records its max_id in frond_high_water (INSERT … ON CONFLICT / ON
 * DUPLICATE KEY UPDATE: both) and reads the tag's kind (frond_tag_options and frond_tag_formats);
 * the fence inserts the fence row the first time and updates it, and raises every row and the
 * records of removed tags. A node serving formatted tags also adds and removes their counters'
 * rows: that is ADDING_FORMATTED and REMOVING, in MANAGING.
 */
export const SERVING: Use = {
  what: 'serving segments (loads, the fence, the tag list)',
  needs: {
    leaf_alloc: ['SELECT', 'UPDATE'],
    frond_fence: ['SELECT', 'INSERT', 'UPDATE'],
    frond_high_water: ['SELECT', 'INSERT', 'UPDATE'],
    frond_tag_options: ['SELECT'],
    frond_tag_formats: ['SELECT'],
    frond_gaps: ['SELECT', 'INSERT'],
  },
};

/** `frond db fence`: the fence and the count of tags it asks about; what it skips is recorded as gaps. */
export const FENCING: Use = {
  what: 'a fence',
  needs: {
    leaf_alloc: ['SELECT', 'UPDATE'],
    frond_fence: ['SELECT', 'INSERT', 'UPDATE'],
    frond_high_water: ['SELECT', 'UPDATE'],
    frond_gaps: ['SELECT', 'INSERT'],
  },
};

/** `frond tag gaps`, the gap counters of /metrics and /v1/stats: frond_gaps read. */
export const READING_GAPS: Use = {
  what: 'reading the gaps',
  needs: { frond_gaps: ['SELECT'] },
};

/** `frond tag list`, `/db`, `frond decode --tag`, `frond db check`: rows, opaque settings, formats. */
export const LISTING: Use = {
  what: 'reading the tags',
  needs: { leaf_alloc: ['SELECT'], frond_tag_options: ['SELECT'], frond_tag_formats: ['SELECT'] },
};

/**
 * A plain tag's row, checked against the names frond_high_water, frond_tag_options and
 * frond_tag_formats keep.
 */
export const ADDING: Use = {
  what: 'adding a tag',
  needs: {
    leaf_alloc: ['SELECT', 'INSERT'],
    frond_high_water: ['SELECT'],
    frond_tag_options: ['SELECT'],
    frond_tag_formats: ['SELECT'],
  },
};

/** An opaque tag: its setting too. */
export const ADDING_OPAQUE: Use = {
  what: 'adding an opaque tag',
  needs: {
    leaf_alloc: ['SELECT', 'INSERT'],
    frond_high_water: ['SELECT'],
    frond_tag_options: ['SELECT', 'INSERT'],
    frond_tag_formats: ['SELECT'],
  },
};

/** A formatted tag, or one of its counters (which the nodes serving it add): its format row too. */
export const ADDING_FORMATTED: Use = {
  what: 'adding a formatted tag or its counter',
  needs: {
    leaf_alloc: ['SELECT', 'INSERT'],
    frond_high_water: ['SELECT'],
    frond_tag_options: ['SELECT'],
    frond_tag_formats: ['SELECT', 'INSERT'],
  },
};

/** The row locked and deleted, its max_id recorded in frond_high_water as a load records it. */
export const REMOVING: Use = {
  what: 'removing a tag',
  needs: {
    leaf_alloc: ['SELECT', 'DELETE'],
    frond_high_water: ['SELECT', 'INSERT', 'UPDATE'],
    frond_tag_options: ['SELECT'],
  },
};

export const SETTING_STEP: Use = {
  what: "changing a tag's step",
  needs: { leaf_alloc: ['SELECT', 'UPDATE'] },
};

/** What the tag commands (and the admin API's POST, PATCH and DELETE) need beyond SERVING. */
export const MANAGING: Use = {
  what: 'adding and removing tags',
  needs: beyond(union(ADDING_OPAQUE, ADDING_FORMATTED, REMOVING, SETTING_STEP), SERVING),
};

/** What the account lacks of a table: the privileges, and whether it sees the table at all. */
export interface Refusal {
  table: StoreTable;
  missing: readonly Privilege[];
  /** The account sees nothing of the table: it is missing, or no privilege on it is granted. */
  unseen: boolean;
}

/** The (table, privilege) pairs of `needs`, in table order. */
export function pairsOf(needs: Needs): { table: StoreTable; privilege: Privilege }[] {
  return STORE_TABLES.flatMap((table) => (needs[table] ?? []).map((privilege) => ({ table, privilege })));
}

/**
 * `GRANT … ON table TO grantee;` lines for `needs`, one per table. Table names are left unqualified,
 * as the DDL is: both run in the database (and, on PostgreSQL, the schema) the DBA is connected to.
 */
export function grantLines(needs: Needs, grantee: string): string[] {
  return STORE_TABLES.filter((table) => (needs[table] ?? []).length > 0).map(
    (table) => `GRANT ${(needs[table] ?? []).join(', ')} ON ${table} TO ${grantee};`,
  );
}

/**
 * What `frond db init --print --grant-to` prints after the DDL: the GRANTs a node needs to serve,
 * then those the tag commands and the admin API add, each group under a comment saying what for.
 */
export function grantScript(grantee: string): string {
  return [
    `-- ${grantee}: what a node needs for ${SERVING.what}`,
    ...grantLines(SERVING.needs, grantee),
    `-- and for ${MANAGING.what} (frond tag add and remove, POST and DELETE /v1/tags, --opaque-tag, formatted tags' counters)`,
    ...grantLines(MANAGING.needs, grantee),
    // The lease table belongs to the worker-ID side (src/worker-ids/sql/), not to a store: named here
    // so one script covers a database that keeps both.
    '-- and for snowflake worker-ID leases in this database (--worker-lease-store store)',
    `GRANT SELECT, INSERT, UPDATE ON frond_worker_lease TO ${grantee};`,
  ].join('\n');
}

/** The command that prints the SQL a DBA runs, for `account` on the store `description`. */
export function initHint(description: string, account: string): string {
  return `'frond db init --print --grant-to ${account} --store ${description}'`;
}

/**
 * The account lacks what `use` needs: one line naming each table it cannot see and each privilege
 * missing, and the command that prints the GRANTs. INVALID_CONFIG (exit 2): the database's
 * settings must change, and the same command then works.
 */
export function accessRefused(
  description: string,
  account: string,
  use: Use,
  refusals: readonly Refusal[],
): FrondError {
  const unseen = refusals.filter((r) => r.unseen).map((r) => r.table);
  const short = refusals
    .filter((r) => !r.unseen)
    .map((r) => `${r.missing.join(', ')} on ${r.table}`)
    .join('; ');
  const parts: string[] = [];
  if (unseen.length > 0)
    parts.push(
      `cannot see ${listed(unseen)} (missing, or no privilege on ${unseen.length === 1 ? 'it' : 'them'})`,
    );
  if (short !== '') parts.push(`lacks ${short}`);
  const fix = unseen.some((table) => table !== 'leaf_alloc')
    ? `: ${FROND_KEEPS}; an administrator creates them and grants what is missing`
    : '; an administrator grants what is missing';
  return new FrondError(
    'INVALID_CONFIG',
    `${description}: the account ${account} ${parts.join(' and ')}, which ${use.what} needs${fix} with the SQL of ${initHint(description, account)}`,
  );
}

/**
 * frond's tables are missing and the account may not create them: one line naming them, why frond
 * does not go on without them, and the command that prints their DDL and GRANTs.
 */
export function tablesNotCreated(
  description: string,
  account: string,
  tables: readonly StoreTable[],
  reason: string,
): FrondError {
  const them = tables.length === 1 ? 'it' : 'them';
  const frond = tables.some((table) => table !== 'leaf_alloc');
  return new FrondError(
    'INVALID_CONFIG',
    `${description} has no ${listed(tables)} and the account ${account} may not create ${them} (${reason})${
      frond ? `: ${FROND_KEEPS}` : ''
    }; an administrator creates ${them} with the SQL of ${initHint(description, account)}`,
  );
}

/**
 * Why frond refuses rather than serving without its tables: without the fence a failover that lost
 * commits, and without the high-water a restored or lowered row, would hand out IDs again.
 */
const FROND_KEEPS =
  'frond keeps its fence and high-water there, and serves no segment without them (it would be less safe than it says)';

/** `a, b and c`. */
function listed(items: readonly string[]): string {
  return items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function union(...uses: Use[]): Needs {
  const needs: Needs = {};
  for (const table of STORE_TABLES) {
    const privileges = new Set(uses.flatMap((use) => use.needs[table] ?? []));
    if (privileges.size > 0) needs[table] = ORDER.filter((p) => privileges.has(p));
  }
  return needs;
}

function beyond(needs: Needs, use: Use): Needs {
  const rest: Needs = {};
  for (const table of STORE_TABLES) {
    const left = (needs[table] ?? []).filter((p) => !(use.needs[table] ?? []).includes(p));
    if (left.length > 0) rest[table] = left;
  }
  return rest;
}
