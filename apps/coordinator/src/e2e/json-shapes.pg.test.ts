/**
 * One JSON shape per resource: what REST answers for a job, a page of runs or
 * an agent is exactly what libs/client's jobJson/runJson/agentJson make of the
 * gRPC answer for the same thing — which is what the CLI's --json prints. Jobs
 * of every kind are compared field by field: one-off, recurring with every
 * policy set, paused, claimed (lease owner, occurrence), backfilling, failed.
 */
import { agentJson, createKairosClient, jobJson, runJson, type KairosClient } from '@kairos/client';
import { createTestDatabase, restClient, startAgentProcess, startCoordinatorProcess, stopAll, waitFor, type TestDatabase } from '@kairos/testing';

describe('REST JSON and the client-derived JSON (CLI --json) are one shape', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    client = createKairosClient({ address: coordinator.grpcAddress });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'shapes', tasks: 'sleep,http' });
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  async function expectSameJob(jobId: string) {
    const rest = await api.getJob(jobId);
    expect(rest.status).toBe(200);
    expect(jobJson(await client.getJob(jobId))).toEqual(rest.body);
    const runs = await api.runs(jobId);
    expect({ runs: (await client.listRuns(jobId)).runs.map(runJson), nextCursor: null }).toEqual(runs.body);
    return rest.body;
  }

  const create = async (body: Record<string, unknown>) => {
    const created = await api.createJob(body);
    expect(created.status).toBe(201);
    expect(created.body.created).toBe(true);
    return created.body.jobId as string;
  };

  test('a one-off job, before it runs and after', async () => {
    const later = await create({ task: 'sleep', runAt: '2030-01-01T09:00:00Z', payload: { seconds: 0 }, name: 'later', idempotencyKey: 'shape-1', timeoutSeconds: 30 });
    expect(await expectSameJob(later)).toMatchObject({ timeoutSeconds: 30, name: 'later', leaseOwner: null, runAt: '2030-01-01T09:00:00.000Z' });
    const now = await create({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } });
    await waitFor(async () => (await api.getJob(now)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'COMPLETED' });
    expect(await expectSameJob(now)).toMatchObject({ timeoutSeconds: null, name: null, nextRunAt: null });
  });

  test('a recurring job with every policy set, then paused', async () => {
    const jobId = await create({
      task: 'sleep',
      schedule: '0 9 * * 1-5',
      timezone: 'Europe/Berlin',
      payload: { seconds: 1 },
      retry: { initialIntervalMs: 500, maxIntervalMs: 60_000, multiplier: 3, jitter: 0.25 },
      jitterMs: 1000,
      pauseOnFailure: true,
      overlapPolicy: 'buffer-one',
      misfirePolicy: 'catch-up',
      catchupWindowMs: 3_600_000,
      maxAttempts: 5,
    });
    expect(await expectSameJob(jobId)).toMatchObject({ overlapPolicy: 'buffer-one', misfirePolicy: 'catch-up', catchupWindowMs: 3_600_000 });
    expect((await api.control(jobId, 'pause')).status).toBe(200);
    expect(await expectSameJob(jobId)).toMatchObject({ state: 'PAUSED' });
  });

  test('a claimed job: its lease owner and occurrence', async () => {
    const jobId = await create({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 30 } });
    await waitFor(async () => (await api.getJob(jobId)).body.state === 'CLAIMED', { timeoutMs: 30_000, description: 'CLAIMED' });
    expect(await expectSameJob(jobId)).toMatchObject({ leaseOwner: 'shapes', occurrenceAt: expect.any(String) });
    expect((await api.call('POST', `/jobs/${jobId}/abort`)).status).toBe(202);
    await waitFor(async () => (await api.getJob(jobId)).body.state === 'CANCELLED', { timeoutMs: 30_000, description: 'CANCELLED' });
    expect(await expectSameJob(jobId)).toMatchObject({ abort: null });
  });

  test('a failed run and a backfill in progress', async () => {
    const failing = await create({ task: 'http', runAt: new Date().toISOString(), payload: { url: 'http://127.0.0.1:9/', method: 'GET' }, maxAttempts: 1 });
    await waitFor(async () => (await api.getJob(failing)).body.state === 'DEAD', { timeoutMs: 30_000, description: 'DEAD' });
    const dead = await expectSameJob(failing);
    expect(dead.state).toBe('DEAD');
    // No agent serves `nobody`: the backfill stays in progress while we look.
    const backfilling = await create({ task: 'nobody', schedule: '0 * * * *' });
    const from = new Date(Date.now() - 5 * 3_600_000).toISOString();
    expect((await api.call('POST', `/jobs/${backfilling}/backfill`, { from, to: new Date().toISOString() })).status).toBe(202);
    expect(await expectSameJob(backfilling)).toMatchObject({ backfill: { resumeAt: expect.any(String) } });
  });

  test('an agent', async () => {
    const rest = await api.agents();
    const listed = (await client.listAgents()).map(agentJson);
    const volatile = (agent: object) => {
      const { lastHeartbeatAt: _heartbeat, inFlight: _inFlight, ...stable } = agent as Record<string, unknown>;
      return stable;
    };
    expect(rest.body).toHaveLength(1);
    expect(listed.map(volatile)).toEqual(rest.body.map(volatile));
  });
});
