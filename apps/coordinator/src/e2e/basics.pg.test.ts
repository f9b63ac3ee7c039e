/**
 * End to end with real processes: a coordinator and agents started from their
 * compiled entry points, real gRPC over loopback, a real PostgreSQL database
 * of this file's own, short leases. Everything is awaited, nothing slept.
 */
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';
import { startReceiver, type Receiver } from '../test-support/receiver';

describe('coordinator and agents, end to end', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 1_500 });
    api = restClient(coordinator.httpUrl);
    await Promise.all([
      startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-a', capacity: 16 }),
      startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'agent-b', capacity: 16 }),
    ]);
    await waitFor(async () => (await api.agents()).body.length === 2, { description: 'two agents connected' });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await receiver?.close();
    await db?.drop();
  });

  async function untilState(jobId: string, state: string, timeoutMs = 15_000) {
    return waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        return job.state === state ? job : undefined;
      },
      { timeoutMs, description: `job ${jobId} to be ${state}` },
    );
  }

  it('runs a one-off job once, on time, and reports its run', async () => {
    const runAt = new Date(Date.now() + 1_500);
    const created = await api.createJob({ task: 'sleep', runAt: runAt.toISOString(), payload: { seconds: 0.2 } });
    expect(created.status).toBe(201);

    await untilState(created.body.jobId, 'COMPLETED');
    const runs = (await api.runs(created.body.jobId)).body.runs;
    expect(runs).toHaveLength(1);
    const [run] = runs;
    expect(run).toMatchObject({ attempt: 1, outcome: 'SUCCEEDED', scheduledFor: runAt.toISOString() });
    const startLagMs = Date.parse(run.startedAt) - runAt.getTime();
    expect(startLagMs).toBeGreaterThanOrEqual(0);
    expect(startLagMs).toBeLessThan(1_000);
    expect(Date.parse(run.finishedAt) - Date.parse(run.startedAt)).toBeGreaterThanOrEqual(150);
    expect(['agent-a', 'agent-b']).toContain(run.workerId);
  });

  it('runs each occurrence of a 6-field recurring job once, across both agents, without drift', async () => {
    const created = await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 0.05 } });
    const jobId = created.body.jobId;
    const succeeded = await waitFor(
      async () => {
        const runs = (await api.runs(jobId)).body.runs.filter((r) => r.outcome === 'SUCCEEDED');
        return runs.length >= 6 ? runs : undefined;
      },
      { timeoutMs: 20_000, description: 'six successful occurrences' },
    );
    await api.control(jobId, 'pause');

    const occurrences = succeeded.map((r) => Date.parse(r.scheduledFor));
    expect(new Set(occurrences).size).toBe(occurrences.length);
    for (const at of occurrences) expect(at % 1_000).toBe(0);
    const sorted = [...occurrences].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBe(1_000);
    for (const run of succeeded) expect(Date.parse(run.startedAt) - Date.parse(run.scheduledFor)).toBeLessThan(1_000);
    expect(new Set(succeeded.map((r) => r.workerId)).size).toBe(2);
  });

  it('cancels a job before it is due (204, never runs), refuses once claimed (409), and 404s unknown ids (400 for a malformed one)', async () => {
    const at = new Date(Date.now() + 1_000).toISOString();
    const doomed = await api.createJob({ task: 'sleep', runAt: at, payload: { seconds: 0 } });
    const sentinel = await api.createJob({ task: 'sleep', runAt: at, payload: { seconds: 0 } });
    expect((await api.cancelJob(doomed.body.jobId)).status).toBe(204);
    expect((await api.cancelJob(doomed.body.jobId)).status).toBe(204);
    await untilState(sentinel.body.jobId, 'COMPLETED');
    expect((await api.getJob(doomed.body.jobId)).body.state).toBe('CANCELLED');
    expect((await api.runs(doomed.body.jobId)).body.runs).toEqual([]);

    const running = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 2 } });
    await untilState(running.body.jobId, 'CLAIMED');
    const refused = await api.cancelJob(running.body.jobId);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'failed_precondition', details: { state: 'CLAIMED' } });
    expect(refused.body.error.message).toContain('running or about to run');

    expect((await api.cancelJob('01900000-0000-7000-8000-000000000000')).status).toBe(404);
    // Not an id at all: a bad request naming the field, not "no such job".
    const malformed = await api.cancelJob('not-a-uuid');
    expect([malformed.status, malformed.body.error.field]).toEqual([400, 'jobId']);
  });

  it('cancel racing claim: every 204 never ran, every 409 ran (1,000 trials)', async () => {
    const trials = 1_000;
    const answers: Array<{ jobId: string; status: number }> = [];
    for (let i = 0; i < trials; i++) {
      const created = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } });
      const cancelled = await api.cancelJob(created.body.jobId);
      answers.push({ jobId: created.body.jobId, status: cancelled.status });
    }
    expect(answers.every((a) => a.status === 204 || a.status === 409)).toBe(true);
    const claimed = answers.filter((a) => a.status === 409);
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(
          `SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND state = 'COMPLETED'`,
          [claimed.map((a) => a.jobId)],
        );
        return rows[0].n === claimed.length;
      },
      { timeoutMs: 30_000, description: 'every claimed job to complete' },
    );
    const { rows } = await db.pool.query(
      `SELECT j.id, j.state, count(r.id)::int AS runs
       FROM jobs j LEFT JOIN runs r ON r.job_id = j.id
       WHERE j.id = ANY($1::uuid[]) GROUP BY j.id, j.state`,
      [answers.map((a) => a.jobId)],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const answer of answers) {
      const row = byId.get(answer.jobId)!;
      if (answer.status === 204) expect(row).toMatchObject({ state: 'CANCELLED', runs: 0 });
      else expect(row).toMatchObject({ state: 'COMPLETED', runs: 1 });
    }
  }, 120_000);

  it('retries a failing job with backoff and leaves it DEAD, listed by state', async () => {
    const created = await api.createJob({
      task: 'http',
      runAt: new Date().toISOString(),
      payload: { url: `${receiver.url}/fail?status=500` },
      maxAttempts: 3,
    });
    const jobId = created.body.jobId;
    await untilState(jobId, 'DEAD');
    const runs = (await api.runs(jobId)).body.runs;
    expect(runs.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'FAILED'],
      [2, 'FAILED'],
      [3, 'FAILED'],
    ]);
    expect(runs[0].error).toContain('500');
    // Backoff base 100 ms in this coordinator: 100 ms before attempt 2, 200 ms before attempt 3.
    expect(Date.parse(runs[1].startedAt) - Date.parse(runs[0].finishedAt)).toBeGreaterThanOrEqual(100);
    expect(Date.parse(runs[2].startedAt) - Date.parse(runs[1].finishedAt)).toBeGreaterThanOrEqual(200);
    const dead = (await api.listJobs('?state=DEAD')).body.jobs.map((j: { jobId: string }) => j.jobId);
    expect(dead).toContain(jobId);
  });

  it('never overlaps a recurring job that runs longer than its interval, and shows the missed occurrences', async () => {
    const created = await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 2.2 } });
    const jobId = created.body.jobId;
    const runs = await waitFor(
      async () => {
        const all = (await api.runs(jobId)).body.runs;
        return all.filter((r) => r.outcome === 'SUCCEEDED').length >= 2 ? all : undefined;
      },
      { timeoutMs: 20_000, description: 'two long runs' },
    );
    await api.control(jobId, 'pause');
    const executions = runs
      .filter((r) => r.outcome !== 'SKIPPED' && r.finishedAt)
      .map((r) => [Date.parse(r.startedAt), Date.parse(r.finishedAt)] as const)
      .sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < executions.length; i++) expect(executions[i]![0]).toBeGreaterThanOrEqual(executions[i - 1]![1]);
    // What came due during a run follows the overlap policy (skip, the default): recorded, never run late.
    const skipped = runs.filter((r) => r.outcome === 'SKIPPED');
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(skipped[0]).toMatchObject({ reason: 'overlap:skip', error: expect.stringContaining('overlap policy skip') });
  }, 30_000);

  it('rejects bad input naming the field, and changes nothing', async () => {
    const before = (await db.pool.query('SELECT count(*)::int AS n FROM jobs')).rows[0].n;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ task: 'sleep' }, 'runAt'],
      [{ task: 'sleep', runAt: 'tomorrow' }, 'runAt'],
      [{ task: 'sleep', schedule: '* * *' }, 'schedule'],
      [{ task: 'sleep', schedule: '0 9 * * *', timezone: 'Mars/Olympus' }, 'timezone'],
      [{ task: '', runAt: new Date().toISOString() }, 'task'],
      [{ task: 'sleep', runAt: new Date().toISOString(), payload: [1] }, 'payload'],
      [{ task: 'sleep', runAt: new Date().toISOString(), maxAttempts: 0 }, 'maxAttempts'],
      [{ task: 'sleep', runAt: new Date().toISOString(), colour: 'blue' }, 'colour'],
      // The built-in tasks' payloads are checked at create (libs/tasks): sleep needs seconds.
      [{ task: 'sleep', runAt: new Date().toISOString() }, 'payload.seconds'],
      [{ task: 'http', runAt: new Date().toISOString(), payload: { url: 'http://x/', method: 'GET', body: 'b' } }, 'payload.body'],
    ];
    for (const [body, field] of cases) {
      const response = await api.createJob(body);
      expect({ body, status: response.status, field: response.body.error?.field }).toEqual({ body, status: 400, field });
    }
    expect((await db.pool.query('SELECT count(*)::int AS n FROM jobs')).rows[0].n).toBe(before);
  });

  it('answers a repeated idempotency key with the first job, and a changed body with 409', async () => {
    const body = { task: 'sleep', runAt: '2035-01-01T00:00:00Z', payload: { seconds: 1 }, idempotencyKey: 'nightly-42' };
    const first = await api.createJob(body);
    const again = await api.createJob(body);
    const changed = await api.createJob({ ...body, payload: { seconds: 2 } });
    expect([first.status, again.status, changed.status]).toEqual([201, 200, 409]);
    expect(again.body.jobId).toBe(first.body.jobId);
    expect(changed.body.error.field).toBe('idempotencyKey');
  });
});
