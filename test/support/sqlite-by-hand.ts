import Database from 'better-sqlite3';

/** SQL by hand on a SQLite file beside running stores, as an operator's `sqlite3 frond.db` would. */
export function byHand<T>(file: string, use: (db: Database.Database) => T): T {
  const db = new Database(file);
  try {
    db.pragma('busy_timeout = 5000');
    return use(db);
  } finally {
    db.close();
  }
}

/**
 * SQLite's online backup, as `sqlite3 DB ".backup"` and, into the live file, `".restore"`: the
 * stores' connections read the restored pages on their next transaction.
 */
export async function copy(from: string, to: string): Promise<void> {
  const db = new Database(from, { readonly: true });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
}
