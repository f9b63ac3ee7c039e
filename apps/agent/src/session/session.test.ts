/**
 * The agent against a scripted coordinator over real gRPC (127.0.0.1). The
 * session runs in-thread behind a MessageChannel (same messages as the worker
 * thread), so these tests need no build; session-worker.test.ts covers the
 * real worker thread.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HandlerResult, LeaseLostReason, OutcomeAckResult, type LeaseRef } from '@kairos/proto';
import { pino } from 'pino';
import { startAgentWith, type AgentInternals, type RunningAgent } from '../runtime/agent';
import { AGENT_VERSION, type AgentOptions } from '../config';
import { TaskAbortedError } from '../sdk';
import { ControlledTask } from '../test-support/controlled-task';
import { FakeCoordinator, type FakeCoordinatorOptions, type FakeStream } from '../test-support/fake-coordinator';
import { EventLog, waitFor } from '../test-support/wait-for';
import { OUTCOME_HOLD_MAX_MS } from './session';
import { STAGE_AHEAD_MS } from '../runtime/thread-messages';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface SetupOptions {
  readonly agent?: Partial<AgentOptions>;
  readonly fake?: FakeCoordinatorOptions;
  readonly internals?: Pick<AgentInternals, 'startGraceMs'>;
}

async function setup(options: SetupOptions = {}) {
  const fake = await FakeCoordinator.start(options.fake);
  cleanups.push(() => fake.stop());
  const controlled = new ControlledTask();
  const agent: RunningAgent = await startAgentWith(
    {
      coordinator: fake.address,
      agentId: 'agent-under-test',
      tasks: ['controlled', 'sleep'],
      capacity: 4,
      handlers: { controlled: controlled.handler },
      httpAllowHosts: [],
      execAllow: [],
      drainGraceMs: 5_000,
      logger: pino({ level: 'silent' }),
      ...options.agent,
    },
    { thread: 'inline', flushTimeoutMs: 2_000, ...options.internals },
  );
  cleanups.push(() => agent.close());
  const log = new EventLog(agent.events);
  await log.wait('connected');
  return { fake, agent, log, controlled, stream: fake.latest };
}

const byJob = (a: { jobId: string }, b: { jobId: string }) => a.jobId.localeCompare(b.jobId);
const refs = (leases: LeaseRef[]) => leases.map((l) => ({ jobId: l.jobId, generation: l.leaseGeneration })).sort(byJob);

/** Waits until `count` more heartbeats arrived on the stream. */
async function heartbeatsPass(stream: FakeStream, count = 2): Promise<void> {
  const target = stream.heartbeats().length + count;
  await waitFor(`${count} more heartbeats`, () => stream.heartbeats().length >= target);
}

