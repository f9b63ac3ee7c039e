/**
 * Per-job retry policy, start jitter and pause on failure through the APIs,
 * and pause on failure with a real agent whose runs fail.
 */
import { createKairosClient, type KairosClient } from '@kairos/client';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';

const FALSE = '/bin/false';

describe('job retry policy, start jitter and pause on failure, end to end', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;
  let grpcAddress: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    grpcAddress = coordinator.grpcAddress;
    client = createKairosClient({ address: coordinator.grpcAddress });
  });
  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  it('shows the policy in force: the job’s own fields, the coordinator’s defaults for the rest', async () => {
    const created = await api.createJob({
      task: 'sleep',
      schedule: '0 * * * *',
      payload: { seconds: 0 },
      retry: { initialIntervalMs: 250, multiplier: 1.5 },
      jitterMs: 30_000,
      pauseOnFailure: true,
    });
    expect(created.status).toBe(201);
    expect(created.body.job).toMatchObject({
      // KAIROS_RETRY_BASE_MS is 100 in tests; the cap is the default hour.
      retry: { initialIntervalMs: 250, maxIntervalMs: 3_600_000, multiplier: 1.5, jitter: 0 },
      jitterMs: 30_000,
      pauseOnFailure: true,
      pausedReason: null,
      version: 1,
    });
    const plain = await api.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: { seconds: 0 } });
    expect(plain.body.job).toMatchObject({ retry: { initialIntervalMs: 100, maxIntervalMs: 3_600_000, multiplier: 2, jitter: 0 }, jitterMs: 0, pauseOnFailure: false });

    const viaGrpc = await client.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0 }, retry: { maxIntervalMs: 5000, jitter: 0.3 }, jitterMs: 1000 });
    expect(await client.getJob(viaGrpc.jobId)).toMatchObject({
      retry: { initialIntervalMs: 100, maxIntervalMs: 5000, multiplier: 2, jitter: 0.3 },
      jitterMs: 1000,
      pauseOnFailure: false,
      version: 1,
    });
  });

  it.each([
    [{ retry: { multiplier: 0.5 } }, 'retry.multiplier'],
    [{ retry: { jitter: 2 } }, 'retry.jitter'],
    [{ retry: { initialIntervalMs: 5000, maxIntervalMs: 10 } }, 'retry.maxIntervalMs'],
    [{ retry: { initialIntervalMs: -1 } }, 'retry.initialIntervalMs'],
    [{ retry: { backoff: 'fast' } }, 'retry.backoff'],
    [{ retry: 'fast' }, 'retry'],
    [{ jitterMs: 3_600_001 }, 'jitterMs'],
    [{ pauseOnFailure: 'yes' }, 'pauseOnFailure'],
    [{ overlapPolicy: 'allow' }, 'overlapPolicy'],
    [{ misfirePolicy: 'later' }, 'misfirePolicy'],
    [{ catchupWindowMs: 60_000 }, 'catchupWindowMs'],
    [{ misfirePolicy: 'catch-up', catchupWindowMs: 10 }, 'catchupWindowMs'],
  ])('refuses %j naming %s, and creates nothing', async (fields, field) => {
    const before = (await api.listJobs('?limit=1000')).body.jobs.length;
    const answer = await api.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0 }, ...fields });
    expect(answer.status).toBe(400);
    expect(answer.body.error.field).toBe(field);
    expect((await api.listJobs('?limit=1000')).body.jobs.length).toBe(before);
  });

  it('takes overlap and catch-up policies, over REST and gRPC', async () => {
    const rest = await api.createJob({
      task: 'sleep',
      schedule: '0 * * * *',
      payload: { seconds: 0 },
      misfirePolicy: 'catch-up',
      catchupWindowMs: 86_400_000,
      overlapPolicy: 'buffer-all',
    });
    expect(rest.body.job).toMatchObject({ misfirePolicy: 'catch-up', catchupWindowMs: 86_400_000, overlapPolicy: 'buffer-all' });
    const viaGrpc = await client.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0 }, misfirePolicy: 'catch-up', overlapPolicy: 'cancel-other' });
    expect(await client.getJob(viaGrpc.jobId)).toMatchObject({ misfirePolicy: 'catch-up', catchupWindowMs: null, overlapPolicy: 'cancel-other' });
    const edited = await client.updateJob(viaGrpc.jobId, { overlapPolicy: 'buffer-one', catchupWindowMs: 3_600_000 });
    expect(edited.job).toMatchObject({ overlapPolicy: 'buffer-one', catchupWindowMs: 3_600_000 });
  });

  it('refuses start jitter, pause on failure and overlap policies on a one-off job, naming the field', async () => {
    const runAt = new Date(Date.now() + 60_000).toISOString();
    expect((await api.createJob({ task: 'sleep', runAt, overlapPolicy: 'buffer-one' })).body.error.field).toBe('overlapPolicy');
    expect((await api.createJob({ task: 'sleep', runAt, jitterMs: 10 })).body.error.field).toBe('jitterMs');
    expect((await api.createJob({ task: 'sleep', runAt, pauseOnFailure: true })).body.error.field).toBe('pauseOnFailure');
  });

  it('pauses a recurring job once an occurrence has failed every attempt, and says why', async () => {
    await startAgentProcess({ coordinator: grpcAddress, agentId: 'failing', tasks: 'exec', env: { KAIROS_EXEC_ALLOW: FALSE } });
    const created = await api.createJob({
      task: 'exec',
      schedule: '* * * * * *',
      payload: { argv: [FALSE] },
      maxAttempts: 2,
      retry: { initialIntervalMs: 50 },
      pauseOnFailure: true,
    });
    const jobId = created.body.jobId;
    const paused = await waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        return job.state === 'PAUSED' ? job : undefined;
      },
      { timeoutMs: 20_000, description: 'the job paused' },
    );
    expect(paused.pausedReason).toMatch(/^paused on failure: occurrence .* ended FAILED after 2 of 2 attempts$/);
    const runs: { outcome: string; attempt: number; startedAt: string; finishedAt: string }[] = (await api.runs(jobId)).body.runs;
    // On a loaded machine the two attempts can outlast the second: the occurrence due meanwhile is skipped
    // (overlap policy skip), a row of its own, never run.
    const ran = runs.filter((r) => r.outcome !== 'SKIPPED');
    expect(ran.map((r) => [r.attempt, r.outcome])).toEqual([
      [1, 'FAILED'],
      [2, 'FAILED'],
    ]);
    for (const skipped of runs.filter((r) => r.outcome === 'SKIPPED')) expect(skipped.attempt).toBe(0);
    // The retry waited the job's own 50 ms, not the coordinator's default.
    expect(new Date(ran[1]!.startedAt).getTime() - new Date(ran[0]!.finishedAt).getTime()).toBeGreaterThanOrEqual(50);
    // Resumed: DUE, or already CLAIMED when the resume's own NOTIFY woke a claim (an every-second
    // job is pre-dispatched up to a second ahead) before the answer's read.
    const resumed = (await api.control(jobId, 'resume')).body;
    expect(resumed).toMatchObject({ pausedReason: null });
    expect(['DUE', 'CLAIMED']).toContain(resumed.state);
    // Paused again. An occurrence that started meanwhile (every second) makes pause answer 409
    // (state CLAIMED) until its run ends, as docs/api.md says: ask until it lands (PAUSED again by
    // its own failure is a no-op 200 too).
    const statuses: number[] = [];
    await waitFor(
      async () => {
        const answer = await api.control(jobId, 'pause');
        statuses.push(answer.status);
        if (answer.status === 409 && answer.body.error.details?.state === 'CLAIMED') return undefined;
        return answer;
      },
      { timeoutMs: 10_000, description: 'pause to land between runs' },
    );
    expect(statuses.at(-1)).toBe(200);
    expect((await api.getJob(jobId)).body.state).toBe('PAUSED');
  }, 40_000);

  it('cancel-other with a real agent: a run still running when the next occurrence comes due is aborted, never overlapped', async () => {
    await startAgentProcess({ coordinator: grpcAddress, agentId: 'sleeper', tasks: 'sleep' });
    const created = await api.createJob({ task: 'sleep', schedule: '*/2 * * * * *', payload: { seconds: 30 }, overlapPolicy: 'cancel-other' });
    const jobId = created.body.jobId;
    const runs = await waitFor(
      async () => {
        const list = (await api.runs(jobId)).body.runs;
        return list.filter((r: { outcome: string }) => r.outcome === 'CANCELLED').length >= 2 ? list : undefined;
      },
      { timeoutMs: 30_000, description: 'two runs aborted by the overlap policy' },
    );
    expect((await api.control(jobId, 'pause')).status).toBeLessThan(500);
    const cancelled = runs.filter((r: { outcome: string }) => r.outcome === 'CANCELLED');
    for (const run of cancelled) expect(run.abortedBy).toBe('overlap policy cancel-other');
    expect(cancelled[1].reason).toBe('overlap:cancel-other');
    // Never two at once: each run started after the previous one had ended.
    const executions = runs.filter((r: { startedAt: string | null }) => r.startedAt !== null);
    for (let i = 1; i < executions.length; i++) {
      if (executions[i - 1].finishedAt === null) continue;
      expect(new Date(executions[i].startedAt).getTime()).toBeGreaterThanOrEqual(new Date(executions[i - 1].finishedAt).getTime());
    }
  }, 60_000);
});
