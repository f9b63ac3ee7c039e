import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AgentModule, CoordinatorModule, ProcessModules, StoreModule } from './commands/process-modules';
import { devBanner } from './commands/processes';
import { runCli } from './run';
import { capturedIo } from './test-support/captured-io';

/** Fake packages that record what the CLI asked of them, in order. */
function fakeModules(options: { failAgentStart?: boolean; failMigrate?: boolean; badConfig?: boolean } = {}) {
  const events: string[] = [];
  const seen: {
    pool?: unknown;
    embeddedDataDir?: string;
    coordinatorEnv?: NodeJS.ProcessEnv;
    coordinatorOverrides?: unknown;
    agentEnv?: NodeJS.ProcessEnv;
    agentOverrides?: unknown;
  } = {};

  const store = {
    createPool(config: { connectionString: string }) {
      seen.pool = config;
      return { fakePool: true };
    },
    createStore() {
      return {
        tokens: {
          async authenticate(secret: string) {
            return secret === 'kairos_still-valid' ? { token: {}, expiresInMs: null } : null;
          },
          async create(input: { role: string }) {
            events.push(`token.create ${input.role}`);
            return { token: {}, secret: `kairos_new-${input.role}` };
          },
        },
        async migrate() {
          events.push('migrate');
          if (options.failMigrate) throw new Error('relation already exists');
          return ['0001_initial', '0002_due_notify'];
        },
        async close() {
          events.push('store.close');
        },
      };
    },
    async startEmbeddedPostgres(embedded: { dataDir: string }) {
      seen.embeddedDataDir = embedded.dataDir;
      events.push('embedded.start');
      return {
        url: 'postgres://postgres:pw@127.0.0.1:54000/postgres',
        async stop() {
          events.push('embedded.stop');
        },
      };
    },
  } as unknown as StoreModule;

  const coordinator = {
    coordinatorOptionsFromEnv(env: NodeJS.ProcessEnv, overrides: unknown) {
      if (options.badConfig) throw new Error('invalid configuration: KAIROS_LEASE_MS: Too small: expected number to be >=300');
      seen.coordinatorEnv = env;
      seen.coordinatorOverrides = overrides;
      return { fromEnv: true };
    },
    async startCoordinator() {
      events.push('coordinator.start');
      return {
        httpUrl: 'http://127.0.0.1:18080',
        grpcAddress: '127.0.0.1:15051',
        databaseUrl: 'postgres://postgres:pw@127.0.0.1:54000/postgres',
        async stop() {
          events.push('coordinator.stop');
        },
      };
    },
  } as unknown as CoordinatorModule;

  const agent = {
    agentOptionsFromEnv(env: NodeJS.ProcessEnv, overrides: unknown) {
      seen.agentEnv = env;
      seen.agentOverrides = overrides;
      return {};
    },
    async startAgent() {
      if (options.failAgentStart) throw new Error('cannot reach coordinator');
      events.push('agent.start');
      return {
        async drain() {
          events.push('agent.drain');
        },
      };
    },
  } as unknown as AgentModule;

  const modules: ProcessModules = { store: () => store, coordinator: () => coordinator, agent: () => agent };
  return { modules, events, seen };
}

