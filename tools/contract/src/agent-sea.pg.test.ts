/**
 * The agent as one Linux executable (tools/scripts/build-agent-sea.mjs: a
 * Node.js single executable application on the current LTS Node). Copied
 * alone into an empty folder, run with an empty environment besides its own
 * variables (no Node on PATH, no NODE_PATH), it connects to a coordinator,
 * runs its session in a worker thread as the npm-installed agent does, runs
 * a job, and drains on SIGTERM: exit 0 once its running job has finished.
 */
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  restClient,
  spawnProgram,
  startHeldCalls,
  type CoordinatorProcess,
} from '@kairos/testing';
import { runsAJobThenDrains, startFleet, type Fleet } from './agent-drill';
import { clientEnv, expectPassed, runToEnd } from './client-env';

describe('the agent as a single executable', () => {
  let fleet: Fleet;
  let scratch: string;
  let executable: string;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let agentToken: string;

  beforeAll(async () => {
    const { nodeLts } = await clientEnv();
    scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-agent-sea-'));
    const built = await runToEnd(process.execPath, ['tools/scripts/build-agent-sea.mjs', '--node', nodeLts, '--out', path.join(scratch, 'build')]);
    expectPassed('build-agent-sea', built);
    // Alone in a folder of its own: nothing beside it to load.
    executable = path.join(scratch, 'bin', 'kairos-agent');
    await runToEnd('mkdir', ['-p', path.dirname(executable)]);
    copyFileSync(built.output.trim().split('\n').pop()!, executable);
    rmSync(path.join(scratch, 'build'), { recursive: true, force: true });
    fleet = await startFleet();
    ({ coordinator, api, agentToken } = fleet);
  }, 300_000);
  afterAll(async () => {
    await fleet?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test('it runs a job, reports ready, then drains on SIGTERM', async () => {
    expect(statSync(executable).mode & 0o111).not.toBe(0);
    const held = await startHeldCalls();
    try {
      // Only what a systemd unit would give it: no PATH to a Node, no NODE_PATH, nothing inherited.
      const agent = spawnProgram('sea-agent', executable, [], {
        ...Object.fromEntries(Object.keys(process.env).map((name) => [name, undefined])),
        PATH: '/usr/bin:/bin',
        HOME: scratch,
        KAIROS_COORDINATOR: coordinator.grpcAddress,
        KAIROS_TOKEN: agentToken,
        KAIROS_AGENT_ID: 'single-file',
        KAIROS_AGENT_TASKS: 'sleep,http',
        KAIROS_HTTP_ALLOW_HOSTS: `127.0.0.1:${held.port}`,
        KAIROS_DRAIN_GRACE_MS: '20000',
        KAIROS_AGENT_HEALTH_PORT: '0',
        KAIROS_AGENT_HEALTH_HOST: '127.0.0.1',
      });
      expect((await agent.waitForLine((line) => line.msg === 'agent started', 30_000)).thread).toBe('worker');
      await runsAJobThenDrains({
        agent,
        api,
        held,
        workerId: 'single-file',
        whileConnected: async () => {
          const { healthPort } = await agent.waitForLine((line) => line.msg === 'health endpoint listening (/livez, /readyz)');
          expect((await fetch(`http://127.0.0.1:${Number(healthPort)}/readyz`)).status).toBe(200);
        },
      });
    } finally {
      await held.close();
    }
  }, 90_000);
});
