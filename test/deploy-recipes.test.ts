// The deploy recipes in docs/deploy/ (issue 17), tested as far as this machine allows: no container
// engine runs here, so the Dockerfile's instructions are checked and its commands run as a plain
// script in a temp folder (its absolute paths moved under that folder), and the image's entry point
// is started from the result; the compose file and the Kubernetes manifests are parsed as YAML and
// checked for the fields that matter; the systemd unit goes through `systemd-analyze verify`.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { runNode, startFrond, tempDir } from './support/frond-process.js';
import { serviceMissing } from './support/service-gate.js';
import { freePort } from './support/tls-databases.js';

const ROOT = new URL('..', import.meta.url).pathname;
const DEPLOY = join(ROOT, 'docs/deploy');
const run = promisify(execFile);

// biome-ignore lint/suspicious/noExplicitAny: parsed YAML is checked field by field below.
type Yaml = any;

interface Instruction {
  op: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function dockerfile(text: string): Instruction[] {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)\s+(.*)$/.exec(line);
      assert.ok(match, line);
      return { op: (match[1] as string).toUpperCase(), args: match[2] as string };
    });
}

/** `K=V K2="V 2"` of an ENV instruction. */
function envPairs(args: string): [string, string][] {
  return [...args.matchAll(/(\w+)=("[^"]*"|\S+)/g)].map((m) => [
    m[1] as string,
    (m[2] as string).replace(/^"|"$/g, ''),
  ]);
}