describe('kairos migrate', () => {
  it('migrates DATABASE_URL and lists what it applied', async () => {
    const { modules, events, seen } = fakeModules();
    const captured = capturedIo({ DATABASE_URL: 'postgres://db.example/kairos' });
    const code = await runCli(['migrate'], captured.io, { modules });
    expect(code).toBe(0);
    expect(seen.pool).toEqual({ connectionString: 'postgres://db.example/kairos' });
    expect(events).toEqual(['migrate', 'store.close']);
    expect(captured.stdout()).toBe('applied 0001_initial\napplied 0002_due_notify\n');
  });

  it('without DATABASE_URL migrates an embedded cluster in KAIROS_DATA_DIR, and stops it', async () => {
    const { modules, events, seen } = fakeModules();
    const captured = capturedIo({ KAIROS_DATA_DIR: '/var/lib/kairos' });
    const code = await runCli(['migrate', '--json'], captured.io, { modules });
    expect(code).toBe(0);
    expect(seen.embeddedDataDir).toBe('/var/lib/kairos');
    expect(seen.pool).toEqual({ connectionString: 'postgres://postgres:pw@127.0.0.1:54000/postgres' });
    expect(events).toEqual(['embedded.start', 'migrate', 'store.close', 'embedded.stop']);
    expect(JSON.parse(captured.stdout())).toEqual({ applied: ['0001_initial', '0002_due_notify'] });
  });

  it('stops the embedded cluster when a migration fails, and exits 1', async () => {
    const { modules, events } = fakeModules({ failMigrate: true });
    const captured = capturedIo();
    const code = await runCli(['migrate', '--data-dir', '/tmp/k'], captured.io, { modules });
    expect(code).toBe(1);
    expect(captured.stderr()).toBe('error: relation already exists\n');
    expect(events).toEqual(['embedded.start', 'migrate', 'store.close', 'embedded.stop']);
  });
});

describe('kairos coordinator', () => {
  it('passes flags as overrides over the environment, runs until the stop signal, then stops', async () => {
    const { modules, events, seen } = fakeModules();
    const captured = capturedIo({ KAIROS_HTTP_PORT: '9999', KAIROS_LOG_LEVEL: 'warn' });
    const exit = runCli(
      ['coordinator', '--http-port', '8081', '--grpc-port', '50052', '--lease-ms', '3000', '--data-dir', 'd'],
      captured.io,
      { modules },
    );
    await captured.stopAsked;
    await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['coordinator.start']);
    expect(seen.coordinatorOverrides).toEqual({ httpPort: 8081, grpcPort: 50052, leaseMs: 3000, dataDir: 'd' });
    expect(seen.coordinatorEnv).toEqual({ KAIROS_HTTP_PORT: '9999', KAIROS_LOG_LEVEL: 'warn' });

    captured.requestStop('SIGTERM');
    expect(await exit).toBe(0);
    expect(events).toEqual(['coordinator.start', 'coordinator.stop']);
    expect(captured.stdout()).toBe('');
  });
});

describe('kairos agent', () => {
  it('passes flags through, and drains on the stop signal', async () => {
    const { modules, events, seen } = fakeModules();
    const captured = capturedIo({ KAIROS_AGENT_CAPACITY: '2' });
    const exit = runCli(
      ['agent', '--coordinator', 'coord:50051', '--agent-id', 'a-1', '--tasks', 'http, sleep', '--capacity', '4', '--pre-dispatch-queue', '0'],
      captured.io,
      { modules },
    );
    await captured.stopAsked;
    expect(seen.agentOverrides).toEqual({ coordinator: 'coord:50051', agentId: 'a-1', tasks: ['http', 'sleep'], capacity: 4, preDispatchQueue: 0 });
    expect(seen.agentEnv).toEqual({ KAIROS_AGENT_CAPACITY: '2' });
    captured.requestStop('SIGINT');
    expect(await exit).toBe(0);
    expect(events).toEqual(['agent.start', 'agent.drain']);
  });
});

