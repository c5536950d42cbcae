import { readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { makeDirectory } from '../../platform/directory.js';

/**
 * Leaf's own worker-ID cache (leaf-core/src/main/java/com/sankuai/inf/leaf/snowflake/
 * SnowflakeZookeeperHolder.java): `System.getProperty("java.io.tmpdir") + File.separator +
 * leaf.name + "/leafconf/{port}/workerID.properties"`, `{port}` the identity's port
 * (`leaf.snowflake.port`), holding `workerID=<n>` and nothing else. Leaf writes it each time it
 * registers with ZooKeeper (`updateLocalWorkerID`) and reads it, with `Properties.load`, only when
 * ZooKeeper fails at start; it holds no time. frond keeps it written for a rollback to Leaf, and reads
 * it to cross-check (docs/worker-ids.md, "Leaf's own cache file").
 */
export class LeafCacheFile {
  readonly path: string;

  constructor(tmpdir: string, name: string, port: number) {
    this.path = join(tmpdir, name, 'leafconf', String(port), 'workerID.properties');
  }

  /** The worker ID, undefined when there is no file; throws when its text is not Leaf's. */
  async read(): Promise<number | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    // Properties.load: `workerID=4`, `workerID: 4` or `workerID 4`; Integer.valueOf takes the digits.
    const match = /^[ \t\f]*workerID[ \t\f]*[=: \t\f][ \t\f]*(-?[0-9]{1,10})[ \t\f]*$/m.exec(text);
    if (!match) throw new Error(`${this.path} holds no workerID=<n>`);
    return Number(match[1]);
  }

  /** Leaf's text exactly (`workerID=<n>`, no newline), replaced whole. */
  async write(workerId: number): Promise<void> {
    makeDirectory(dirname(this.path), 'the worker-ID cache folder');
    const temporary = `${this.path}.frond.tmp`;
    await writeFile(temporary, `workerID=${workerId}`);
    await rename(temporary, this.path);
  }
}
