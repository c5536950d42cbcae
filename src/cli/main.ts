import { readFileSync } from 'node:fs';
import { describeError, ERROR_CODES, isFrondError } from '../core/errors.js';
import { dbCommand } from './db.js';
import { decodeCommand } from './decode.js';
import { serveCommand } from './serve.js';
import { tagCommand } from './tag.js';

export const HELP = `frond: a distributed 64-bit ID service, compatible with Meituan Leaf

usage:
  frond serve [--host 127.0.0.1] [--port 8080] [--store sqlite:PATH] [--data-dir ./data]
              [--worker-id N] [--no-segment] [--no-snowflake] [--epoch MS]
              [--no-random-sequence] [--segment-wait-ms 3000] [--tag-refresh-ms 60000]
              [--max-step 1000000] [--clock-tolerance-ms 5] [--clock-startup-wait-ms 5000]
              [--shutdown-timeout-ms 10000] [--log-level info]
              [--token T]... [--admin-token T] [--rate-limit N] [--tls-cert PEM --tls-key PEM]
              [--config frond.json] [--leaf-config leaf.properties]
              [--zk HOST:PORT[,…] --name NAME [--advertise HOST:PORT | --advertise-port P]]
              [--etcd http://HOST:PORT[,…] --name NAME] [--worker-lease] [--worker-lease-ttl-ms 6000]
              [--coordinator-timeout-ms 3000] [--clock-max-skew-ms 5000]
              [--workers N]
  frond tag add TAG [--step 1000] [--start 1] [--description TEXT] [--store S] [--data-dir D]
  frond tag list [--json] [--store S] [--data-dir D]
  frond tag set-step TAG N [--store S] [--data-dir D]
  frond db init [--print] [--store S] [--data-dir D]
  frond decode ID [--epoch MS]
  frond help | frond version

Every serve flag is also an environment variable: --port is FROND_PORT, --no-segment is
FROND_NO_SEGMENT=true. Flags win over the environment.

--store is sqlite:PATH (default sqlite:<data-dir>/frond.db), postgres://USER:PASSWORD@HOST:PORT/DB
or mysql://USER:PASSWORD@HOST:PORT/DB (MySQL and MariaDB), with optional ?pool=4
&connect_timeout_ms=5000&query_timeout_ms=5000. 'frond db init --print' shows the table's DDL.

Snowflake worker IDs come from <data-dir>/snowflake-worker.json (or --worker-id) unless a
coordinator hands them out: --zk keeps Leaf's layout (/snowflake/NAME/forever/IP:PORT-SEQ, one
worker ID per ip:port, never reused); --zk --worker-lease or --etcd lease them while a node runs and
reuse them once free. See docs/worker-ids.md.
`;

export async function main(args: string[]): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const [command, ...rest] = args;
  try {
    switch (command) {
      case 'serve':
        return await serveCommand(rest);
      case 'tag':
        return await tagCommand(rest, out);
      case 'db':
        return await dbCommand(rest, out);
      case 'decode':
        return await decodeCommand(rest, out);
      case 'version':
      case '--version':
        out(version());
        return 0;
      case 'help':
      case '--help':
      case '-h':
        out(HELP);
        return 0;
      case undefined:
        process.stderr.write(HELP);
        return 2;
      default:
        process.stderr.write(`frond: unknown command ${JSON.stringify(command)} (see 'frond help')\n`);
        return 2;
    }
  } catch (error) {
    process.stderr.write(`frond: ${describeError(error)}\n`);
    // Exit codes: 0 done, 1 failed while running, 2 bad usage or configuration (per code in the registry).
    return isFrondError(error) ? ERROR_CODES[error.code].exitCode : 1;
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}