describe('kairos dev', () => {
  it('starts the coordinator, then an http+sleep agent on its gRPC address, prints the banner, and stops in order', async () => {
    const { modules, events, seen } = fakeModules();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-dev-test-'));
    const captured = capturedIo({ KAIROS_AGENT_TASKS: 'exec', KAIROS_DATA_DIR: dataDir });
    const exit = runCli(['dev'], captured.io, { modules });
    await captured.stopAsked;
    // Poll until the banner is out (the dev tokens are written to disk first).
    for (let i = 0; i < 1_000 && !captured.stdout().includes('Ctrl-C'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(seen.agentOverrides).toEqual({
      coordinator: '127.0.0.1:15051',
      tasks: ['http', 'sleep'],
      capacity: 8,
      execAllow: [],
      token: 'kairos_new-agent',
    });
    // Loopback and authentication, whatever the environment says about KAIROS_INSECURE.
    expect(seen.coordinatorOverrides).toEqual({ host: '127.0.0.1', insecure: false });
    const tokenFile = path.join(dataDir, 'dev-token');
    expect(readFileSync(tokenFile, 'utf8')).toBe('kairos_new-admin\n');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dataDir, 'dev-agent-token')).mode & 0o777).toBe(0o600);
    const banner = captured.stdout();
    expect(banner).toContain('REST API      http://127.0.0.1:18080');
    expect(banner).toContain('gRPC          127.0.0.1:15051');
    // The password is not printed.
    expect(banner).toContain('DATABASE_URL  postgres://postgres:***@127.0.0.1:54000/postgres');
    expect(banner).not.toContain(':pw@');
    expect(banner).toContain("curl -sS -X POST http://127.0.0.1:18080/jobs -H 'content-type: application/json'");
    expect(banner).toContain(`-H "authorization: Bearer $(cat ${tokenFile})"`);
    expect(banner).toContain('The http task refuses every URL until KAIROS_HTTP_ALLOW_HOSTS lists hosts');
    expect(banner).toMatch(/npx kairos --address 127\.0\.0\.1:15051 jobs create --task sleep --payload '\{"seconds":1\}' --run-at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/);

    captured.requestStop();
    expect(await exit).toBe(0);
    expect(events).toEqual([
      'coordinator.start',
      'token.create admin',
      'token.create agent',
      'store.close',
      'agent.start',
      'agent.drain',
      'coordinator.stop',
    ]);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reuses dev tokens that are still valid and replaces the others', async () => {
    const { modules, events, seen } = fakeModules();
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-dev-test-'));
    writeFileSync(path.join(dataDir, 'dev-token'), 'kairos_still-valid\n', { mode: 0o644 });
    writeFileSync(path.join(dataDir, 'dev-agent-token'), 'kairos_revoked\n');
    const captured = capturedIo({ KAIROS_DATA_DIR: dataDir });
    const exit = runCli(['dev'], captured.io, { modules });
    await captured.stopAsked;
    captured.requestStop();
    expect(await exit).toBe(0);
    expect(events.filter((event) => event.startsWith('token.'))).toEqual(['token.create agent']);
    expect(statSync(path.join(dataDir, 'dev-token')).mode & 0o777).toBe(0o600);
    expect((seen.agentOverrides as { token: string }).token).toBe('kairos_new-agent');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('reports a configuration the coordinator rejects as a usage error, before starting anything', async () => {
    const { modules, events } = fakeModules({ badConfig: true });
    const captured = capturedIo();
    const code = await runCli(['dev'], captured.io, { modules });
    expect(code).toBe(2);
    expect(captured.stderr()).toBe('error: invalid configuration: KAIROS_LEASE_MS: Too small: expected number to be >=300\n');
    expect(events).toEqual([]);
  });

  it('stops the coordinator again when the agent cannot start', async () => {
    const { modules, events } = fakeModules({ failAgentStart: true });
    const captured = capturedIo({ KAIROS_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'kairos-dev-test-')) });
    const code = await runCli(['dev'], captured.io, { modules });
    expect(code).toBe(1);
    expect(captured.stderr()).toBe('error: cannot reach coordinator\n');
    expect(events).toEqual(['coordinator.start', 'token.create admin', 'token.create agent', 'store.close', 'coordinator.stop']);
  });

  it('banner: runAt five seconds ahead, no --address for the default port, a valid curl body', () => {
    const banner = devBanner(
      { httpUrl: 'http://127.0.0.1:8080', grpcAddress: '127.0.0.1:50051', databaseUrl: 'postgres://x' },
      new Date('2030-01-01T09:00:00.123Z'),
      'example.test',
      { admin: 'kairos_x', adminFile: '.kairos/dev-token' },
    );
    expect(banner).toContain('The http task may call: example.test.');
    expect(banner).toContain(
      `npx kairos jobs create --task sleep --payload '{"seconds":1}' --run-at 2030-01-01T09:00:05Z`,
    );
    const body = /-d '(.*)'/.exec(banner)?.[1];
    expect(JSON.parse(body ?? '')).toEqual({ task: 'sleep', payload: { seconds: 1 }, runAt: '2030-01-01T09:00:05Z' });
  });
});
