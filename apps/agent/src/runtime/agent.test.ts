/**
 * The main-thread half of the agent against a scripted session channel:
 * what it starts, releases, aborts and reports, message by message.
 */
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { startAgentWith, type AgentInternals, type RunningAgent } from './agent';
import type { AgentOptions } from '../config';
import type { SessionConfig } from '../session/session';
import type { SessionChannel, SessionListeners } from '../session/session-thread';
import { ControlledTask } from '../test-support/controlled-task';
import { EventLog, waitFor } from '../test-support/wait-for';
import { sharedMonotonicMs, type LeaseOffer, type ToSession } from './thread-messages';

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

  /** `startAt` (sharedMonotonicMs): staged, trusted until `trustUntil` (default: a minute after its start). */
  offer(jobId: string, overrides: Partial<LeaseOffer> = {}, startAt?: number, trustUntil = (startAt ?? 0) + 60_000): void {
    this.listeners?.onMessage({
      type: 'offer',
      ...(startAt === undefined ? {} : { staged: { startAt, trustUntil } }),
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

async function setup(options: Partial<AgentOptions> = {}, internals: Pick<AgentInternals, 'startGraceMs'> = {}) {
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
      ...internals,
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
    controlled.finish('a');
    controlled.finish('b', new Error('bad'));
    await log.finished('b');
    expect(channel.types()).toEqual(['started:a', 'started:b', 'outcome:a:succeeded', 'outcome:b:failed']);
  });

  describe('offers beyond the free slots (the handler queue)', () => {
    it('queues a slot-full beyond its capacity and starts each, in arrival order, in the turn a run ends', async () => {
      const { channel, controlled, log } = await setup();
      for (const id of ['a', 'b', 'c', 'd', 'e']) channel.offer(id);
      // Capacity 2 plus a queue of 2: the fifth is one more than the session should ever offer.
      expect(channel.types()).toEqual(['started:a', 'started:b', 'release:e']);
      expect(log.find('assigned', (i) => i.jobId === 'd')).toBeDefined();
      controlled.finish('b');
      await log.finished('b');
      // The outcome and the next start leave together: no message to the session stands between them.
      expect(channel.types().slice(3)).toEqual(['outcome:b:succeeded', 'started:c']);
      controlled.finish('a', new Error('bad'));
      await log.finished('a');
      expect(channel.types().slice(5)).toEqual(['outcome:a:failed', 'started:d']);
      controlled.finish('c');
      controlled.finish('d');
      await log.finished('d');
      expect(channel.types().slice(7)).toEqual(['outcome:c:succeeded', 'outcome:d:succeeded']);
    });

    it('gives back a queued offer once no slot has freed for the grace, never starting it', async () => {
      const { channel, controlled, log } = await setup({}, { startGraceMs: 100 });
      const offeredAt = performance.now();
      for (const id of ['a', 'b', 'stuck']) channel.offer(id);
      await waitFor('the release', () => channel.posted.some((m) => m.type === 'release'));
      expect(performance.now() - offeredAt).toBeGreaterThanOrEqual(99);
      const release = channel.posted.find((m) => m.type === 'release');
      expect(release).toMatchObject({ lease: { jobId: 'stuck', generation: 1n }, reason: 'no free slot: the start queue did not move for 100 ms' });
      controlled.finish('a');
      await log.finished('a');
      expect(log.find('started', (i) => i.jobId === 'stuck')).toBeUndefined();
      expect(channel.types()).toEqual(['started:a', 'started:b', 'release:stuck', 'outcome:a:succeeded']);
    });

    it('a slot freeing within the grace keeps the queue: its offer starts', async () => {
      const { channel, controlled, log } = await setup({}, { startGraceMs: 300 });
      for (const id of ['a', 'b', 'c', 'd']) channel.offer(id);
      controlled.finish('a');
      await log.finished('a');
      await waitFor('c to start', () => log.find('started', (i) => i.jobId === 'c'));
      // d arrived with c; a slot freed since: its deadline moved with it. It starts when b ends.
      controlled.finish('b');
      await log.finished('b');
      expect(channel.types().filter((t) => t.startsWith('release'))).toEqual([]);
      expect(log.find('started', (i) => i.jobId === 'd')).toBeDefined();
    });

    it('drops a queued offer whose lease is lost, and ends one an operator aborts as cancelled, both unstarted', async () => {
      const { channel, log } = await setup();
      for (const id of ['a', 'b', 'lost', 'aborted']) channel.offer(id);
      channel.listeners?.onMessage({ type: 'lost', lease: { jobId: 'lost', generation: 1n }, reason: 'cancelled', source: 'revoke' });
      channel.listeners?.onMessage({ type: 'abort', lease: { jobId: 'aborted', generation: 1n }, source: 'revoke' });
      expect(log.find('lease-lost', (i) => i.jobId === 'lost')).toBeDefined();
      expect(channel.types()).toEqual(['started:a', 'started:b', 'outcome:aborted:cancelled']);
      const outcome = channel.posted.find((m) => m.type === 'outcome');
      expect(outcome).toMatchObject({ error: 'aborted by an operator before it started' });
      expect(log.find('started', (i) => i.jobId === 'lost' || i.jobId === 'aborted')).toBeUndefined();
    });

    it('a drain gives the queued offers back before it tells the session', async () => {
      const { agent, channel, controlled } = await setup();
      for (const id of ['a', 'b', 'c']) channel.offer(id);
      const drained = agent.drain();
      expect(channel.types()).toEqual(['started:a', 'started:b', 'release:c', 'drain']);
      expect(channel.posted[2]).toMatchObject({ reason: 'agent is draining' });
      controlled.finish('a');
      controlled.finish('b');
      await drained;
      expect(channel.types().slice(4)).toEqual(['outcome:a:succeeded', 'outcome:b:succeeded', 'work-done']);
    });
  });

  describe('offers staged ahead of their start (decision 0030)', () => {
    it('starts a staged offer at its start and never before; one whose start has passed starts at once', async () => {
      const { channel, log } = await setup();
      const startAt = sharedMonotonicMs() + 80;
      channel.offer('staged', {}, startAt);
      channel.offer('passed', {}, sharedMonotonicMs() - 5);
      expect(channel.types()).toEqual(['started:passed']);
      expect(log.find('assigned', (i) => i.jobId === 'staged')).toBeDefined();
      await log.wait('started', (i) => i.jobId === 'staged');
      expect(sharedMonotonicMs()).toBeGreaterThanOrEqual(startAt);
      expect(channel.types()).toEqual(['started:passed', 'started:staged']);
    });

    it('takes no slot before its start: an offer due now starts at once, and the staged one waits for the slot after its start', async () => {
      const { channel, controlled, log } = await setup({ capacity: 1 }, { startGraceMs: 60_000 });
      const startAt = sharedMonotonicMs() + 40;
      channel.offer('staged', {}, startAt);
      channel.offer('now');
      expect(channel.types()).toEqual(['started:now']);
      // Its start passes while the one slot is busy: it waits, and starts in the turn the slot frees.
      await waitFor('the staged start to pass', () => sharedMonotonicMs() >= startAt + 20 || undefined);
      expect(channel.types()).toEqual(['started:now']);
      controlled.finish('now');
      await log.wait('started', (i) => i.jobId === 'staged');
      expect(channel.types()).toEqual(['started:now', 'outcome:now:succeeded', 'started:staged']);
    });

    it('a spike staged beyond the slots starts a slot-full on the instant and the rest as slots free, earliest start first', async () => {
      const { channel, controlled, log } = await setup({ capacity: 2 }, { startGraceMs: 60_000 });
      const at = sharedMonotonicMs() + 60;
      // Staged out of start order, and more than the handler queue's limit (two): staged offers do not count against it.
      channel.offer('d', {}, at + 2);
      channel.offer('a', {}, at);
      channel.offer('c', {}, at + 1);
      channel.offer('b', {}, at);
      channel.offer('e', {}, at + 3);
      expect(channel.types()).toEqual([]);
      await log.wait('started', (i) => i.jobId === 'b');
      expect(channel.types()).toEqual(['started:a', 'started:b']);
      for (const [ended, next] of [['a', 'c'], ['b', 'd'], ['c', 'e']] as const) {
        controlled.finish(ended);
        await log.wait('started', (i) => i.jobId === next);
      }
      expect(channel.types().filter((t) => t.startsWith('started'))).toEqual(['started:a', 'started:b', 'started:c', 'started:d', 'started:e']);
      expect(channel.types().filter((t) => t.startsWith('release'))).toEqual([]);
    });

    it('gives a staged offer back once no slot has freed for the grace counted from its start, not from its arrival', async () => {
      const { channel, log } = await setup({ capacity: 1 }, { startGraceMs: 100 });
      channel.offer('busy');
      const startAt = sharedMonotonicMs() + 150;
      channel.offer('stuck', {}, startAt);
      await waitFor('the release', () => channel.posted.some((m) => m.type === 'release'));
      expect(sharedMonotonicMs()).toBeGreaterThanOrEqual(startAt + 99);
      expect(channel.posted.find((m) => m.type === 'release')).toMatchObject({
        lease: { jobId: 'stuck' },
        reason: 'no free slot: the start queue did not move for 100 ms',
      });
      expect(log.find('started', (i) => i.jobId === 'stuck')).toBeUndefined();
    });

    it('a withdrawal gives back an offer not yet started (staged, or queued for a slot) and refuses a started one', async () => {
      const { channel, log } = await setup({ capacity: 1 }, { startGraceMs: 60_000 });
      channel.offer('running');
      channel.offer('queued');
      channel.offer('staged', {}, sharedMonotonicMs() + 60_000);
      for (const jobId of ['staged', 'queued', 'running', 'unknown']) {
        channel.listeners?.onMessage({ type: 'withdraw', lease: { jobId, generation: 1n } });
      }
      expect(channel.posted.slice(1)).toEqual([
        { type: 'release', lease: { jobId: 'staged', generation: 1n }, reason: 'withdrawn before its start (the job was cancelled, paused or edited)' },
        { type: 'release', lease: { jobId: 'queued', generation: 1n }, reason: 'withdrawn before its start (the job was cancelled, paused or edited)' },
        { type: 'withdraw-refused', lease: { jobId: 'running', generation: 1n } },
        { type: 'withdraw-refused', lease: { jobId: 'unknown', generation: 1n } },
      ]);
      expect(log.find('started', (i) => i.jobId !== 'running')).toBeUndefined();
    });

    it('a staged start that passes while another start holds the thread still gets its grace: given back, not stranded', async () => {
      // A handler that holds the thread for 40 ms as it starts (a cold module load, say), then runs on.
      const blocking = () => {
        const until = performance.now() + 40;
        while (performance.now() < until);
        return new Promise<void>(() => undefined);
      };
      const controlled = new ControlledTask();
      const { channel } = await setup({ capacity: 1, tasks: ['controlled', 'blocking'], handlers: { controlled: controlled.handler, blocking } }, { startGraceMs: 100 });
      const at = sharedMonotonicMs() + 30;
      channel.offer('slow', { task: 'blocking' }, at);
      // Its start passes while the slow one's start holds the thread, and the one slot stays busy.
      channel.offer('next', {}, at + 10);
      await waitFor('the release', () => channel.posted.some((m) => m.type === 'release'));
      expect(sharedMonotonicMs()).toBeGreaterThanOrEqual(at + 10 + 99);
      expect(channel.types()).toEqual(['started:slow', 'release:next']);
    });

    it('never starts a staged offer its slot reaches after its trust window: gives it back; a renewal moves the window', async () => {
      const { channel, controlled, log } = await setup({ capacity: 1 }, { startGraceMs: 60_000 });
      channel.offer('busy');
      const startAt = sharedMonotonicMs() + 20;
      channel.offer('expired', {}, startAt, startAt + 30);
      channel.offer('renewed', {}, startAt, startAt + 30);
      channel.listeners?.onMessage({ type: 'trust', leases: [{ lease: { jobId: 'renewed', generation: 1n }, until: startAt + 60_000 }] });
      await waitFor('both trust windows as staged to end', () => sharedMonotonicMs() >= startAt + 40 || undefined);
      controlled.finish('busy');
      await log.wait('started', (i) => i.jobId === 'renewed');
      expect(channel.posted.find((m) => m.type === 'release')).toMatchObject({
        lease: { jobId: 'expired' },
        reason: 'its trust window ended before it could start (the agent was held up)',
      });
      expect(log.find('started', (i) => i.jobId === 'expired')).toBeUndefined();
    });

    it('drops a staged offer whose lease is lost, ends one an operator aborts as cancelled, and a drain gives the rest back, none started', async () => {
      const { agent, channel, log } = await setup();
      const at = sharedMonotonicMs() + 60_000;
      for (const id of ['lost', 'aborted', 'kept']) channel.offer(id, {}, at);
      channel.listeners?.onMessage({ type: 'lost', lease: { jobId: 'lost', generation: 1n }, reason: 'cancelled', source: 'revoke' });
      channel.listeners?.onMessage({ type: 'abort', lease: { jobId: 'aborted', generation: 1n }, source: 'renew-reply' });
      expect(channel.types()).toEqual(['outcome:aborted:cancelled']);
      expect(channel.posted[0]).toMatchObject({ error: 'aborted by an operator before it started' });
      await agent.drain();
      expect(channel.types()).toEqual(['outcome:aborted:cancelled', 'release:kept', 'drain', 'work-done']);
      expect(log.find('started')).toBeUndefined();
    });
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
