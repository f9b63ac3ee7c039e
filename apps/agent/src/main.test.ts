/**
 * The agent process as operators run it (`node dist/main.js`): configuration
 * from the environment, JSON log lines on stdout, and SIGTERM -> drain -> exit 0.
 */
import path from 'node:path';
import { HandlerResult } from '@kairos/proto';
import { assertFreshBuild, DIST, runNode } from './test-support/built-agent';
import { FakeCoordinator } from './test-support/fake-coordinator';
import { waitFor } from './test-support/wait-for';

const MAIN = path.join(DIST, 'main.js');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => assertFreshBuild());

describe('agent process', () => {
  it('drains on SIGTERM: Draining, the running job finishes and is acknowledged, exit 0', async () => {
    const fake = await FakeCoordinator.start();
    cleanups.push(() => fake.stop());
    const agent = runNode([MAIN], {
      KAIROS_COORDINATOR: fake.address,
      KAIROS_AGENT_ID: 'process-agent',
      KAIROS_AGENT_TASKS: 'sleep',
      KAIROS_AGENT_CAPACITY: '2',
      KAIROS_DRAIN_GRACE_MS: '10000',
    });
    cleanups.push(() => agent.kill());
    const stream = await waitFor('the agent to connect', () => (fake.streams[0]?.hello !== undefined ? fake.streams[0] : undefined), {
      timeoutMs: 10_000,
    });
    expect(stream.hello).toMatchObject({ agentId: 'process-agent', tasks: ['sleep'], capacity: 2 });
    stream.assign({ jobId: 'nap', task: 'sleep', payload: { seconds: 0.8 } });
    await waitFor('a heartbeat holding the job', () => stream.heartbeats().some((h) => h.leases.some((l) => l.jobId === 'nap')));
    agent.child.kill('SIGTERM');
    await waitFor('Draining', () => stream.drainingReceived);
    const { code } = await agent.exited;
    expect(code).toBe(0);
    expect(stream.outcomes()).toMatchObject([{ jobId: 'nap', result: HandlerResult.SUCCEEDED }]);
    expect(stream.agentEnded).toBe(true);
    const lines = agent
      .stdout()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { msg: string; agentId?: string });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['agent started', 'signal received: draining', 'drained']));
    expect(lines.every((l) => l.agentId === 'process-agent')).toBe(true);
  });

  it('exits 2 with a message naming the bad variable', async () => {
    const agent = runNode([MAIN], { KAIROS_AGENT_CAPACITY: 'lots' });
    cleanups.push(() => agent.kill());
    const { code } = await agent.exited;
    expect(code).toBe(2);
    expect(agent.stdout()).toMatch(/KAIROS_AGENT_CAPACITY: must be a whole number/);
  });
});
