/**
 * `FROND_TEST_BACKENDS=sqlite,postgres` runs the contract suites of those backends only, so a change
 * to one store is checked in a minute instead of the whole suite's 12: `sqlite`, `postgres`,
 * `mysql` (MariaDB), `memory`; `file`, `zookeeper`, `etcd` for worker-ID sources. Unset (as in CI),
 * every backend runs. A backend left out is reported as skipped with the reason, never passed.
 */
const ALIASES: Record<string, string> = {
  sqlite: 'sqlite',
  postgresql: 'postgres',
  postgres: 'postgres',
  mariadb: 'mysql',
  mysql: 'mysql',
  memory: 'memory',
  file: 'file',
  zookeeper: 'zookeeper',
  etcd: 'etcd',
};

/** The backend a suite's name is about: its first word (`PostgreSQL, fenced` is `postgres`). */
export function backendOf(suiteName: string): string {
  const word = (/^[A-Za-z]+/.exec(suiteName)?.[0] ?? suiteName).toLowerCase();
  return ALIASES[word] ?? word;
}

/** Why a suite is skipped under FROND_TEST_BACKENDS, or false when it runs. */
export function backendSkip(suiteName: string, env: NodeJS.ProcessEnv = process.env): string | false {
  const wanted = env.FROND_TEST_BACKENDS?.trim();
  if (wanted === undefined || wanted === '') return false;
  const list = wanted
    .split(',')
    .map((name) => ALIASES[name.trim().toLowerCase()] ?? name.trim().toLowerCase());
  const backend = backendOf(suiteName);
  return list.includes(backend) ? false : `FROND_TEST_BACKENDS=${wanted} leaves out ${backend}`;
}
