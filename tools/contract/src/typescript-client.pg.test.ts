/**
 * The TypeScript client (libs/client) runs the scenario list the Python and
 * Go clients run (clients.pg.test.ts), against a real coordinator with tokens
 * on and a real agent.
 */
import { randomUUID } from 'node:crypto';
import { createKairosClient, KairosError, type KairosClient } from '@kairos/client';
import { createTestDatabase, startAgentProcess, startCoordinatorProcess, stopAll, waitFor, type TestDatabase } from '@kairos/testing';

const NAMESPACE = 'clients';

async function failure(call: Promise<unknown>): Promise<KairosError> {
  try {
    await call;
  } catch (error: unknown) {
    if (error instanceof KairosError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

describe('TypeScript client against a live coordinator', () => {
  let db: TestDatabase;
  let kairos: KairosClient;
  let other: KairosClient;
  let anonymous: KairosClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    const token = async (namespace: string, role: 'writer' | 'agent') => (await store.tokens.create({ namespace, role })).secret;
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'ts-agent', tasks: 'sleep', env: { KAIROS_TOKEN: await token(NAMESPACE, 'agent') } });
    kairos = createKairosClient({ address: coordinator.grpcAddress, token: await token(NAMESPACE, 'writer') });
    other = createKairosClient({ address: coordinator.grpcAddress, token: await token('elsewhere', 'writer') });
    anonymous = createKairosClient({ address: coordinator.grpcAddress });
  }, 60_000);

  afterAll(async () => {
    for (const client of [kairos, other, anonymous]) client?.close();
    await stopAll();
    await db?.drop();
  });

  const stateOf = async (jobId: string) => (await kairos.getJob(jobId)).state;

  test('a one-off job runs once', async () => {
    const { jobId } = await kairos.createJob({ task: 'sleep', runAt: new Date(), payload: { seconds: 0 } });
    await waitFor(async () => (await stateOf(jobId)) === 'COMPLETED', { timeoutMs: 60_000, description: 'COMPLETED' });
    expect((await kairos.listRuns(jobId)).runs.map((run) => run.outcome)).toEqual(['SUCCEEDED']);
  });

  test('a recurring job every 2 s gives distinct occurrences', async () => {
    const { jobId } = await kairos.createJob({ task: 'sleep', schedule: '*/2 * * * * *', payload: { seconds: 0 } });
    const succeeded = async () => (await kairos.listRuns(jobId)).runs.filter((run) => run.outcome === 'SUCCEEDED');
    await waitFor(async () => (await succeeded()).length >= 2, { timeoutMs: 60_000, description: 'two occurrences' });
    const times = (await succeeded()).map((run) => run.scheduledFor?.getTime() ?? 0);
    expect(new Set(times).size).toBe(times.length);
    expect(times.every((t) => (t / 1000) % 2 === 0)).toBe(true);
    await kairos.cancelJob(jobId).catch(async (error: unknown) => {
      if (!(error instanceof KairosError) || error.reason !== 'JOB_CLAIMED') throw error;
      await kairos.abortRun(jobId, { stopSchedule: true });
    });
  });

  test('cancel before due succeeds', async () => {
    const { jobId } = await kairos.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000), payload: { seconds: 0 } });
    await kairos.cancelJob(jobId);
    expect(await stateOf(jobId)).toBe('CANCELLED');
  });

  test('cancel of a running job raises the claimed error with its run, agent and fencing token', async () => {
    const { jobId } = await kairos.createJob({ task: 'sleep', runAt: new Date(), payload: { seconds: 30 } });
    await waitFor(async () => (await stateOf(jobId)) === 'CLAIMED', { timeoutMs: 60_000, description: 'CLAIMED' });
    const job = await kairos.getJob(jobId);
    const error = await failure(kairos.cancelJob(jobId));
    expect(error.reason).toBe('JOB_CLAIMED');
    expect(error.claimed).toMatchObject({ agentId: 'ts-agent', leaseGeneration: job.leaseGeneration });
    const aborted = await kairos.abortRun(jobId);
    expect(aborted.runId).toBe(error.claimed?.runId);
    await waitFor(async () => (await stateOf(jobId)) === 'CANCELLED', { timeoutMs: 60_000, description: 'CANCELLED' });
  });

  test('an unknown id is not-found', async () => {
    expect((await failure(kairos.getJob(randomUUID()))).reason).toBe('JOB_NOT_FOUND');
  });

  test('invalid input names the field', async () => {
    expect((await failure(kairos.createJob({ task: 'sleep', runAt: new Date(), payload: { seconds: 0 }, maxAttempts: 1000 }))).field).toBe('maxAttempts');
    expect((await failure(kairos.createJob({ task: 'sleep', runAt: new Date() }))).field).toBe('payload.seconds');
    expect((await failure(kairos.createJob({ task: 'sleep', schedule: 'not cron', payload: { seconds: 0 } }))).field).toBe('schedule');
  });

  test('an idempotency key returns the first job, and refuses a different request', async () => {
    const idempotencyKey = `ts-${randomUUID()}`;
    const runAt = new Date(Date.now() + 3_600_000);
    const first = await kairos.createJob({ task: 'sleep', runAt, payload: { seconds: 0 }, idempotencyKey });
    const again = await kairos.createJob({ task: 'sleep', runAt, payload: { seconds: 0 }, idempotencyKey });
    expect([first.created, again.created, again.jobId]).toEqual([true, false, first.jobId]);
    expect((await failure(kairos.createJob({ task: 'sleep', runAt, payload: { seconds: 1 }, idempotencyKey }))).reason).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  test('a batch create answers each job: one runs, an invalid one names its field, a keyed repeat answers the first', async () => {
    const key = `ts-batch-${randomUUID()}`;
    const later = new Date(Date.now() + 3_600_000);
    const results = await kairos.createJobs([
      { task: 'sleep', runAt: new Date(), payload: { seconds: 0 } },
      { task: 'sleep', schedule: 'not cron', payload: { seconds: 0 } },
      { task: 'sleep', runAt: later, payload: { seconds: 0 }, idempotencyKey: key },
      { task: 'sleep', runAt: later, payload: { seconds: 0 }, idempotencyKey: key },
    ]);
    expect(results.map((r) => [r.created, r.error === null])).toEqual([
      [true, true],
      [false, false],
      [true, true],
      [false, true],
    ]);
    expect(results[1]!.error).toMatchObject({ code: 'invalid-argument', field: 'schedule' });
    expect(results[3]!.jobId).toBe(results[2]!.jobId);
    const jobId = results[0]!.jobId!;
    await waitFor(async () => (await kairos.getJob(jobId)).state === 'COMPLETED', { timeoutMs: 60_000 });
    expect((await kairos.listRuns(jobId)).runs.map((run) => run.outcome)).toEqual(['SUCCEEDED']);
    await kairos.cancelJob(results[2]!.jobId!);
  });

  test('paging through 250 jobs', async () => {
    const task = `page-${randomUUID().slice(0, 8)}`;
    const runAt = new Date(Date.now() + 86_400_000);
    const created = new Set<string>();
    for (let i = 0; i < 250; i++) created.add((await kairos.createJob({ task, runAt })).jobId);
    const listed: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await kairos.listJobs({ task, limit: 100, ...(cursor ? { cursor } : {}) });
      listed.push(...page.jobs.map((job) => job.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(new Set(listed)).toEqual(created);
    expect((await failure(kairos.listJobs({ task, cursor: 'not-a-cursor' }))).field).toBe('cursor');
  });

  test('a missing token is unauthenticated', async () => {
    expect((await failure(anonymous.getJob(randomUUID()))).reason).toBe('UNAUTHENTICATED');
  });

  test('another namespace cannot see or cancel the job', async () => {
    const { jobId } = await kairos.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000), payload: { seconds: 0 } });
    expect((await failure(other.getJob(jobId))).reason).toBe('JOB_NOT_FOUND');
    expect((await failure(other.cancelJob(jobId))).reason).toBe('JOB_NOT_FOUND');
    expect(await stateOf(jobId)).toBe('DUE');
  });
});
