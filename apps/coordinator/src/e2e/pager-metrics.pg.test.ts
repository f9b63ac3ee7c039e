/**
 * The metrics a pager needs, each seen to move when its event happens, with
 * real processes: runs by outcome (a success, a failure, a lease that expired
 * under a SIGSTOPped agent), jobs gone DEAD, occurrences recorded SKIPPED, the
 * age of the oldest overdue job, overdue jobs per task, and agents per task
 * and state — a task with overdue jobs and no agent shows `ready` 0.
 */
import {
  createTestDatabase,
  metricValue,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type ManagedProcess,
  type TestDatabase,
} from '@kairos/testing';

describe('pager metrics', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let frozen: ManagedProcess;

  beforeAll(async () => {
    db = await createTestDatabase();
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, env: { KAIROS_MISFIRE_THRESHOLD_MS: '300', KAIROS_PRESENCE_INTERVAL_MS: '500' } });
    api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'pager', tasks: 'sleep,http' });
    frozen = await startAgentProcess({
      coordinator: coordinator.grpcAddress,
      agentId: 'frozen',
      tasks: 'exec',
      env: { KAIROS_EXEC_ALLOW: '/bin/sleep' },
    });
    await waitFor(async () => ((await api.agents()).body as unknown[]).length === 2, { timeoutMs: 15_000, description: 'two agents' });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  /** The sum of a metric's samples carrying `labels`, from the coordinator's /metrics (0 when absent). */
  const metric = (name: string, labels: Record<string, string> = {}) => metricValue(coordinator.httpUrl, name, labels);
  const stateOf = async (jobId: string) => (await api.getJob(jobId)).body.state as string;

  test('a success counts SUCCEEDED', async () => {
    const before = await metric('kairos_runs_finished_total', { outcome: 'SUCCEEDED' });
    const { jobId } = (await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } })).body;
    await waitFor(async () => (await stateOf(jobId)) === 'COMPLETED', { timeoutMs: 30_000, description: 'COMPLETED' });
    expect(await metric('kairos_runs_finished_total', { outcome: 'SUCCEEDED' })).toBe(before + 1);
  });

  test('a failure that exhausts its attempts counts FAILED and a DEAD job', async () => {
    const failed = await metric('kairos_runs_finished_total', { outcome: 'FAILED' });
    const dead = await metric('kairos_jobs_dead_total');
    const { jobId } = (
      await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: 'http://127.0.0.1:9/', method: 'GET' }, maxAttempts: 1 })
    ).body;
    await waitFor(async () => (await stateOf(jobId)) === 'DEAD', { timeoutMs: 30_000, description: 'DEAD' });
    expect(await metric('kairos_runs_finished_total', { outcome: 'FAILED' })).toBe(failed + 1);
    expect(await metric('kairos_jobs_dead_total')).toBe(dead + 1);
  });

  test('a lease that expires under a stopped agent counts LEASE_EXPIRED (and DEAD at its last attempt)', async () => {
    const expired = await metric('kairos_runs_finished_total', { outcome: 'LEASE_EXPIRED' });
    const dead = await metric('kairos_jobs_dead_total');
    const { jobId } = (await api.createJob({ task: 'exec', runAt: new Date().toISOString(), payload: { argv: ['/bin/sleep', '30'] }, maxAttempts: 1 })).body;
    await waitFor(async () => (await stateOf(jobId)) === 'CLAIMED', { timeoutMs: 30_000, description: 'CLAIMED' });
    frozen.signal('SIGSTOP');
    try {
      await waitFor(async () => (await stateOf(jobId)) === 'DEAD', { timeoutMs: 30_000, description: 'DEAD by lease expiry' });
    } finally {
      frozen.signal('SIGCONT');
    }
    expect(await metric('kairos_runs_finished_total', { outcome: 'LEASE_EXPIRED' })).toBe(expired + 1);
    expect(await metric('kairos_jobs_dead_total')).toBe(dead + 1);
  });

  test('missed occurrences count as they are recorded SKIPPED', async () => {
    const before = await metric('kairos_occurrences_skipped_total');
    // Every second, for a task no agent runs, skipping what it misses.
    const { jobId } = (await api.createJob({ task: 'nobody', schedule: '* * * * * *', misfirePolicy: 'skip' })).body;
    await waitFor(async () => (await metric('kairos_occurrences_skipped_total')) >= before + 2, { timeoutMs: 30_000, description: 'two skips' });
    expect((await api.control(jobId, 'pause')).status).toBe(200);
    const skippedRows = async () => (await db.pool.query(`SELECT count(*)::int AS n FROM runs WHERE job_id = $1 AND outcome = 'SKIPPED'`, [jobId])).rows[0].n as number;
    // Once paused, nothing more is skipped: the counter and the rows agree exactly.
    await waitFor(async () => (await metric('kairos_occurrences_skipped_total')) - before === (await skippedRows()), {
      timeoutMs: 15_000,
      description: 'the counter equal to the SKIPPED rows',
    });
  });

  test('overdue work: the oldest overdue job, overdue jobs per task, and a task with no agent', async () => {
    const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
    await api.createJob({ task: 'orphan', runAt: twoMinutesAgo });
    await api.createJob({ task: 'orphan', runAt: twoMinutesAgo });
    // The cluster-wide gauges are read at most once a second: the next scrape after that shows them.
    await waitFor(async () => (await metric('kairos_task_overdue_jobs', { namespace: 'default', task: 'orphan' })) === 2, {
      timeoutMs: 10_000,
      description: 'two overdue orphan jobs',
    });
    expect(await metric('kairos_oldest_overdue_job_seconds')).toBeGreaterThanOrEqual(119);
    expect(await metric('kairos_task_agents', { namespace: 'default', task: 'orphan', state: 'ready' })).toBe(0);
    expect(await metric('kairos_task_agents', { namespace: 'default', task: 'sleep', state: 'ready' })).toBe(1);
    expect(await metric('kairos_task_agents', { namespace: 'default', task: 'exec', state: 'ready' })).toBe(1);
  });
});
