/**
 * Pre-dispatched leases, end to end with real processes: a coordinator hands
 * an agent process a job ahead of its due instant, the agent starts it then
 * (an `http` handler calling a receiver in this test, libs/testing's held
 * calls, which notes when each call arrived), and the contract around the wait holds:
 *
 * - a cancel, pause or edit of a job the agent holds but has not started
 *   applies as if it were still waiting (204 / PAUSED / the edited payload is
 *   what runs), and the withdrawn lease never runs;
 * - once the run has started, the cancel answers 409 at once (the agent
 *   refused), and an agent that cannot answer (SIGSTOP) gets a 409 after the
 *   bounded wait, and its run still goes ahead exactly once;
 * - an agent killed (SIGKILL) while holding pre-dispatched jobs loses them to
 *   lease expiry, and another agent runs each exactly once;
 * - the agent's start queue (decision 0023): it holds pre-dispatched jobs
 *   beyond its capacity, starts each at its due instant as slots free, and
 *   gives back the ones a queue stuck behind a busy slot cannot start, which
 *   another agent then runs once.
 */
import {
  createTestDatabase,
  metricValue,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  startHeldCalls,
  stopAll,
  waitFor,
  type HeldCalls,
  type TestDatabase,
} from '@kairos/testing';

describe('pre-dispatched leases, end to end', () => {
  let db: TestDatabase;
  // Calls to /started are held open (a run in flight) until the test releases them.
  let receiver: HeldCalls;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startHeldCalls({ hold: (path) => path === '/started' });
  });
  afterAll(async () => {
    await stopAll();
    await receiver?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await stopAll();
    await db.truncate();
  });

  /** A coordinator (lease 1.5 s, so a look-ahead of up to 750 ms) and `agents` agent processes running `http`. */
  async function cluster(options: { agents?: number; capacity?: number; env?: Record<string, string> } = {}) {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, env: { KAIROS_WITHDRAW_WAIT_MS: '1000', ...options.env } });
    const api = restClient(coordinator.httpUrl);
    const agents = [];
    for (let i = 0; i < (options.agents ?? 1); i++) {
      agents.push(
        await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: `agent-${i}`, tasks: 'http', capacity: options.capacity ?? 4 }),
      );
    }
    await waitFor(async () => (await api.agents()).body.length === agents.length, { description: 'agents connected' });
    return { coordinator, api, agents };
  }

  /** A one-off `http` job calling `path` on the receiver, due `inMs` from now (database clock: same machine). */
  async function createCall(api: ReturnType<typeof restClient>, path: string, inMs: number, body = 'v1') {
    const runAt = new Date(Date.now() + inMs);
    const created = await api.createJob({ task: 'http', runAt: runAt.toISOString(), payload: { url: receiver.url(path), body } });
    expect(created.status).toBe(201);
    return { id: created.body.jobId as string, runAt };
  }

  async function job(id: string) {
    const { rows } = await db.pool.query(
      `SELECT state, lease_owner, lease_generation, next_run_at > now() AS ahead, held_until FROM jobs WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  async function runsOf(id: string) {
    const { rows } = await db.pool.query('SELECT * FROM runs WHERE job_id = $1 ORDER BY id', [id]);
    return rows;
  }

  /** Waits until the job is CLAIMED while its due instant is still ahead: pre-dispatched. */
  const preDispatched = (id: string) =>
    waitFor(async () => {
      const row = await job(id);
      return row?.state === 'CLAIMED' && row.ahead === true;
    }, { description: `job ${id} claimed ahead of its due instant` });

  it('starts a pre-dispatched job at its due instant, not when it was claimed', async () => {
    const { coordinator, api } = await cluster();
    const { id, runAt } = await createCall(api, '/on-time', 2_500);
    await preDispatched(id);
    const call = await waitFor(() => receiver.callsTo('/on-time')[0], { description: 'the call' });
    await waitFor(async () => (await job(id))?.state === 'COMPLETED', { description: 'job completed' });
    // Claimed well before the due instant, started at it, never before: the clock estimates err late.
    // (5 ms: the wall clock may be slewed against the monotonic one the agent times with.)
    expect(call.at).toBeGreaterThanOrEqual(runAt.getTime() - 5);
    const runs = await runsOf(id);
    expect(runs).toHaveLength(1);
    expect(runs[0].outcome).toBe('SUCCEEDED');
    // The run's start is its due instant (the claim came earlier).
    expect(Math.abs(runs[0].started_at.getTime() - runAt.getTime())).toBeLessThanOrEqual(1);
    expect(await metricValue(coordinator.httpUrl, 'kairos_predispatched_total')).toBeGreaterThanOrEqual(1);
  });

  it('cancels a pre-dispatched job that has not started: 204, and it never runs', async () => {
    const { coordinator, api } = await cluster();
    const { id, runAt } = await createCall(api, '/cancelled', 2_500);
    await preDispatched(id);
    const cancelled = await api.cancelJob(id);
    expect(cancelled.status).toBe(204);
    expect((await job(id)).state).toBe('CANCELLED');
    // A job due after it proves the agent went past the due instant without running it.
    const later = await createCall(api, '/after-cancelled', runAt.getTime() - Date.now() + 300);
    await waitFor(async () => (await job(later.id))?.state === 'COMPLETED', { description: 'the later job ran' });
    expect(receiver.callsTo('/cancelled')).toHaveLength(0);
    const runs = await runsOf(id);
    expect(runs).toHaveLength(1);
    expect(runs[0].outcome).toBe('CANCELLED');
    expect(runs[0].error).toMatch(/released before start/);
    expect(await metricValue(coordinator.httpUrl, 'kairos_withdrawals_total', { result: 'withdrawn' })).toBe(1);
  });

  it('pauses and edits a pre-dispatched job as if it were still waiting', async () => {
    const { api } = await cluster();
    const paused = await createCall(api, '/paused', 2_500);
    await preDispatched(paused.id);
    const pause = await api.control(paused.id, 'pause');
    expect(pause.status).toBe(200);
    expect(pause.body.state).toBe('PAUSED');

    const edited = await createCall(api, '/edited', 2_500, 'old body');
    await preDispatched(edited.id);
    const patch = await api.call<{ appliesFrom: string }>('PATCH', `/jobs/${edited.id}`, { payload: { url: receiver.url('/edited'), body: 'new body' } });
    expect(patch.status).toBe(200);
    expect(patch.body.appliesFrom).toBe('now');
    const call = await waitFor(() => receiver.callsTo('/edited')[0], { description: 'the edited call' });
    expect(call.body).toBe('new body');
    expect(call.at).toBeGreaterThanOrEqual(edited.runAt.getTime() - 5);

    // The paused job never ran; resumed, it runs (late, once).
    expect(receiver.callsTo('/paused')).toHaveLength(0);
    expect((await api.control(paused.id, 'resume')).status).toBe(200);
    await waitFor(async () => (await job(paused.id))?.state === 'COMPLETED', { description: 'resumed job ran' });
    expect(receiver.callsTo('/paused')).toHaveLength(1);
  });

  it('answers 409 at once when the run has started, and after the bounded wait when the agent cannot answer', async () => {
    const { coordinator, api, agents } = await cluster();
    const started = await createCall(api, '/started', 1_500);
    await waitFor(() => receiver.callsTo('/started')[0], { description: 'the run started' });
    const refused = await api.cancelJob(started.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error.reason).toBe('JOB_CLAIMED');
    receiver.release();
    await waitFor(async () => (await job(started.id))?.state === 'COMPLETED', { description: 'started job completed' });

    // An agent that cannot answer (stopped): 409 once the 1 s wait runs out; its run then goes ahead, once.
    const unanswered = await createCall(api, '/unanswered', 2_500);
    await preDispatched(unanswered.id);
    agents[0]!.signal('SIGSTOP');
    let timedOut;
    try {
      timedOut = await api.cancelJob(unanswered.id);
    } finally {
      agents[0]!.signal('SIGCONT');
    }
    expect(timedOut.status).toBe(409);
    expect(timedOut.body.error.message).toMatch(/did not confirm/);
    await waitFor(async () => (await job(unanswered.id))?.state === 'COMPLETED', { timeoutMs: 20_000, description: 'unanswered job ran' }).catch(
      async (error: Error) => {
        const logs = [...coordinator.proc.lines, ...agents[0]!.lines].filter((line) => Number(line.level ?? 30) >= 40 || /withdraw|releas|quarantin|probation/i.test(String(line.msg)));
        throw new Error(`${error.message}; job ${JSON.stringify(await job(unanswered.id))}; runs ${JSON.stringify(await runsOf(unanswered.id))}; logs ${JSON.stringify(logs)}`);
      },
    );
    expect(receiver.callsTo('/unanswered')).toHaveLength(1);
    expect((await runsOf(unanswered.id)).filter((run) => run.outcome === 'SUCCEEDED')).toHaveLength(1);
    expect(await metricValue(coordinator.httpUrl, 'kairos_withdrawals_total', { result: 'timed-out' })).toBe(1);
  });

  it('hands the pre-dispatched jobs of a killed agent to another agent, each run once', async () => {
    const { api, agents, coordinator } = await cluster({ capacity: 10 });
    const jobs = [];
    for (let i = 0; i < 6; i++) jobs.push(await createCall(api, `/orphan-${i}`, 2_500));
    for (const { id } of jobs) await preDispatched(id);
    agents[0]!.signal('SIGKILL');
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-rescue', tasks: 'http', capacity: 10 });
    for (const { id } of jobs) {
      await waitFor(async () => (await job(id))?.state === 'COMPLETED', { timeoutMs: 20_000, description: `job ${id} ran elsewhere` });
    }
    for (const [i, { id }] of jobs.entries()) {
      expect(receiver.callsTo(`/orphan-${i}`)).toHaveLength(1);
      const runs = await runsOf(id);
      expect(runs.map((run) => [run.worker_id, run.outcome])).toEqual([
        ['agent-0', 'LEASE_EXPIRED'],
        ['agent-rescue', 'SUCCEEDED'],
      ]);
    }
  });

  describe('the start queue', () => {
    /** One agent process running `http` with the given capacity and start queue. */
    async function queueAgent(coordinator: { grpcAddress: string }, agentId: string, capacity: number, queue?: number) {
      await startAgentProcess({
        coordinator: coordinator.grpcAddress,
        agentId,
        tasks: 'http',
        capacity,
        ...(queue === undefined ? {} : { env: { KAIROS_PREDISPATCH_QUEUE: String(queue) } }),
      });
    }

    /** Waits until every job is CLAIMED ahead of its due instant (by `owner`, when given). */
    const allPreDispatched = (ids: readonly string[], owner?: string) =>
      waitFor(async () => {
        for (const id of ids) {
          const row = await job(id);
          if (row?.state !== 'CLAIMED' || row.ahead !== true || (owner !== undefined && row.lease_owner !== owner)) return false;
        }
        return true;
      }, { description: `${ids.length} jobs claimed ahead of their due instant` });

    const allCompleted = (ids: readonly string[]) =>
      waitFor(async () => {
        for (const id of ids) if ((await job(id))?.state !== 'COMPLETED') return false;
        return true;
      }, { description: `${ids.length} jobs completed` });

    it('holds more pre-dispatched jobs than its capacity and starts each at its due instant as slots free', async () => {
      const { coordinator, api } = await cluster({ agents: 0 });
      await queueAgent(coordinator, 'agent-q', 2, 10);
      await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });
      const due = Date.now() + 2_500;
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await createCall(api, `/queued-${i}`, due - Date.now())).id);
      // All eight are held by the agent before their due instant: two in its slots, six in its start queue.
      await allPreDispatched(ids);
      expect(await metricValue(coordinator.httpUrl, 'kairos_predispatched_total')).toBe(8);
      await allCompleted(ids);
      for (let i = 0; i < 8; i++) {
        const calls = receiver.callsTo(`/queued-${i}`);
        expect(calls).toHaveLength(1);
        // Never before the due instant (5 ms: the wall clock may be slewed against the monotonic one).
        expect(calls[0]!.at).toBeGreaterThanOrEqual(due - 5);
        // Ran once. (On a loaded machine a queued one may find no slot within the grace: then it was
        // given back unstarted first, which the next test shows.)
        const runs = await runsOf(ids[i]!);
        expect(runs.at(-1)?.outcome).toBe('SUCCEEDED');
        for (const run of runs.slice(0, -1)) expect([run.outcome, run.error]).toEqual(['CANCELLED', expect.stringContaining('released before start')]);
      }
    });

    it('gives back a queued job that finds no free slot within the grace; another agent runs it once', async () => {
      const { coordinator, api } = await cluster({ agents: 0 });
      await queueAgent(coordinator, 'agent-q', 1, 4);
      await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent-q connected' });
      const due = Date.now() + 2_500;
      // The first to start takes agent-q's only slot and stays busy: its call is held open (a receiver of
      // its own: the shared one may have been released for good by an earlier test).
      const busyCalls = await startHeldCalls();
      try {
        const created = await api.createJob({ task: 'http', runAt: new Date(due).toISOString(), payload: { url: busyCalls.url('/busy') } });
        const busy = created.body.jobId as string;
        const queued = [(await createCall(api, '/queued-a', due + 50 - Date.now())).id, (await createCall(api, '/queued-b', due + 50 - Date.now())).id];
        await allPreDispatched([busy, ...queued], 'agent-q');
        await queueAgent(coordinator, 'agent-free', 2);
        await waitFor(() => busyCalls.callsTo('/busy')[0], { description: 'the busy run started on agent-q' });
        await allCompleted(queued);
        for (const id of queued) {
          const runs = await runsOf(id);
          expect(runs.map((run) => [run.outcome, run.worker_id])).toEqual([
            ['CANCELLED', 'agent-q'],
            ['SUCCEEDED', 'agent-free'],
          ]);
          // The agent's own reason, carried by Release.reason.
          expect(runs[0].error).toBe('released before start: no free slot: the start queue did not move for 500 ms');
        }
        expect(receiver.callsTo('/queued-a')).toHaveLength(1);
        expect(receiver.callsTo('/queued-b')).toHaveLength(1);
        busyCalls.release();
        await allCompleted([busy]);
        expect((await runsOf(busy)).map((run) => run.outcome)).toEqual(['SUCCEEDED']);
      } finally {
        await busyCalls.close();
      }
    });
  });
});