describe('agent session', () => {
  it('says Hello first, is welcomed, and heartbeats from seq 1 even with nothing held', async () => {
    const { fake, log, stream } = await setup({ agent: { token: 'agent-token', capacity: 3 } });
    expect(stream.received[0]?.message.kind.case).toBe('hello');
    expect(stream.hello).toMatchObject({
      agentId: 'agent-under-test',
      tasks: ['controlled', 'sleep'],
      capacity: 3,
      heldLeases: [],
      version: AGENT_VERSION,
    });
    expect(stream.metadata.get('authorization')).toEqual(['Bearer agent-token']);
    expect(log.find('connected')).toEqual({ coordinatorId: fake.coordinatorId, leaseMs: 600, heartbeatIntervalMs: 200 });
    await waitFor('two heartbeats', () => stream.heartbeats().length >= 2);
    expect(stream.heartbeats().map((h) => h.seq).slice(0, 2)).toEqual([1n, 2n]);
    expect(stream.heartbeats()[0]?.leases).toEqual([]);
  });

  it('runs an assignment and re-sends its outcome until it is acknowledged', async () => {
    const { fake, log, controlled, stream } = await setup();
    // Withhold the ack of the first send; acknowledge the re-send.
    fake.ack = (outcome, s) => (s.outcomeSends(outcome.jobId) < 2 ? 'withhold' : OutcomeAckResult.RECORDED);
    const scheduledFor = new Date('2030-01-02T03:04:05Z');
    stream.assign({ jobId: 'j1', task: 'controlled', generation: 9n, attempt: 2, maxAttempts: 4, payload: { invoice: 77 }, scheduledFor });
    await log.wait('started', (i) => i.jobId === 'j1');
    const run = controlled.run('j1');
    expect(run.payload).toEqual({ invoice: 77 });
    expect(run.ctx).toMatchObject({ jobId: 'j1', runId: 'run-j1', attempt: 2, maxAttempts: 4, fencingToken: 9n, scheduledFor });
    run.finish();
    const acked = await log.wait('outcome-acked', (i) => i.jobId === 'j1');
    expect(acked).toEqual({ jobId: 'j1', generation: 9n, result: 'RECORDED' });
    expect(stream.outcomeSends('j1')).toBe(2);
    expect(stream.outcomes()[0]).toMatchObject({ jobId: 'j1', leaseGeneration: 9n, result: HandlerResult.SUCCEEDED, error: '' });
    expect(stream.outcomes()[0]?.finishedAt).toBeDefined();
    expect(log.find('finished', (i) => i.jobId === 'j1')?.result).toBe('succeeded');
    // Once acknowledged it is neither renewed nor reported again.
    await heartbeatsPass(stream);
    expect(stream.heartbeats().at(-1)?.leases).toEqual([]);
    expect(stream.outcomeSends('j1')).toBe(2);
  });

  it('lists every held lease in each heartbeat, finished-but-unacked included, with seq growing by one', async () => {
    const { fake, log, controlled, stream } = await setup();
    fake.ack = () => 'withhold';
    stream.assign({ jobId: 'running', task: 'controlled' }, { jobId: 'done', task: 'controlled', generation: 3n });
    await log.wait('started', (i) => i.jobId === 'done');
    controlled.finish('done', new Error('card declined'));
    await waitFor('the failed outcome', () => stream.outcomes().find((o) => o.jobId === 'done'));
    expect(stream.outcomes()[0]).toMatchObject({ result: HandlerResult.FAILED, error: 'card declined' });
    const afterOutcome = stream.received.findIndex((r) => r.message.kind.case === 'outcomes');
    const heartbeat = await waitFor('a heartbeat after the outcome', () =>
      stream.received.slice(afterOutcome).find((r) => r.message.kind.case === 'heartbeat'),
    );
    const leases = heartbeat.message.kind.case === 'heartbeat' ? heartbeat.message.kind.value.leases : [];
    expect(refs(leases)).toEqual([
      { jobId: 'done', generation: 3n },
      { jobId: 'running', generation: 1n },
    ]);
    const seqs = stream.heartbeats().map((h) => h.seq);
    expect(seqs).toEqual(seqs.map((_, i) => BigInt(i + 1)));
  });

  it('aborts the handler when a renew reply says the lease is lost, and reports nothing', async () => {
    const { fake, log, controlled, stream } = await setup();
    stream.assign({ jobId: 'doomed', task: 'controlled', generation: 5n });
    await log.wait('started', (i) => i.jobId === 'doomed');
    fake.renew = (lease) =>
      lease.jobId === 'doomed' ? { kind: 'lost', reason: LeaseLostReason.STALE_GENERATION } : { kind: 'held', remainingMs: 600 };
    const lost = await log.wait('lease-lost', (i) => i.jobId === 'doomed');
    expect(lost).toEqual({ jobId: 'doomed', generation: 5n, reason: 'stale-generation', source: 'renew-reply' });
    expect((await log.finished('doomed')).result).toBe('lease-lost');
    expect(controlled.run('doomed').abortReason).toBeInstanceOf(TaskAbortedError);
    expect((controlled.run('doomed').abortReason as TaskAbortedError).kind).toBe('lease-lost');
    await heartbeatsPass(stream);
    expect(stream.outcomes()).toEqual([]);
    expect(stream.heartbeats().at(-1)?.leases).toEqual([]);
  });

  it('fences itself when renew replies stop: the handler is aborted once the trust window runs out', async () => {
    const { fake, log, controlled, stream } = await setup();
    fake.replyToHeartbeats = false;
    await waitFor('a first heartbeat', () => stream.heartbeats().length >= 1);
    // The assignment is anchored at the newest heartbeat the coordinator had received.
    const anchorArrivedAt = stream.heartbeatTimes().at(-1)!;
    const assignedAt = performance.now();
    stream.assign({ jobId: 'quiet', task: 'controlled' });
    const lost = await log.wait('lease-lost', (i) => i.jobId === 'quiet', { timeoutMs: 3_000 });
    const lostAt = log.events.find((e) => e.name === 'lease-lost')?.at ?? 0;
    expect(lost).toMatchObject({ reason: 'trust-window', source: 'trust-window' });
    // Trusted for lease_remaining_ms (600) minus the margin (200) from the anchor heartbeat's
    // send time (just before it arrived at the fake), never from a later moment.
    expect(lostAt - anchorArrivedAt).toBeGreaterThanOrEqual(390);
    expect(lostAt - assignedAt).toBeLessThan(1_500);
    expect((controlled.run('quiet').abortReason as TaskAbortedError).kind).toBe('lease-lost');
    // The aborted run is still reported, as CANCELLED: the coordinator's fence decides
    // whether it counts (lease still current) or is rejected as stale (job moved on).
    await waitFor('the self-fenced outcome', () => stream.outcomes().some((o) => o.jobId === 'quiet'));
    expect(stream.outcomes()).toMatchObject([{ jobId: 'quiet', result: HandlerResult.CANCELLED }]);
    expect(stream.outcomes()[0]?.error).toContain('self-fenced');
  });

  it('anchors an assignment at the heartbeat the coordinator had seen, so a slow delivery cannot stretch trust', async () => {
    // No database clock: no extra heartbeats after Welcome, so heartbeat 1 is ~200 ms old when the assignment comes.
    const { fake, log, stream } = await setup({ fake: { dbClock: false } });
    fake.replyToHeartbeats = false;
    await waitFor('three heartbeats', () => stream.heartbeats().length >= 3, { timeoutMs: 3_000 });
    const oldest = stream.heartbeats()[0]!.seq;
    // As if the claim happened right after heartbeat 1 and the assignment spent ~400 ms in transit:
    // 600 ms lease − 200 ms margin from heartbeat 1's send time leaves nothing to trust now.
    stream.assign({ jobId: 'delayed', task: 'controlled', anchorSeq: oldest });
    // Held back, never started; no renewal answers, so it is released once its lease is over.
    const released = await log.wait('released', (i) => i.jobId === 'delayed', { timeoutMs: 3_000 });
    expect(String(released.reason)).toContain('no renewal confirmed it');
    expect(log.find('started')).toBeUndefined();
    await waitFor('the Release', () => stream.releases().some((r) => r.jobId === 'delayed'));
  });

  // Chaos finding 9: after a database pause, claims anchored before the pause were released
  // as "too short to trust" although the lease in the database was fresh.
  it('holds back an assignment it cannot anchor and starts it once the renewal of an extra heartbeat confirms it', async () => {
    // No scheduled heartbeat within the test: only the extra one can confirm.
    // No database clock: no clock-reading heartbeats after Welcome either.
    const { log, controlled, stream } = await setup({ fake: { heartbeatIntervalMs: 60_000, leaseMs: 10_000, dbClock: false } });
    stream.assign({ jobId: 'after-pause', task: 'controlled', anchorSeq: 999n });
    await log.wait('started', (i) => i.jobId === 'after-pause');
    expect(stream.heartbeats()).toHaveLength(1);
    expect(refs(stream.heartbeats()[0]!.leases)).toEqual([{ jobId: 'after-pause', generation: 1n }]);
    expect(log.find('released')).toBeUndefined();
    controlled.finish('after-pause');
    expect((await log.finished('after-pause')).result).toBe('succeeded');
    await log.wait('outcome-acked', (i) => i.jobId === 'after-pause');
  });

  it('releases a held-back assignment that no renewal confirms within its lease, without starting it', async () => {
    const { fake, log, stream } = await setup({ fake: { heartbeatIntervalMs: 60_000, dbClock: false } });
    fake.replyToHeartbeats = false;
    stream.assign({ jobId: 'unconfirmed', task: 'controlled', anchorSeq: 999n });
    const released = await log.wait('released', (i) => i.jobId === 'unconfirmed', { timeoutMs: 3_000 });
    expect(String(released.reason)).toContain('no renewal confirmed it');
    expect(stream.heartbeats()).toHaveLength(1);
    expect(log.find('started')).toBeUndefined();
    await waitFor('the Release', () => stream.releases().some((r) => r.jobId === 'unconfirmed'));
  });

  it('answers a lost renewal of a held-back assignment by forgetting it, never starting it', async () => {
    const { fake, log, stream } = await setup({ fake: { heartbeatIntervalMs: 60_000 } });
    fake.renew = () => ({ kind: 'lost', reason: LeaseLostReason.EXPIRED });
    stream.assign({ jobId: 'expired-meanwhile', task: 'controlled', anchorSeq: 999n });
    await waitFor('the extra heartbeat', () => stream.heartbeats().length === 1);
    // The reply saying "lost" went out before the stream fails; the next Hello must not list the lease.
    stream.fail();
    const second = await waitFor('a second stream', () => (fake.streams[1]?.hello !== undefined ? fake.streams[1] : undefined));
    expect(second.hello?.heldLeases).toEqual([]);
    expect(log.find('started')).toBeUndefined();
    expect(log.find('released')).toBeUndefined();
  });

  it('keeps a lease alive as long as renewals arrive, anchored at the heartbeat send time', async () => {
    const { log, controlled, stream } = await setup();
    stream.assign({ jobId: 'steady', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'steady');
    // Well past the initial 400 ms window: only renewals keep it.
    await heartbeatsPass(stream, 5);
    expect(log.find('lease-lost')).toBeUndefined();
    controlled.finish('steady');
    expect((await log.finished('steady')).result).toBe('succeeded');
  });

  it('aborts at once on a Revoke that takes the lease away, and reports nothing', async () => {
    const { log, controlled, stream } = await setup();
    stream.assign({ jobId: 'r1', task: 'controlled', generation: 2n });
    await log.wait('started', (i) => i.jobId === 'r1');
    stream.revoke([{ jobId: 'r1', generation: 2n }], LeaseLostReason.EXPIRED);
    expect(await log.wait('lease-lost', (i) => i.jobId === 'r1')).toMatchObject({ reason: 'expired', source: 'revoke' });
    expect(controlled.run('r1').abortReason).toBeDefined();
    await heartbeatsPass(stream);
    expect(stream.outcomes()).toEqual([]);
  });

  describe("an operator's abort", () => {
    it('Revoke CANCELLED: signals the handler, keeps the lease until it stops, then reports CANCELLED', async () => {
      const { log, controlled, stream } = await setup();
      stream.assign({ jobId: 'a1', task: 'controlled', generation: 4n, payload: { ignoreSignal: true } });
      await log.wait('started', (i) => i.jobId === 'a1');
      stream.revoke([{ jobId: 'a1', generation: 4n }], LeaseLostReason.CANCELLED);
      expect(await log.wait('abort-requested', (i) => i.jobId === 'a1')).toMatchObject({ generation: 4n, source: 'revoke' });
      expect((controlled.run('a1').abortReason as TaskAbortedError).kind).toBe('aborted');
      // The handler has not stopped: the lease is still listed, nothing is reported.
      await heartbeatsPass(stream);
      expect(refs(stream.heartbeats().at(-1)?.leases ?? [])).toEqual([{ jobId: 'a1', generation: 4n }]);
      expect(stream.outcomes()).toEqual([]);
      expect(log.find('lease-lost')).toBeUndefined();
      controlled.finish('a1', new Error('interrupted'));
      await log.wait('outcome-acked', (i) => i.jobId === 'a1');
      expect(stream.outcomes()).toEqual([
        expect.objectContaining({ jobId: 'a1', leaseGeneration: 4n, result: HandlerResult.CANCELLED, error: 'aborted by an operator' }),
      ]);
    });

    it('a handler that ignores its signal is reported CANCELLED once the abort grace has passed', async () => {
      const { log, controlled, stream } = await setup({ agent: { abortGraceMs: 300 } });
      stream.assign({ jobId: 'deaf', task: 'controlled', payload: { ignoreSignal: true } });
      await log.wait('started', (i) => i.jobId === 'deaf');
      stream.revoke([{ jobId: 'deaf', generation: 1n }], LeaseLostReason.CANCELLED);
      await log.wait('outcome-acked', (i) => i.jobId === 'deaf');
      expect(stream.outcomes()[0]).toMatchObject({
        result: HandlerResult.CANCELLED,
        error: 'aborted by an operator; the handler did not stop within 300 ms',
      });
      expect(controlled.run('deaf').settled).toBe(false);
    });

    it('a handler that finishes its work despite the abort is reported SUCCEEDED', async () => {
      const { log, controlled, stream } = await setup();
      stream.assign({ jobId: 'done-anyway', task: 'controlled', payload: { ignoreSignal: true } });
      await log.wait('started', (i) => i.jobId === 'done-anyway');
      stream.revoke([{ jobId: 'done-anyway', generation: 1n }], LeaseLostReason.CANCELLED);
      await log.wait('abort-requested', (i) => i.jobId === 'done-anyway');
      controlled.finish('done-anyway');
      await log.wait('outcome-acked', (i) => i.jobId === 'done-anyway');
      expect(stream.outcomes()[0]).toMatchObject({ result: HandlerResult.SUCCEEDED });
    });

    it('learns the abort from renewals too (a missed Revoke), once, however many renewals repeat it', async () => {
      const { fake, log, stream } = await setup();
      let aborted = false;
      fake.renew = () => ({ kind: 'held', remainingMs: fake.leaseMs, abortRequested: aborted });
      stream.assign({ jobId: 'quietly', task: 'controlled', generation: 7n });
      await log.wait('started', (i) => i.jobId === 'quietly');
      aborted = true;
      expect(await log.wait('abort-requested', (i) => i.jobId === 'quietly')).toMatchObject({ source: 'renew-reply' });
      await log.wait('outcome-acked', (i) => i.jobId === 'quietly');
      expect(stream.outcomes()).toEqual([expect.objectContaining({ jobId: 'quietly', result: HandlerResult.CANCELLED })]);
      expect(log.events.filter((e) => e.name === 'abort-requested')).toHaveLength(1);
    });

    it('an assignment aborted before a renewal confirmed it is reported CANCELLED and never started', async () => {
      const { fake, log, stream } = await setup({ fake: { heartbeatIntervalMs: 60_000 } });
      fake.renew = () => ({ kind: 'held', remainingMs: fake.leaseMs, abortRequested: true });
      stream.assign({ jobId: 'never-started', task: 'controlled', anchorSeq: 999n });
      await log.wait('outcome-acked', (i) => i.jobId === 'never-started');
      expect(stream.outcomes()[0]).toMatchObject({ result: HandlerResult.CANCELLED, error: 'aborted by an operator before it started' });
      expect(log.find('started')).toBeUndefined();
    });
  });

  it('reports TIMED_OUT when timeout_ms passes, also for a handler that ignores its signal', async () => {
    const { log, controlled, stream } = await setup();
    stream.assign(
      { jobId: 'slow', task: 'sleep', payload: { seconds: 30 }, timeoutMs: 150 },
      { jobId: 'stubborn', task: 'controlled', payload: { ignoreSignal: true }, timeoutMs: 150 },
    );
    await waitFor('both outcomes', () => stream.outcomes().length >= 2);
    for (const outcome of stream.outcomes()) {
      expect(outcome).toMatchObject({ result: HandlerResult.TIMED_OUT, error: 'timed out after 150 ms' });
    }
    await log.wait('outcome-acked', (i) => i.jobId === 'stubborn');
    // The stubborn handler is still running; its late result changes nothing.
    expect(controlled.run('stubborn').settled).toBe(false);
    expect((controlled.run('stubborn').abortReason as TaskAbortedError).kind).toBe('timeout');
    controlled.finish('stubborn');
    await heartbeatsPass(stream);
    expect(stream.outcomes()).toHaveLength(2);
  });

  it('reconnects after the stream drops: re-announces held leases and re-sends unacked outcomes', async () => {
    const { fake, log, controlled, stream } = await setup();
    fake.ack = () => 'withhold';
    stream.assign({ jobId: 'long', task: 'controlled' }, { jobId: 'finished', task: 'controlled', generation: 2n });
    await log.wait('started', (i) => i.jobId === 'finished');
    controlled.finish('finished');
    await waitFor('the first outcome', () => stream.outcomes().length === 1);
    // Unacked on the first stream; the next coordinator acknowledges whatever reaches it.
    fake.ack = () => OutcomeAckResult.RECORDED;
    stream.fail();
    await log.wait('disconnected');
    const second = await waitFor('a second stream', () => (fake.streams[1]?.hello !== undefined ? fake.streams[1] : undefined));
    expect(refs(second.hello?.heldLeases ?? [])).toEqual([
      { jobId: 'finished', generation: 2n },
      { jobId: 'long', generation: 1n },
    ]);
    await waitFor('the outcome re-sent on the new stream', () => second.outcomes().find((o) => o.jobId === 'finished'));
    await log.wait('outcome-acked', (i) => i.jobId === 'finished');
    await waitFor('heartbeats on the new stream', () => second.heartbeats().length >= 2);
    expect(second.heartbeats()[0]?.seq).toBe(1n);
    // The running handler survived the reconnect and reports on the new stream.
    expect(controlled.run('long').abortReason).toBeUndefined();
    controlled.finish('long');
    await log.wait('outcome-acked', (i) => i.jobId === 'long');
    expect(second.outcomes().map((o) => o.jobId).sort()).toEqual(['finished', 'long']);
    expect(log.find('lease-lost')).toBeUndefined();
  });

  it('applies the seq-0 renew reply to Hello: a lease lost while disconnected is aborted', async () => {
    const { fake, log, controlled, stream } = await setup();
    stream.assign({ jobId: 'gone', task: 'controlled', generation: 6n }, { jobId: 'kept', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'kept');
    // The next coordinator finds that 'gone' was re-claimed meanwhile.
    fake.renew = (lease) =>
      lease.jobId === 'gone' ? { kind: 'lost', reason: LeaseLostReason.STALE_GENERATION } : { kind: 'held', remainingMs: 600 };
    stream.fail();
    const lost = await log.wait('lease-lost', (i) => i.jobId === 'gone');
    expect(lost).toMatchObject({ generation: 6n, reason: 'stale-generation', source: 'renew-reply' });
    const second = fake.latest;
    expect(second.index).toBe(1);
    // It was answered by the reply to Hello (seq 0), before any heartbeat of the new stream.
    const replyToHello = second.sent.find((s) => s.message.kind?.case === 'renewReply');
    expect(replyToHello?.message.kind?.value).toMatchObject({ seq: 0n });
    expect(controlled.run('gone').abortReason).toBeDefined();
    expect(controlled.run('kept').abortReason).toBeUndefined();
  });

  it('runs the built-in http task end to end with the fencing token header', async () => {
    const seen: Record<string, string | string[] | undefined>[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;
    const { log, stream } = await setup({ agent: { tasks: ['http'], httpAllowHosts: [`127.0.0.1:${port}`] } });
    stream.assign({ jobId: 'hook', task: 'http', generation: 12n, attempt: 3, payload: { url: `http://127.0.0.1:${port}/hook`, body: { a: 1 } } });
    await log.wait('outcome-acked', (i) => i.jobId === 'hook');
    expect(stream.outcomes()).toMatchObject([{ jobId: 'hook', result: HandlerResult.SUCCEEDED }]);
    expect(seen[0]).toMatchObject({ 'x-kairos-job-id': 'hook', 'x-kairos-attempt': '3', 'x-kairos-fencing-token': '12' });
  });

  it('fences itself while the coordinator is unreachable', async () => {
    const { fake, log, controlled, stream } = await setup();
    stream.assign({ jobId: 'stranded', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'stranded');
    await heartbeatsPass(stream, 3); // renewed past its first window
    expect(log.find('lease-lost')).toBeUndefined();
    await fake.stop();
    await log.wait('disconnected');
    expect(await log.wait('lease-lost', (i) => i.jobId === 'stranded', { timeoutMs: 3_000 })).toMatchObject({ source: 'trust-window' });
    expect((controlled.run('stranded').abortReason as TaskAbortedError).kind).toBe('lease-lost');
  });

  describe('pre-dispatched assignments and the start queue', () => {
    it('reads the database clock eight more times right after a Welcome that carries it, then starts on the instant, never before', async () => {
      // One heartbeat a minute: without the extra ones the test would wait a minute for its second reading.
      const { log, stream } = await setup({ fake: { leaseMs: 180_000, heartbeatIntervalMs: 60_000 } });
      await waitFor('eight clock-reading heartbeats', () => stream.heartbeats().length >= 8);
      expect(stream.heartbeats().map((h) => h.seq).slice(0, 8)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
      const at = Date.now() + 50;
      stream.assign({ jobId: 'on-time', task: 'controlled', startAtMs: at });
      await log.wait('started', (i) => i.jobId === 'on-time');
      expect(Date.now()).toBeGreaterThanOrEqual(at);
    });

    it('hands a lease to the handler thread STAGE_AHEAD_MS before its start; a withdrawal is answered there until it starts', async () => {
      const { log, controlled, stream } = await setup({ internals: { startGraceMs: 60_000 } });
      stream.assign({ jobId: 'running', task: 'controlled' });
      await log.wait('started', (i) => i.jobId === 'running');
      stream.assign({ jobId: 'far', task: 'controlled', startAtMs: Date.now() + STAGE_AHEAD_MS + 1_500 });
      stream.assign({ jobId: 'near', task: 'controlled', startAtMs: Date.now() + STAGE_AHEAD_MS / 2 });
      // Within the window on arrival: staged at once (the handler thread's 'assigned'), to start on its instant.
      await log.wait('assigned', (i) => i.jobId === 'near');
      expect(log.find('started', (i) => i.jobId === 'near')).toBeUndefined();
      stream.withdraw([{ jobId: 'near' }, { jobId: 'far' }, { jobId: 'running' }]);
      await waitFor('the answers', () => (stream.withdrawRefusals().length > 0 && stream.releases().length >= 2) || undefined);
      // Not started: given back, by the session (far) and by the handler thread (near). Started: kept.
      expect(stream.releases().map((l) => l.jobId).sort()).toEqual(['far', 'near']);
      expect(new Set(stream.releaseReasons())).toEqual(new Set(['withdrawn before its start (the job was cancelled, paused or edited)']));
      expect(stream.withdrawRefusals().map((l) => l.jobId)).toEqual(['running']);
      expect(log.find('assigned', (i) => i.jobId === 'far')).toBeUndefined();
      controlled.finish('running');
      await log.wait('outcome-acked', (i) => i.jobId === 'running');
      await heartbeatsPass(stream, 1);
      expect(log.find('started', (i) => i.jobId === 'near')).toBeUndefined();
      expect(refs(stream.heartbeats().at(-1)?.leases ?? [])).toEqual([]);
    });

    it('does not hold outcomes for staged leases whose start is still ahead', async () => {
      const { log, controlled, stream } = await setup({ agent: { capacity: 1, preDispatchQueue: 3 }, internals: { startGraceMs: 60_000 } });
      stream.assign({ jobId: 'now', task: 'controlled' });
      await log.wait('started', (i) => i.jobId === 'now');
      const at = Date.now() + STAGE_AHEAD_MS - 50;
      stream.assign({ jobId: 's1', task: 'controlled', startAtMs: at }, { jobId: 's2', task: 'controlled', startAtMs: at }, { jobId: 's3', task: 'controlled', startAtMs: at });
      await log.wait('assigned', (i) => i.jobId === 's3');
      // Three staged beyond the one slot: before their start they wait for no slot, so the outcome leaves at once.
      controlled.finish('now');
      await log.wait('outcome-acked', (i) => i.jobId === 'now');
      expect(log.find('started', (i) => i.jobId === 's1')).toBeUndefined();
      await log.wait('started', (i) => i.jobId === 's1');
    });

    it('starts one whose start has already passed on arrival at once', async () => {
      // With a 60 s grace, a start put off until the grace ends would time this test out.
      const { log, stream } = await setup({ internals: { startGraceMs: 60_000 } });
      stream.assign({ jobId: 'late', task: 'controlled', startAtMs: Date.now() - 1_000 });
      await log.wait('started', (i) => i.jobId === 'late');
      expect(stream.releases()).toEqual([]);
    });

    it('holds pre-dispatched leases beyond its capacity and starts each as a slot frees, earliest start first', async () => {
      // A start queue that never gives up (60 s): this test is about order, not the grace.
      const { log, controlled, stream } = await setup({ agent: { capacity: 1, preDispatchQueue: 2 }, internals: { startGraceMs: 60_000 } });
      const at = Date.now() + 300;
      stream.assign(
        { jobId: 'q3', task: 'controlled', startAtMs: at + 2 },
        { jobId: 'q1', task: 'controlled', startAtMs: at },
        { jobId: 'q2', task: 'controlled', startAtMs: at + 1 },
        { jobId: 'q4', task: 'controlled', startAtMs: at + 3 },
      );
      // Capacity 1 + queue 2: the fourth is refused on arrival.
      await waitFor('a release', () => stream.releases().length >= 1);
      expect(stream.releases().map((r) => r.jobId)).toEqual(['q4']);
      expect(log.find('released', (i) => i.jobId === 'q4')?.reason).toBe('over capacity and start queue (3)');
      // The three held are renewed like any lease while they wait.
      await heartbeatsPass(stream, 1);
      expect(refs(stream.heartbeats().at(-1)?.leases ?? []).map((l) => l.jobId)).toEqual(['q1', 'q2', 'q3']);
      for (const [jobId, next] of [['q1', 'q2'], ['q2', 'q3']] as const) {
        await log.wait('started', (i) => i.jobId === jobId);
        // One slot: the next waits, started only once this one ends.
        await heartbeatsPass(stream, 1);
        expect(log.find('started', (i) => i.jobId === next)).toBeUndefined();
        expect(Date.now()).toBeGreaterThanOrEqual(at);
        controlled.finish(jobId);
      }
      await log.wait('started', (i) => i.jobId === 'q3');
      controlled.finish('q3');
      await log.wait('outcome-acked', (i) => i.jobId === 'q3');
      expect(stream.releases().map((r) => r.jobId)).toEqual(['q4']);
    });

    it('holds outcomes while the start queue waits for slots, and sends them together once its last lease has started', async () => {
      const { log, controlled, stream } = await setup({ agent: { capacity: 1, preDispatchQueue: 2 }, internals: { startGraceMs: 60_000 } });
      const at = Date.now() + 200;
      // One instant for all three (a spike): two wait for the slot from the start.
      stream.assign(
        { jobId: 'h1', task: 'controlled', startAtMs: at },
        { jobId: 'h2', task: 'controlled', startAtMs: at },
        { jobId: 'h3', task: 'controlled', startAtMs: at },
      );
      await log.wait('started', (i) => i.jobId === 'h1');
      controlled.finish('h1');
      await log.wait('started', (i) => i.jobId === 'h2');
      // h3 still waits for the slot: h1's outcome is held, heartbeats included.
      await heartbeatsPass(stream, 1);
      expect(stream.outcomes()).toEqual([]);
      controlled.finish('h2');
      await log.wait('started', (i) => i.jobId === 'h3');
      await waitFor('the held outcomes', () => stream.outcomes().length >= 2);
      // One message for both, sent after the queue's last lease started.
      expect(stream.outcomeMessages()[0]?.sort()).toEqual(['h1', 'h2']);
      controlled.finish('h3');
      await log.wait('outcome-acked', (i) => i.jobId === 'h3');
    });

    it('sends held outcomes within OUTCOME_HOLD_MAX_MS even while the start queue stays blocked', async () => {
      const { log, controlled, stream } = await setup({ agent: { capacity: 1, preDispatchQueue: 2 }, internals: { startGraceMs: 60_000 } });
      const at = Date.now() + 200;
      stream.assign({ jobId: 'b1', task: 'controlled', startAtMs: at }, { jobId: 'b2', task: 'controlled', startAtMs: at }, { jobId: 'b3', task: 'controlled', startAtMs: at });
      await log.wait('started', (i) => i.jobId === 'b1');
      const finishedAt = performance.now();
      controlled.finish('b1');
      // b2 runs on and b3 keeps waiting: the hold ends by its bound, not by the queue.
      await log.wait('outcome-acked', (i) => i.jobId === 'b1');
      expect(performance.now() - finishedAt).toBeGreaterThanOrEqual(OUTCOME_HOLD_MAX_MS - 5);
      expect(log.find('started', (i) => i.jobId === 'b3')).toBeUndefined();
      controlled.finish('b2');
      await log.wait('started', (i) => i.jobId === 'b3');
      controlled.finish('b3');
      await log.wait('outcome-acked', (i) => i.jobId === 'b3');
    });

    it('gives back the queued leases once the queue stops moving, never starting them', async () => {
      const { log, controlled, stream } = await setup({ agent: { capacity: 1, preDispatchQueue: 2 }, internals: { startGraceMs: 200 } });
      const at = Date.now() + 100;
      stream.assign({ jobId: 'busy', task: 'controlled', startAtMs: at }, { jobId: 'stuck', task: 'controlled', startAtMs: at + 1 });
      await log.wait('started', (i) => i.jobId === 'busy');
      // No slot frees: 200 ms after its start the queued lease goes back.
      const released = await log.wait('released', (i) => i.jobId === 'stuck');
      expect(released.reason).toBe('no free slot: the start queue did not move for 200 ms');
      expect(stream.releases().map((r) => r.jobId)).toEqual(['stuck']);
      // The reason travels in the Release, for the released run's record.
      expect(stream.releaseReasons()).toEqual(['no free slot: the start queue did not move for 200 ms']);
      controlled.finish('busy');
      await log.wait('outcome-acked', (i) => i.jobId === 'busy');
      expect(log.find('started', (i) => i.jobId === 'stuck')).toBeUndefined();
    });
  });

  it('releases assignments beyond its capacity or for tasks it does not serve', async () => {
    const { log, stream } = await setup({ agent: { capacity: 1 } });
    stream.assign({ jobId: 'one', task: 'controlled' }, { jobId: 'two', task: 'controlled' }, { jobId: 'odd', task: 'teleport' });
    await waitFor('two releases', () => stream.releases().length >= 2);
    expect(stream.releases().map((r) => r.jobId).sort()).toEqual(['odd', 'two']);
    expect(log.find('released', (i) => i.jobId === 'two')?.reason).toBe('over capacity (1)');
    expect(log.find('released', (i) => i.jobId === 'odd')?.reason).toMatch(/task "teleport" is not served/);
    await log.wait('started', (i) => i.jobId === 'one');
    expect(log.all('assigned').map((i) => i.jobId)).toEqual(['one']);
    await heartbeatsPass(stream, 1);
    expect(refs(stream.heartbeats().at(-1)?.leases ?? [])).toEqual([{ jobId: 'one', generation: 1n }]);
  });

  it('a finished lease awaiting its ack frees its slot: the next assignment is taken, and Hello says so', async () => {
    const { fake, log, controlled, stream } = await setup({ agent: { capacity: 1 } });
    expect(stream.hello?.slotsFreeOnOutcome).toBe(true);
    fake.ack = () => 'withhold';
    stream.assign({ jobId: 'first', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'first');
    controlled.finish('first');
    await waitFor('the outcome sent', () => stream.outcomes().some((o) => o.jobId === 'first') || undefined);
    stream.assign({ jobId: 'second', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'second');
    expect(stream.releases()).toEqual([]);
    // Still one running lease at most: a third assignment is beyond the capacity.
    stream.assign({ jobId: 'third', task: 'controlled' });
    await waitFor('the third released', () => stream.releases().length === 1 || undefined);
    expect(log.find('released', (i) => i.jobId === 'third')?.reason).toBe('over capacity (1)');
    // Both unacked and running leases are still held, and named in heartbeats.
    await heartbeatsPass(stream, 1);
    expect(refs(stream.heartbeats().at(-1)?.leases ?? [])).toEqual([
      { jobId: 'first', generation: 1n },
      { jobId: 'second', generation: 1n },
    ]);
    controlled.finish('second');
  });

  it('on the coordinator\'s Drain moves to a new stream and keeps working', async () => {
    const { fake, log, controlled, stream } = await setup();
    stream.assign({ jobId: 'move', task: 'controlled', generation: 4n });
    await log.wait('started', (i) => i.jobId === 'move');
    stream.drain(5_000);
    const second = await waitFor('a replacement stream', () => (fake.streams[1]?.hello !== undefined ? fake.streams[1] : undefined));
    expect(refs(second.hello?.heldLeases ?? [])).toEqual([{ jobId: 'move', generation: 4n }]);
    // On a new TCP connection: only that lets a load balancer route it to another coordinator.
    expect(second.peer).not.toBe(stream.peer);
    await waitFor('the agent to close the drained stream', () => stream.agentEnded);
    await waitFor('heartbeats on the new stream', () => second.heartbeats().length >= 1);
    expect(controlled.run('move').abortReason).toBeUndefined();
    controlled.finish('move');
    await log.wait('outcome-acked', (i) => i.jobId === 'move');
    expect(second.outcomes().map((o) => o.jobId)).toEqual(['move']);
    expect(stream.outcomes()).toEqual([]);
    expect(log.find('lease-lost')).toBeUndefined();
  });

  // Chaos finding 3: the replacement stream reused the drained connection, landed on the
  // draining coordinator again, and the two sides spun through ~1,900 streams in 3 s.
  it('after Drain, backs off between refused replacement dials, each on a new connection', async () => {
    const { fake, log, controlled, stream } = await setup();
    stream.assign({ jobId: 'keep', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'keep');
    fake.refuseNewStreams = true;
    stream.drain(10_000);
    await waitFor('three refused dials', () => fake.refused.length >= 3, { timeoutMs: 5_000 });
    const [a, b, c] = fake.refused;
    expect(new Set([a!.peer, b!.peer, c!.peer, stream.peer]).size).toBe(4);
    // Backoff: at least half of 100 ms, then of 200 ms (equal jitter), not a busy loop.
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(45);
    expect(c!.at - b!.at).toBeGreaterThanOrEqual(95);
    // Meanwhile the drained stream keeps the lease alive, and a coordinator that accepts again is found.
    fake.refuseNewStreams = false;
    const next = await waitFor('an accepted replacement', () => fake.streams.find((s) => s !== stream && s.hello !== undefined), { timeoutMs: 5_000 });
    expect(refs(next.hello?.heldLeases ?? [])).toEqual([{ jobId: 'keep', generation: 1n }]);
    expect(log.find('lease-lost')).toBeUndefined();
    controlled.finish('keep');
    await log.wait('outcome-acked', (i) => i.jobId === 'keep');
  });

  it('drains: sends Draining, releases what it did not start, waits for running handlers, then closes', async () => {
    const { log, controlled, stream, agent } = await setup();
    stream.assign({ jobId: 'busy', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'busy');
    let drained = false;
    const draining = agent.drain().then(() => (drained = true));
    await waitFor('Draining', () => stream.drainingReceived);
    stream.assign({ jobId: 'late', task: 'controlled', generation: 8n });
    await waitFor('the late assignment released', () => stream.releases().find((r) => r.jobId === 'late'));
    expect(log.find('started', (i) => i.jobId === 'late')).toBeUndefined();
    expect(drained).toBe(false);
    expect(controlled.run('busy').abortReason).toBeUndefined();
    controlled.finish('busy');
    await draining;
    expect(stream.outcomes()).toMatchObject([{ jobId: 'busy', result: HandlerResult.SUCCEEDED }]);
    expect(log.find('drained')).toEqual({ unackedOutcomes: 0 });
    await waitFor('the agent to close its side', () => stream.agentEnded);
  });

  it('drains: cancels handlers still running when the grace period ends, and reports CANCELLED', async () => {
    const { log, stream, agent } = await setup({ agent: { drainGraceMs: 200 } });
    stream.assign({ jobId: 'forever', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'forever');
    await agent.drain();
    expect(stream.outcomes()).toMatchObject([{ jobId: 'forever', result: HandlerResult.CANCELLED }]);
    expect(stream.outcomes()[0]?.error).toMatch(/drain grace period \(200 ms\)/);
    expect(log.find('outcome-acked', (i) => i.jobId === 'forever')?.result).toBe('RECORDED');
  });

  it('close() aborts handlers and reports nothing', async () => {
    const { log, controlled, stream, agent } = await setup();
    stream.assign({ jobId: 'cut', task: 'controlled' });
    await log.wait('started', (i) => i.jobId === 'cut');
    await agent.close();
    expect((controlled.run('cut').abortReason as TaskAbortedError).kind).toBe('closed');
    await waitFor('the stream to end', () => stream.finished);
    expect(stream.outcomes()).toEqual([]);
  });

  it('keeps retrying until a coordinator appears', async () => {
    const probe = await FakeCoordinator.start();
    const port = probe.port;
    await probe.stop();
    const agent = await startAgentWith(
      {
        coordinator: `127.0.0.1:${port}`,
        agentId: 'early-bird',
        tasks: ['sleep'],
        capacity: 1,
        httpAllowHosts: [],
        execAllow: [],
        drainGraceMs: 1_000,
        logger: pino({ level: 'silent' }),
      },
      { thread: 'inline' },
    );
    cleanups.push(() => agent.close());
    const log = new EventLog(agent.events);
    const fake = await FakeCoordinator.start({ port });
    cleanups.push(() => fake.stop());
    await log.wait('connected', undefined, { timeoutMs: 10_000 });
    expect(fake.latest.hello?.agentId).toBe('early-bird');
  });
});