/** npm as the recipe's commands run it, without what `npm test` passes down. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env))
    if (!/^npm_/i.test(key) && key !== 'INIT_CWD') env[key] = value;
  return { ...env, ...extra };
}

describe('deploy recipes (docs/deploy)', () => {
  it('Dockerfile: multi-stage, non-root, the data dir a volume, HEALTHCHECK on /readyz, SIGTERM', () => {
    const steps = dockerfile(readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8'));
    const stages = steps.filter((step) => step.op === 'FROM');
    assert.ok(stages.length >= 2, 'multi-stage');
    const last = steps.slice(steps.lastIndexOf(stages.at(-1) as Instruction));
    const user = last.find((step) => step.op === 'USER');
    assert.ok(user && !/^(root|0)$/.test(user.args), 'runs as a non-root user');
    const env = new Map(last.filter((s) => s.op === 'ENV').flatMap((s) => envPairs(s.args)));
    assert.equal(env.get('FROND_HOST'), '0.0.0.0');
    assert.ok(last.some((s) => s.op === 'VOLUME' && s.args.includes(env.get('FROND_DATA_DIR') as string)));
    assert.match(last.find((s) => s.op === 'HEALTHCHECK')?.args ?? '', /CMD .*\/readyz/);
    assert.equal(last.find((s) => s.op === 'STOPSIGNAL')?.args, 'SIGTERM');
    // Exec form: node is PID 1 and gets SIGTERM itself (no shell in between).
    assert.match(last.find((s) => s.op === 'ENTRYPOINT')?.args ?? '', /^\[/);
  });

  it('Dockerfile: its commands run as a script in a temp folder, and the result serves and is healthy', async (t) => {
    const root = tempDir('frond-docker-');
    const steps = dockerfile(readFileSync(join(DEPLOY, 'Dockerfile'), 'utf8'));
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.startsWith('#'));
    const skip = (path: string) => {
      const rel = path.slice(ROOT.length).replace(/^\//, '');
      return ignored.some((pattern) => {
        const re = new RegExp(`^${pattern.replace(/\./g, '\\.').replace(/\*/g, '[^/]*')}(/|$)`);
        return re.test(rel);
      });
    };
    // Each stage's file system is a folder of the temp folder: its absolute paths move there
    // (system paths stay); COPY --from=NAME reads from that stage's folder.
    const stageRoots = new Map<string, string>();
    let stageRoot = root;
    const moved = (path: string, base = stageRoot) => (path.startsWith('/') ? join(base, path) : path);
    const inCommand = (command: string) =>
      command
        .replace(
          /(^|[\s=])(\/(?!dev\/|usr\/|bin\/|etc\/|proc\/)[\w./*-]+)/g,
          (_, lead: string, path: string) => `${lead}${moved(path)}`,
        )
        // No `node` user on this machine: the current user stands in for it.
        .replace(/\bnode:node\b/g, `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`);
    let cwd = root;
    let env: NodeJS.ProcessEnv = {};
    let entrypoint: string[] = [];
    let cmd: string[] = [];
    let healthcheck = '';
    const started = Date.now();
    for (const step of steps) {
      switch (step.op) {
        case 'FROM': {
          stageRoot = join(root, `stage-${stageRoots.size}`);
          stageRoots.set(/\sAS\s+(\S+)/i.exec(step.args)?.[1] ?? String(stageRoots.size), stageRoot);
          mkdirSync(stageRoot);
          env = {};
          cwd = stageRoot;
          break;
        }
        case 'WORKDIR':
          cwd = moved(step.args);
          mkdirSync(cwd, { recursive: true });
          break;
        case 'ENV':
          for (const [key, value] of envPairs(step.args))
            env[key] = value.startsWith('/') ? moved(value) : value;
          break;
        case 'COPY': {
          const words = step.args.split(/\s+/);
          const from = words[0]?.startsWith('--from=') ? stageRoots.get(words[0].slice(7)) : undefined;
          if (words[0]?.startsWith('--from=')) assert.ok(from, `no stage ${words[0]}`);
          const [dest, ...sources] = (from ? words.slice(1) : words).reverse() as [string, ...string[]];
          const target = dest.startsWith('/') ? moved(dest) : join(cwd, dest);
          for (const source of sources.reverse()) {
            const origin = from ? moved(source, from) : join(ROOT, source);
            const into =
              dest.endsWith('/') || sources.length > 1 || source === '.'
                ? join(target, source === '.' ? '' : (source.split('/').at(-1) as string))
                : target;
            mkdirSync(dirname(into), { recursive: true });
            cpSync(origin, into, { recursive: true, filter: (path) => from !== undefined || !skip(path) });
          }
          break;
        }
        case 'RUN': {
          // Install scripts off: better-sqlite3 would compile SQLite (minutes here; no prebuilt
          // binary can be downloaded); its binary is copied in below, as in the package test.
          const result = spawnSync('bash', ['-euo', 'pipefail', '-c', inCommand(step.args)], {
            cwd,
            env: cleanEnv({
              ...env,
              npm_config_ignore_scripts: 'true',
              npm_config_prefer_offline: 'true',
              npm_config_update_notifier: 'false',
            }),
            encoding: 'utf8',
            timeout: 240_000,
          });
          assert.equal(result.status, 0, `RUN ${step.args}\n${result.stdout}\n${result.stderr}`);
          break;
        }
        case 'ENTRYPOINT':
          entrypoint = JSON.parse(step.args) as string[];
          break;
        case 'CMD':
          cmd = JSON.parse(step.args) as string[];
          break;
        case 'HEALTHCHECK':
          healthcheck = step.args.replace(/^.*?CMD\s+/, '');
          break;
      }
    }
    t.diagnostic(`Dockerfile commands as a script: ${Date.now() - started} ms`);
    const native = 'node_modules/better-sqlite3/build/Release/better_sqlite3.node';
    mkdirSync(moved(join('/app', dirname(native))), { recursive: true });
    copyFileSync(join(ROOT, native), moved(join('/app', native)));
    assert.ok(
      !existsSync(moved('/app/node_modules/typescript')),
      'the image holds no development dependency',
    );

    // The image's command, as the container would run it.
    const port = await freePort();
    const [program, ...args] = [...entrypoint, ...cmd].map((word) =>
      word.startsWith('/') ? moved(word) : word,
    );
    assert.equal(program, 'node');
    const child = execFile(process.execPath, args, {
      env: cleanEnv({ ...env, FROND_HOST: '127.0.0.1', FROND_PORT: String(port) }),
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const probe = JSON.parse(healthcheck) as string[];
      let healthy = false;
      for (let i = 0; i < 50 && !healthy; i++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const result = await runNode(probe.slice(1), { timeoutMs: 5_000, env: { FROND_PORT: String(port) } });
        healthy = result.code === 0;
      }
      assert.ok(healthy, 'the HEALTHCHECK command passes once the node is ready');
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, 'SIGTERM stops it cleanly');
  });

  it('compose.yaml: frond with PostgreSQL and ZooKeeper, the data dir a volume', () => {
    const compose: Yaml = parseYaml(readFileSync(join(DEPLOY, 'compose.yaml'), 'utf8'));
    assert.deepEqual(Object.keys(compose.services).sort(), ['frond', 'postgres', 'zookeeper']);
    const frond = compose.services.frond;
    assert.equal(frond.build.dockerfile, 'docs/deploy/Dockerfile');
    assert.ok(
      existsSync(join(DEPLOY, frond.build.context, frond.build.dockerfile)),
      'build context and Dockerfile',
    );
    assert.match(frond.environment.FROND_STORE, /^postgres:\/\/\w+:\w+@postgres:5432\/\w+$/);
    assert.equal(frond.environment.FROND_ZK, 'zookeeper:2181');
    assert.equal(frond.environment.FROND_WORKER_LEASE, 'true');
    assert.ok(frond.environment.FROND_NAME);
    assert.ok(frond.volumes.some((v: string) => v.endsWith(':/var/lib/frond')));
    assert.equal(frond.depends_on.postgres.condition, 'service_healthy');
    assert.ok(compose.services.postgres.healthcheck.test.includes('pg_isready'));
    for (const name of Object.keys(compose.volumes)) assert.ok(name.endsWith('-data'));
  });

  it('kubernetes: a Deployment in lease mode with readiness on /readyz, a Service and a PodDisruptionBudget', () => {
    const docs: Yaml[] = parseAllDocuments(readFileSync(join(DEPLOY, 'kubernetes/frond.yaml'), 'utf8')).map(
      (d) => d.toJS(),
    );
    const kind = (k: string) => docs.find((d) => d.kind === k);
    const deployment = kind('Deployment');
    assert.equal(deployment.apiVersion, 'apps/v1');
    const pod = deployment.spec.template.spec;
    const labels = deployment.spec.template.metadata.labels;
    assert.deepEqual(deployment.spec.selector.matchLabels, labels);
    assert.ok(deployment.spec.replicas >= 2);
    assert.equal(pod.securityContext.runAsNonRoot, true);
    const [container] = pod.containers;
    const env = new Map(container.env.map((e: Yaml) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(env.get('FROND_HOST'), '0.0.0.0');
    assert.ok(
      env.get('FROND_ETCD') || (env.get('FROND_ZK') && env.get('FROND_WORKER_LEASE') === 'true'),
      'lease mode',
    );
    assert.ok(env.get('FROND_NAME'));
    assert.ok((env.get('FROND_STORE') as Yaml).secretKeyRef, 'the store URL comes from a Secret');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.equal(container.livenessProbe.httpGet.path, '/healthz');
    const port = container.ports.find((p: Yaml) => p.name === container.readinessProbe.httpGet.port);
    assert.equal(String(port.containerPort), env.get('FROND_PORT'));
    assert.ok(pod.terminationGracePeriodSeconds > 10, 'longer than --shutdown-timeout-ms');
    assert.ok(
      container.volumeMounts.some((m: Yaml) => m.mountPath === env.get('FROND_DATA_DIR')),
      'the data dir is a volume (the root file system is read-only)',
    );
    const pdb = kind('PodDisruptionBudget');
    assert.equal(pdb.apiVersion, 'policy/v1');
    assert.deepEqual(pdb.spec.selector.matchLabels, labels);
    assert.ok(pdb.spec.minAvailable < deployment.spec.replicas || pdb.spec.maxUnavailable >= 1);
    assert.deepEqual(kind('Service').spec.selector, labels);
  });

  it('kubernetes: a StatefulSet whose pod ordinals are the worker IDs, a volume per pod, no coordinator', async () => {
    const docs: Yaml[] = parseAllDocuments(
      readFileSync(join(DEPLOY, 'kubernetes/frond-statefulset.yaml'), 'utf8'),
    ).map((d) => d.toJS());
    const set = docs.find((d) => d.kind === 'StatefulSet');
    assert.equal(set.apiVersion, 'apps/v1');
    const pod = set.spec.template.spec;
    const labels = set.spec.template.metadata.labels;
    assert.deepEqual(set.spec.selector.matchLabels, labels);
    assert.ok(set.spec.replicas >= 2);
    const [container] = pod.containers;
    const env = new Map(container.env.map((e: Yaml) => [e.name, e.value ?? e.valueFrom]));
    assert.equal(env.get('FROND_WORKER_ID_ORDINAL'), 'true');
    assert.match(String(env.get('FROND_WORKER_ID_OFFSET')), /^[0-9]+$/);
    for (const coordinator of ['FROND_ETCD', 'FROND_ZK', 'FROND_WORKER_ID', 'FROND_WORKER_LEASE'])
      assert.ok(!env.has(coordinator), `no ${coordinator}: the ordinal is the worker ID`);
    assert.ok((env.get('FROND_STORE') as Yaml).secretKeyRef, 'the store URL comes from a Secret');
    assert.equal(container.readinessProbe.httpGet.path, '/readyz');
    assert.ok(pod.terminationGracePeriodSeconds > 10, 'longer than --shutdown-timeout-ms');
    // The data dir (the worker ID's recorded time) is the pod's own claim, which follows its ordinal.
    const dataMount = container.volumeMounts.find((m: Yaml) => m.mountPath === env.get('FROND_DATA_DIR'));
    assert.ok(dataMount, 'the data dir is mounted');
    assert.ok(
      set.spec.volumeClaimTemplates.some((claim: Yaml) => claim.metadata.name === dataMount.name),
      'from volumeClaimTemplates, not an emptyDir',
    );
    const headless = docs.find((d) => d.kind === 'Service' && d.metadata.name === set.spec.serviceName);
    assert.equal(headless?.spec.clusterIP, 'None', 'the governing Service is headless');
    assert.ok(docs.some((d) => d.kind === 'PodDisruptionBudget'));
    // The env the manifest sets, with HOSTNAME as Kubernetes sets it for pod 2, starts frond as worker 2.
    const dataDir = tempDir('frond-ordinal-');
    const node = await startFrond(['--port', '0', '--no-segment'], {
      env: {
        FROND_WORKER_ID_ORDINAL: String(env.get('FROND_WORKER_ID_ORDINAL')),
        FROND_WORKER_ID_OFFSET: String(env.get('FROND_WORKER_ID_OFFSET')),
        FROND_DATA_DIR: dataDir,
        HOSTNAME: `${set.metadata.name}-2`,
      },
    });
    try {
      const health = (await (await fetch(`${node.url}/healthz`)).json()) as {
        snowflake: { workerId: number };
      };
      assert.equal(health.snowflake.workerId, 2 + Number(env.get('FROND_WORKER_ID_OFFSET')));
    } finally {
      await node.stop();
    }
  });

  it('frond.service: systemd-analyze verify passes; hardening and LimitNOFILE are set', async (t) => {
    const text = readFileSync(join(DEPLOY, 'frond.service'), 'utf8');
    for (const key of [
      'LimitNOFILE=',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'KillSignal=SIGTERM',
      'StateDirectory=frond',
    ])
      assert.ok(text.includes(key), key);
    const found = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (found.status !== 0) return serviceMissing(t, 'systemd-analyze', 'not installed');
    // The unit names /usr/bin/frond, where `npm install -g` puts it; here it is this repository's.
    const dir = tempDir('frond-unit-');
    const unit = join(dir, 'frond.service');
    writeFileSync(unit, text.replace(/^ExecStart=\S+/m, `ExecStart=${join(ROOT, 'bin/frond')}`));
    const { stdout, stderr } = await run('systemd-analyze', ['verify', unit], { timeout: 60_000 });
    assert.equal(`${stdout}${stderr}`.trim(), '', 'no complaint');
  });
});
