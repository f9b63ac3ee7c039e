/**
 * Editing a job in place over REST (PATCH, ETag / If-Match) and gRPC
 * (UpdateJob, expected_version), with a real agent for a job edited while it
 * runs: the run goes on as claimed, the next one uses the edit, and the
 * history stays on one id.
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

describe('edit a job in place, end to end', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let httpUrl: string;
  let grpcAddress: string;
  let client: KairosClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    httpUrl = coordinator.httpUrl;
    grpcAddress = coordinator.grpcAddress;
    api = restClient(httpUrl);
    client = createKairosClient({ address: grpcAddress });
  });
  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  async function patch(jobId: string, body: unknown, ifMatch?: string) {
    const response = await fetch(`${httpUrl}/jobs/${jobId}`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', ...(ifMatch === undefined ? {} : { 'if-match': ifMatch }) },
      body: JSON.stringify(body),
    });
    return { status: response.status, etag: response.headers.get('etag'), body: (await response.json()) as any };
  }

  it('PATCH changes only the fields given, reschedules from now, and guards with ETag / If-Match', async () => {
    const created = await api.createJob({ task: 'sleep', schedule: '0 0 1 1 *', payload: { seconds: 1 }, name: 'yearly' });
    const jobId = created.body.jobId;
    const got = await fetch(`${httpUrl}/jobs/${jobId}`);
    expect(got.headers.get('etag')).toBe('"1"');

    const first = await patch(jobId, { schedule: '*/5 * * * *', timezone: 'Europe/Berlin', payload: { seconds: 2 } }, '"1"');
    expect(first).toMatchObject({ status: 200, etag: '"2"', body: { appliesFrom: 'now' } });
    expect(first.body.job).toMatchObject({ jobId, name: 'yearly', schedule: '*/5 * * * *', timezone: 'Europe/Berlin', payload: { seconds: 2 }, version: 2 });
    // Rescheduled from now: the next occurrence is within five minutes.
    expect(new Date(first.body.job.nextRunAt).getTime() - Date.now()).toBeLessThanOrEqual(300_000);

    // A second editor still holding version 1 is refused, and nothing changes.
    const stale = await patch(jobId, { name: 'overwritten' }, '"1"');
    expect(stale.status).toBe(412);
    expect(stale.body.error).toMatchObject({ code: 'version_mismatch', field: 'If-Match', details: { version: 2 } });
    expect((await api.getJob(jobId)).body.name).toBe('yearly');

    // gRPC: the same edit, the same guard.
    await expect(client.updateJob(jobId, { name: 'via grpc' }, { expectedVersion: 1 })).rejects.toMatchObject({ code: 'aborted' });
    const viaGrpc = await client.updateJob(jobId, { name: 'via grpc', retry: { initialIntervalMs: 10 } }, { expectedVersion: 2 });
    expect(viaGrpc).toMatchObject({ appliesFrom: 'now', job: { name: 'via grpc', version: 3, retry: { initialIntervalMs: 10 } } });
    // Unconditional edits are allowed; the version still grows.
    expect((await patch(jobId, { name: null })).body.job).toMatchObject({ name: null, version: 4 });
  });

  it.each([
    [{}, 'body'],
    [{ task: 'http' }, 'task'],
    [{ idempotencyKey: 'k' }, 'idempotencyKey'],
    [{ schedule: '* * *' }, 'schedule'],
    [{ timezone: 'Nowhere/City' }, 'timezone'],
    [{ runAt: '2030-01-01T00:00:00Z', schedule: '* * * * *' }, 'schedule'],
    [{ maxAttempts: 0 }, 'maxAttempts'],
    [{ retry: { jitter: -1 } }, 'retry.jitter'],
    [{ colour: 'blue' }, 'colour'],
  ])('refuses %j naming %s, changing nothing', async (body, field) => {
    const created = await api.createJob({ task: 'sleep', schedule: '0 * * * *', payload: { seconds: 0 } });
    const before = (await api.getJob(created.body.jobId)).body;
    const answer = await patch(created.body.jobId, body);
    expect(answer.status).toBe(400);
    expect(answer.body.error.field).toBe(field);
    expect((await api.getJob(created.body.jobId)).body).toEqual(before);
  });

  it('refuses a malformed If-Match naming it, and answers 404 for an unknown job', async () => {
    const created = await api.createJob({ task: 'sleep', runAt: new Date(Date.now() + 60_000).toISOString(), payload: { seconds: 0 } });
    expect((await patch(created.body.jobId, { name: 'x' }, 'yesterday')).body.error.field).toBe('If-Match');
    expect((await patch('0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d', { name: 'x' })).status).toBe(404);
  });

  it('a job edited while it runs finishes as claimed; its next run uses the edit; history stays on one id', async () => {
    await startAgentProcess({ coordinator: grpcAddress, agentId: 'worker', tasks: 'sleep' });
    const created = await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 1.5 } });
    const jobId = created.body.jobId;
    const running = await waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        // Started: claimed and past its due instant (before it, the job is pre-dispatched, and an edit applies now).
        return job.state === 'CLAIMED' && Date.parse(job.nextRunAt) < Date.now() - 100 ? job : undefined;
      },
      { description: 'the first run' },
    );
    const edited = await patch(jobId, { payload: { seconds: 0 }, name: 'quick now' });
    expect(edited.body.appliesFrom).toBe('next-claim');
    expect(edited.body.job).toMatchObject({ state: 'CLAIMED', leaseGeneration: running.leaseGeneration });
    // A running job's runAt cannot change.
    expect((await patch(jobId, { runAt: new Date().toISOString() })).body.error).toMatchObject({ code: 'failed_precondition', field: 'runAt' });
    const runs = await waitFor(
      async () => {
        const list = (await api.runs(jobId)).body.runs.filter((r: { outcome: string }) => r.outcome === 'SUCCEEDED');
        return list.length >= 2 ? list : undefined;
      },
      { timeoutMs: 20_000, description: 'two successful runs' },
    );
    const duration = (r: { startedAt: string; finishedAt: string }) => new Date(r.finishedAt).getTime() - new Date(r.startedAt).getTime();
    // The first ran the old payload (1.5 s); the next the edited one (0 s).
    expect(duration(runs[0])).toBeGreaterThanOrEqual(1_400);
    expect(duration(runs[1])).toBeLessThan(1_400);
    expect(runs.every((r: { jobId: string }) => r.jobId === jobId)).toBe(true);
    await api.control(jobId, 'pause');
  }, 40_000);
});
