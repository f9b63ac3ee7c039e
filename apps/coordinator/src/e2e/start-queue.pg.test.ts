/**
 * The agent's start queue, end to end with real processes: pre-dispatched
 * leases held beyond the agent's capacity (Hello.pre_dispatch_queue), started
 * at their due instant as slots free up, and given back when no slot frees
 * within the grace, so a busy agent never sits on due work.
 *
 * The coordinator's lease is 1.5 s, so its look-ahead is 750 ms; the runs are
 * `http` calls to libs/testing's held calls, which note when each arrived and
 * hold `/busy` open until the test lets it go.
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

describe('pre-dispatch start queue, end to end', () => {
  let db: TestDatabase;
  let receiver: HeldCalls;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startHeldCalls({ hold: (path) => path === '/busy' });
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

  async function createCall(api: ReturnType<typeof restClient>, path: string, runAt: Date) {
    const created = await api.createJob({ task: 'http', runAt: runAt.toISOString(), payload: { url: receiver.url(path) } });
    expect(created.status).toBe(201);
    return created.body.jobId as string;
  }

  async function jobs(ids: readonly string[]) {
    const { rows } = await db.pool.query(
      `SELECT id, state, lease_owner, next_run_at > now() AS ahead FROM jobs WHERE id = ANY($1::uuid[])`,
      [ids],
    );
    return rows;
  }

  async function runsOf(id: string) {
    const { rows } = await db.pool.query('SELECT outcome, worker_id, error FROM runs WHERE job_id = $1 ORDER BY id', [id]);
    return rows;
  }

  it('holds more pre-dispatched jobs than its capacity and starts each at its due instant as slots free', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    const api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-0', tasks: 'http', capacity: 2, env: { KAIROS_PREDISPATCH_QUEUE: '10' } });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });
    const due = new Date(Date.now() + 2_500);
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push(await createCall(api, `/queued-${i}`, due));
    // All eight are held by the agent before their due instant: two in its slots, six in its start queue.
    await waitFor(async () => {
      const rows = await jobs(ids);
      return rows.length === 8 && rows.every((row) => row.state === 'CLAIMED' && row.ahead === true);
    }, { description: 'all eight claimed ahead of their due instant' });
    expect(await metricValue(coordinator.httpUrl, 'kairos_predispatched_total')).toBe(8);
    await waitFor(async () => (await jobs(ids)).every((row) => row.state === 'COMPLETED'), { description: 'all eight ran' });
    for (let i = 0; i < 8; i++) {
      const calls = receiver.callsTo(`/queued-${i}`);
      expect(calls).toHaveLength(1);
      // Never before the due instant (5 ms: the wall clock may be slewed against the monotonic one).
      expect(calls[0]!.at).toBeGreaterThanOrEqual(due.getTime() - 5);
      // Ran once. (On a loaded machine a queued one may find no slot within the grace: then it was
      // given back unstarted first, which the previous test shows.)
      const runs = await runsOf(ids[i]!);
      expect(runs.at(-1)?.outcome).toBe('SUCCEEDED');
      for (const run of runs.slice(0, -1)) expect([run.outcome, run.error]).toEqual(['CANCELLED', expect.stringContaining('released before start')]);
    }
  });

  it('gives back a queued job that finds no free slot within the grace; another agent runs it once', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    const api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-0', tasks: 'http', capacity: 1, env: { KAIROS_PREDISPATCH_QUEUE: '4' } });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent-0 connected' });
    const due = Date.now() + 2_500;
    // The first to start takes agent-0's only slot and stays busy (its call is held open).
    const busy = await createCall(api, '/busy', new Date(due));
    const queued = [await createCall(api, '/queued-a', new Date(due + 50)), await createCall(api, '/queued-b', new Date(due + 50))];
    await waitFor(async () => {
      const rows = await jobs([busy, ...queued]);
      return rows.length === 3 && rows.every((row) => row.state === 'CLAIMED' && row.lease_owner === 'agent-0' && row.ahead === true);
    }, { description: 'all three pre-dispatched to agent-0' });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-1', tasks: 'http', capacity: 2 });
    await waitFor(() => receiver.callsTo('/busy')[0], { description: 'the busy run started on agent-0' });
    await waitFor(async () => (await jobs(queued)).every((row) => row.state === 'COMPLETED'), { description: 'the queued jobs ran' });
    for (const id of queued) {
      const runs = await runsOf(id);
      expect(runs.map((run) => [run.outcome, run.worker_id])).toEqual([
        ['CANCELLED', 'agent-0'],
        ['SUCCEEDED', 'agent-1'],
      ]);
      expect(runs[0].error).toContain('released before start');
    }
    expect(receiver.callsTo('/queued-a')).toHaveLength(1);
    expect(receiver.callsTo('/queued-b')).toHaveLength(1);
    receiver.release();
    await waitFor(async () => (await jobs([busy]))[0]?.state === 'COMPLETED', { description: 'the busy run finished' });
    expect((await runsOf(busy)).map((run) => run.outcome)).toEqual(['SUCCEEDED']);
  });
});
