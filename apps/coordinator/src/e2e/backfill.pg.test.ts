/**
 * Backfill over REST and gRPC with a real agent: a past range of a recurring
 * job's occurrences runs in order, one at a time, each with its scheduledFor;
 * then the schedule resumes. Bad ranges name their field.
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

const HOUR = 3_600_000;

describe('backfill, end to end', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    client = createKairosClient({ address: coordinator.grpcAddress });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'worker', tasks: 'sleep' });
  });
  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  const hourStart = (ms: number) => Math.floor(ms / HOUR) * HOUR;

  it('runs the past occurrences in order, one at a time, then resumes the schedule', async () => {
    const created = await api.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0.2 } });
    const jobId = created.body.jobId;
    const before = (await api.getJob(jobId)).body;
    const lastHour = hourStart(Date.now());
    const from = new Date(lastHour - 3 * HOUR).toISOString();
    const to = new Date(lastHour).toISOString();
    const started = await api.call<any>('POST', `/jobs/${jobId}/backfill`, { from, to });
    expect(started.status).toBe(202);
    expect(started.body).toEqual({ jobId, first: from, last: new Date(lastHour - HOUR).toISOString(), count: 3, resumeAt: before.occurrenceAt });
    // Only one backfill at a time.
    expect((await api.call<any>('POST', `/jobs/${jobId}/backfill`, { from, to })).status).toBe(409);
    const runs = await waitFor(
      async () => {
        const list = (await api.runs(jobId)).body.runs;
        return list.filter((r: { outcome: string }) => r.outcome === 'SUCCEEDED').length === 3 ? list : undefined;
      },
      { timeoutMs: 20_000, description: 'three backfill runs' },
    );
    expect(runs.map((r: { scheduledFor: string; reason: string }) => [r.scheduledFor, r.reason])).toEqual([
      [from, 'backfill'],
      [new Date(lastHour - 2 * HOUR).toISOString(), 'backfill'],
      [new Date(lastHour - HOUR).toISOString(), 'backfill'],
    ]);
    for (let i = 1; i < runs.length; i++) expect(Date.parse(runs[i].startedAt)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1].finishedAt));
    // The runs page like the jobs: limit, nextCursor, a bad cursor or limit named.
    const first = (await api.runs(jobId, '?limit=2')).body;
    expect(first.runs.map((r: { runId: string }) => r.runId)).toEqual(runs.slice(0, 2).map((r: { runId: string }) => r.runId));
    const second = (await api.runs(jobId, `?limit=2&cursor=${first.nextCursor}`)).body;
    expect(second).toEqual({ runs: [runs[2]], nextCursor: null });
    expect((await api.runs(jobId, '?cursor=abc')).body.error.field).toBe('cursor');
    expect((await api.runs(jobId, '?limit=5000')).body.error.field).toBe('limit');
    const after = await waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        return job.backfill === null && job.state === 'DUE' ? job : undefined;
      },
      { description: 'the schedule resumed' },
    );
    expect(after.occurrenceAt).toBe(before.occurrenceAt);
  }, 40_000);

  it.each([
    [{ to: '2020-01-01T00:00:00Z' }, 'from'],
    [{ from: '2020-01-01T00:00:00Z' }, 'to'],
    [{ from: '2020-01-02T00:00:00Z', to: '2020-01-01T00:00:00Z' }, 'to'],
    [{ from: 'yesterday', to: '2020-01-01T00:00:00Z' }, 'from'],
    [{ from: '2020-01-01T00:00:00Z', to: '2999-01-01T00:00:00Z' }, 'to'],
    [{ from: '2020-01-01T00:10:00Z', to: '2020-01-01T00:50:00Z' }, 'from'],
    [{ from: '2020-01-01T00:00:00Z', to: '2022-01-01T00:00:00Z' }, 'to'],
    [{ from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z', speed: 2 }, 'speed'],
  ])('refuses %j naming %s', async (body, field) => {
    const created = await api.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0 } });
    const answer = await api.call<any>('POST', `/jobs/${created.body.jobId}/backfill`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.field).toBe(field);
    expect((await api.getJob(created.body.jobId)).body.backfill).toBeNull();
  });

  it('over gRPC: refused while paused or one-off; starts, and cancels', async () => {
    const created = await client.createJob({ task: 'sleep', schedule: '0 0 1 1 *', payload: { seconds: 0.5 } });
    await client.pauseJob(created.jobId);
    const range = { from: '2020-01-01T00:00:00Z', to: '2025-01-01T00:00:00Z' };
    await expect(client.startBackfill(created.jobId, range)).rejects.toMatchObject({ code: 'failed-precondition' });
    await client.resumeJob(created.jobId);
    const oneOff = await client.createJob({ task: 'sleep', runAt: new Date(Date.now() + HOUR), payload: { seconds: 0 } });
    await expect(client.startBackfill(oneOff.jobId, range)).rejects.toMatchObject({ code: 'failed-precondition' });

    const started = await client.startBackfill(created.jobId, range);
    expect(started).toMatchObject({ first: new Date('2020-01-01T00:00:00Z'), last: new Date('2024-01-01T00:00:00Z'), count: 5 });
    expect((await client.getJob(created.jobId)).backfill).not.toBeNull();
    await client.cancelBackfill(created.jobId);
    const job = await waitFor(
      async () => {
        const current = await client.getJob(created.jobId);
        return current.backfill === null && current.state === 'DUE' ? current : undefined;
      },
      { description: 'the backfill over' },
    );
    expect(job.nextRunAt?.getTime()).toBeGreaterThan(Date.now());
    // At most the runs that had started before the cancel: no more.
    const { runs } = await client.listRuns(created.jobId);
    expect(runs.length).toBeLessThanOrEqual(1);
    for (const run of runs) expect(run.reason).toBe('backfill');
    await expect(client.cancelBackfill(created.jobId)).rejects.toMatchObject({ code: 'failed-precondition' });
  });
});
