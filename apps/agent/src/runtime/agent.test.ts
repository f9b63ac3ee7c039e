/**
 * The main-thread half of the agent against a scripted session channel:
 * what it starts, releases, aborts and reports, message by message.
 */
import { pino } from 'pino';
import { startAgentWith, type RunningAgent } from './agent';
import type { AgentOptions } from '../config';
import type { SessionConfig } from '../session/session';
import type { SessionChannel, SessionListeners } from '../session/session-thread';
import { ControlledTask } from '../test-support/controlled-task';
import { EventLog, waitFor } from '../test-support/wait-for';
import type { LeaseOffer, ToSession } from './thread-messages';

class ScriptedChannel implements SessionChannel {
  readonly posted: ToSession[] = [];
  listeners: SessionListeners | undefined;
  config: SessionConfig | undefined;
  disposed = false;

  post(message: ToSession): void {
    this.posted.push(message);
    // Answer the end-of-life messages the way the session does.
    if (message.type === 'work-done') queueMicrotask(() => this.listeners?.onMessage({ type: 'drained', unacked: 0 }));
    if (message.type === 'close') queueMicrotask(() => this.listeners?.onMessage({ type: 'closed' }));
  }

  async dispose(): Promise<void> {
    this.disposed = true;
  }

  offer(jobId: string, overrides: Partial<LeaseOffer> = {}): void {
    this.listeners?.onMessage({
      type: 'offer',
      lease: {
        jobId,
        generation: 1n,
        runId: `run-${jobId}`,
        task: 'controlled',
        payloadJson: '{}',
        attempt: 1,
        maxAttempts: 3,
        timeoutMs: 0,
        scheduledForMs: null,
        ...overrides,
      },
    });
  }

  types(): string[] {
    return this.posted.map((m) => (m.type === 'release' ? `release:${m.lease.jobId}` : m.type === 'outcome' ? `outcome:${m.lease.jobId}:${m.result}` : m.type === 'started' ? `started:${m.lease.jobId}` : m.type));
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Partial<AgentOptions> = {}) {
  const channel = new ScriptedChannel();
  const controlled = new ControlledTask();
  const agent: RunningAgent = await startAgentWith(
    {
      coordinator: '127.0.0.1:1',
      agentId: 'scripted',
      tasks: ['controlled'],
      capacity: 2,
      handlers: { controlled: controlled.handler },
      httpAllowHosts: [],
      execAllow: [],
      drainGraceMs: 5_000,
      logger: pino({ level: 'silent' }),
      ...options,
    },
    {
      connect: (config, listeners) => {
        channel.config = config;
        channel.listeners = listeners;
        return channel;
      },
    },
  );
  cleanups.push(() => agent.close());
  return { agent, channel, controlled, log: new EventLog(agent.events) };
}

describe('agent runtime (main thread)', () => {
  it('hands the session its configuration', async () => {
    const { channel } = await setup({ token: 't', trustMarginMs: 300 });
    expect(channel.config).toMatchObject({
      coordinator: '127.0.0.1:1',
      agentId: 'scripted',
      tasks: ['controlled'],
      capacity: 2,
      token: 't',
      trustMarginMs: 300,
    });
  });

  it('starts offers, reports results, and guards its capacity', async () => {
    const { channel, controlled, log } = await setup();
    channel.offer('a');
    channel.offer('b');
    channel.offer('c'); // one more than the capacity of 2: the session should never do this
    expect(channel.types()).toEqual(['started:a', 'started:b', 'release:c']);
    controlled.finish('a');
    controlled.finish('b', new Error('bad'));
    await log.finished('b');
    expect(channel.types().slice(3).sort()).toEqual(['outcome:a:succeeded', 'outcome:b:failed']);
  });

  it('aborts a run whose lease is lost and reports nothing for it', async () => {
    const { channel, controlled, log } = await setup();
    channel.offer('a');
    channel.listeners?.onMessage({ type: 'lost', lease: { jobId: 'a', generation: 1n }, reason: 'trust-window', source: 'trust-window' });
    expect(controlled.run('a').abortReason).toBeDefined();
    expect((await log.finished('a')).result).toBe('lease-lost');
    expect(log.find('lease-lost')).toEqual({ jobId: 'a', generation: 1n, reason: 'trust-window', source: 'trust-window' });
    expect(channel.types()).toEqual(['started:a']);
  });

  it('while draining, releases offers instead of starting them and waits for running runs', async () => {
    const { agent, channel, controlled, log } = await setup();
    channel.offer('running');
    const drained = agent.drain();
    channel.offer('late');
    expect(channel.types()).toEqual(['started:running', 'drain', 'release:late']);
    expect(log.find('assigned', (i) => i.jobId === 'late')).toBeDefined();
    expect(log.find('started', (i) => i.jobId === 'late')).toBeUndefined();
    controlled.finish('running');
    await drained;
    expect(channel.types().slice(3)).toEqual(['outcome:running:succeeded', 'work-done']);
    expect(channel.disposed).toBe(true);
    expect(log.find('drained')).toEqual({ unackedOutcomes: 0 });
    await agent.drain(); // idempotent once stopped
  });

  it('when the session thread fails, aborts every run and reports nothing more', async () => {
    const { channel, controlled, log } = await setup();
    channel.offer('a');
    channel.listeners?.onFailure(new Error('worker crashed'));
    expect((await log.finished('a')).result).toBe('lease-lost');
    expect(controlled.run('a').abortReason).toBeDefined();
    expect(log.find('failed')?.error.message).toBe('worker crashed');
    await waitFor('the late settle', () => controlled.run('a').settled);
    expect(channel.types()).toEqual(['started:a']);
  });

  it('close() aborts every run without reporting and stops the session', async () => {
    const { agent, channel, controlled, log } = await setup();
    channel.offer('a');
    await agent.close();
    expect((await log.finished('a')).result).toBe('cancelled');
    expect(controlled.run('a').abortReason).toBeDefined();
    expect(channel.types()).toEqual(['started:a', 'close']);
    expect(channel.disposed).toBe(true);
  });
});
