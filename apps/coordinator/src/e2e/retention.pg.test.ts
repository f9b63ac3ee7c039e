/**
 * Retention with a real coordinator and agent: with short retentions, a
 * finished one-off job disappears with its runs, a recurring job loses only
 * its old runs, and the deletions are counted.
 */
import { createTestDatabase, metricValue, restClient, startAgentProcess, startCoordinatorProcess, stopAll, waitFor, type TestDatabase } from '@kairos/testing';

describe('retention, end to end', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  it('deletes finished jobs and old runs in the background, and counts them', async () => {
    const coordinator = await startCoordinatorProcess({
      databaseUrl: db.url,
      env: { KAIROS_RUN_RETENTION_MS: '3000', KAIROS_JOB_RETENTION_MS: '2000', KAIROS_RETENTION_INTERVAL_MS: '200' },
    });
    const api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'worker' });
    const oneOff = (await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } })).body.jobId;
    const recurring = (await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 0 } })).body.jobId;
    const dead = (await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: 'http://not-on-the-allow-list.invalid/' }, maxAttempts: 1 })).body.jobId;

    await waitFor(async () => (await api.getJob(oneOff)).body.state === 'COMPLETED', { description: 'the one-off job done' });
    // Two seconds after it finished, it is gone, runs and all.
    await waitFor(async () => (await api.getJob(oneOff)).status === 404, { timeoutMs: 15_000, description: 'the finished job deleted' });
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM runs WHERE job_id = $1', [oneOff]);
    expect(rows[0].n).toBe(0);
    // The recurring job stays; its runs older than three seconds go, its first one among them.
    const first = await waitFor(
      async () => (await api.runs(recurring)).body.runs.find((r: { finishedAt: string | null }) => r.finishedAt !== null),
      { description: 'a finished run of the recurring job' },
    );
    await waitFor(
      async () => {
        const runs = (await api.runs(recurring)).body.runs;
        return (
          runs.length > 0 &&
          !runs.some((r: { runId: string }) => r.runId === first.runId) &&
          runs.every((r: { finishedAt: string | null }) => r.finishedAt === null || Date.now() - Date.parse(r.finishedAt) < 6_000)
        );
      },
      { timeoutMs: 15_000, description: 'the first run of the recurring job deleted, only recent runs left' },
    );
    const { rows: oldest } = await db.pool.query('SELECT min(finished_at) AS at FROM runs WHERE job_id = $1', [recurring]);
    expect(Date.now() - (oldest[0].at as Date).getTime()).toBeLessThan(6_000);
    // A DEAD job is kept for a human to look at.
    expect((await api.getJob(dead)).body.state).toBe('DEAD');
    expect(await metricValue(coordinator.httpUrl, 'kairos_retention_deleted_total', { table: 'jobs' })).toBeGreaterThanOrEqual(1);
    expect(await metricValue(coordinator.httpUrl, 'kairos_retention_deleted_total', { table: 'runs' })).toBeGreaterThanOrEqual(1);
    await api.control(recurring, 'pause');
  }, 60_000);
});
